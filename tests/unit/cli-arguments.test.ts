/**
 * The CLI's command line: what each command line asks for, what is a usage error, and where the CLI connects
 * (kubeconfig and Temporal envconfig conventions), without connecting anywhere.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeSettings, parseResourceRef, parseWorkflowId, temporalSettings } from '../../cli/config.js';
import { CliError, ExitCode } from '../../cli/exit-codes.js';
import { parseInvocation } from '../../cli/program.js';
import { programName } from '../../cli/main.js';

const defaults = { allNamespaces: false, output: 'table', color: true };

/** The usage error a command line gives (its exit code must be 2). */
async function usageError(argv: string[]): Promise<string> {
  const err = await parseInvocation(argv).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CliError);
  expect((err as CliError).exitCode).toBe(ExitCode.Usage);
  return (err as CliError).message;
}

describe('parseInvocation', () => {
  test('status: one resource or none, --watch with its interval, global flags before or after the command', async () => {
    expect(await parseInvocation(['status', 'prod/orders'])).toEqual({
      command: 'status',
      resource: 'prod/orders',
      watch: false,
      intervalMs: 1000,
      globals: defaults,
    });
    expect(await parseInvocation(['-n', 'prod', 'status', '-w', '--interval', '2s'])).toEqual({
      command: 'status',
      watch: true,
      intervalMs: 2000,
      globals: { ...defaults, namespace: 'prod' },
    });
    expect(await parseInvocation(['status', '-A', '-o', 'yaml', '--no-color'])).toMatchObject({
      globals: { allNamespaces: true, output: 'yaml', color: false },
    });
  });

  test('controls: the rest of the line is the reason; promote --full and rollback --to anywhere on it', async () => {
    expect(await parseInvocation(['promote', 'prod/orders', '--full', 'looks', 'good'])).toEqual({
      command: 'promote',
      resource: 'prod/orders',
      reason: 'looks good',
      full: true,
      globals: defaults,
    });
    expect(await parseInvocation(['rollback', 'prod/orders', 'p99', 'doubled', '--to', 'v1-abc'])).toEqual({
      command: 'rollback',
      resource: 'prod/orders',
      reason: 'p99 doubled',
      to: 'v1-abc',
      globals: defaults,
    });
    expect(await parseInvocation(['pause', 'orders', '-n', 'prod'])).toEqual({
      command: 'pause',
      resource: 'orders',
      globals: { ...defaults, namespace: 'prod' },
    });
    for (const control of ['resume', 'abort', 'retry'] as const) {
      expect(await parseInvocation([control, 'a/b', 'why'])).toEqual({
        command: control,
        resource: 'a/b',
        reason: 'why',
        globals: defaults,
      });
    }
  });

  test('history and list; the Temporal flags', async () => {
    expect(await parseInvocation(['history', 'a/b', '-o', 'json'])).toEqual({
      command: 'history',
      resource: 'a/b',
      globals: { ...defaults, output: 'json' },
    });
    expect(
      await parseInvocation([
        'list',
        '--temporal-address',
        'h:7233',
        '--temporal-namespace',
        'ops',
        '--temporal-profile',
        'prod',
        '--temporal-config-file',
        '/x.toml',
      ]),
    ).toEqual({
      command: 'list',
      globals: {
        ...defaults,
        temporalAddress: 'h:7233',
        temporalNamespace: 'ops',
        temporalProfile: 'prod',
        temporalConfigFile: '/x.toml',
      },
    });
  });

  test('--help of every command is its help, with the exit codes; no command at all is the overview', async () => {
    for (const command of ['status', 'list', 'history', 'pause', 'resume', 'promote', 'abort', 'rollback', 'retry']) {
      const help = await parseInvocation([command, '--help'], 'kubectl glidepath');
      expect(help.command).toBe('help');
      const text = (help as { text: string }).text;
      expect(text).toContain(`Usage: kubectl glidepath ${command}`);
      expect(text).toMatch(/Exit codes:\n {2}0 {2}ok\n {2}1 {2}refused or failed/);
      expect(text).toContain('3  not found');
    }
    expect(await parseInvocation(['help', 'promote'])).toMatchObject({
      command: 'help',
      text: expect.stringContaining('--full'),
    });
    const overview = await parseInvocation([]);
    expect((overview as { text: string }).text).toMatch(/Commands:[\s\S]*status[\s\S]*rollback/);
  });

  test('usage errors: exit code 2 with what is wrong', async () => {
    expect(await usageError(['frob'])).toMatch(/unknown command 'frob'/);
    expect(await usageError(['status', '--bogus'])).toMatch(/unknown option '--bogus'/);
    expect(await usageError(['pause'])).toMatch(/missing required argument 'resource'/);
    expect(await usageError(['status', '-o', 'xml'])).toMatch(/argument 'xml' is invalid/);
    expect(await usageError(['status', '-w', '--interval', 'soon'])).toMatch(/is not a duration/);
    expect(await usageError(['rollback', 'a/b', '--to'])).toMatch(/argument missing/);
    expect(await usageError(['status', '--bogus'])).toContain('(see glidepath --help)');
  });
});

describe('parseResourceRef / parseWorkflowId', () => {
  test('NAMESPACE/NAME, or NAME in the default namespace', () => {
    expect(parseResourceRef('prod/orders', 'default')).toEqual({ namespace: 'prod', name: 'orders' });
    expect(parseResourceRef('orders', 'team-a')).toEqual({ namespace: 'team-a', name: 'orders' });
  });

  test('anything else is a usage error', () => {
    for (const bad of ['', 'a/b/c', 'Prod/orders', 'prod/', '/orders', 'prod/orders_1', `${'a'.repeat(64)}`]) {
      expect(() => parseResourceRef(bad, 'default')).toThrow(expect.objectContaining({ exitCode: ExitCode.Usage }));
    }
  });

  test('workflow IDs of rollouts, and only those', () => {
    expect(parseWorkflowId('glidepath/1a2b3c4d/prod/orders')).toEqual({
      installation: '1a2b3c4d',
      namespace: 'prod',
      name: 'orders',
    });
    expect(parseWorkflowId('prod-orders-gate')).toBeUndefined();
    expect(parseWorkflowId('glidepath/prod/orders')).toBeUndefined();
    expect(parseWorkflowId('glidepath/i/prod/orders/x')).toBeUndefined();
  });
});

describe('programName', () => {
  test('kubectl glidepath when run as the kubectl plugin', () => {
    expect(programName('/usr/local/bin/kubectl-glidepath')).toBe('kubectl glidepath');
    expect(programName('/repo/cli/main.ts')).toBe('glidepath');
    expect(programName(undefined)).toBe('glidepath');
  });
});

describe('temporalSettings: envconfig profiles, then TEMPORAL_* variables, then the flags', () => {
  const dir = mkdtempSync(join(tmpdir(), 'glidepath-cli-'));
  const file = join(dir, 'temporal.toml');
  writeFileSync(
    file,
    [
      '[profile.default]',
      'address = "localhost:7233"',
      'namespace = "dev"',
      '[profile.cloud]',
      'address = "ops.a1b2c.tmprl.cloud:7233"',
      'namespace = "ops.a1b2c"',
      'api_key = "secret-key"',
      '[profile.mtls]',
      'address = "temporal.internal:7233"',
      '[profile.mtls.tls]',
      'server_name = "temporal.internal"',
      `server_ca_cert_data = "CA"`,
      `client_cert_data = "CERT"`,
      `client_key_data = "KEY"`,
    ].join('\n'),
  );

  test("nothing configured: localhost:7233, the controller's namespace glidepath", () => {
    const s = temporalSettings({}, { TEMPORAL_CONFIG_FILE: join(dir, 'missing.toml') });
    expect(s.connection).toEqual({ address: 'localhost:7233' });
    expect(s.namespace).toBe('glidepath');
  });

  test('the default profile of TEMPORAL_CONFIG_FILE; TEMPORAL_PROFILE picks another; an API key turns TLS on', () => {
    expect(temporalSettings({}, { TEMPORAL_CONFIG_FILE: file })).toMatchObject({
      connection: { address: 'localhost:7233' },
      namespace: 'dev',
    });
    const cloud = temporalSettings({}, { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud' });
    expect(cloud.connection).toEqual({ address: 'ops.a1b2c.tmprl.cloud:7233', apiKey: 'secret-key', tls: true });
    expect(cloud.namespace).toBe('ops.a1b2c');
    expect(cloud.describe).toBe('ops.a1b2c.tmprl.cloud:7233, namespace ops.a1b2c (profile cloud)');
  });

  test('mTLS from the profile: certificates, key, CA and server name', () => {
    const s = temporalSettings({ temporalProfile: 'mtls', temporalConfigFile: file }, {});
    const tls = s.connection.tls as {
      serverNameOverride?: string;
      serverRootCACertificate?: Uint8Array;
      clientCertPair?: { crt: Uint8Array; key: Uint8Array };
    };
    const text = (bytes: Uint8Array | undefined) => Buffer.from(bytes ?? []).toString();
    expect(tls.serverNameOverride).toBe('temporal.internal');
    expect(text(tls.serverRootCACertificate)).toBe('CA');
    expect(text(tls.clientCertPair?.crt)).toBe('CERT');
    expect(text(tls.clientCertPair?.key)).toBe('KEY');
  });

  test('TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE / TEMPORAL_API_KEY override the profile; the flags override them', () => {
    const env = {
      TEMPORAL_CONFIG_FILE: file,
      TEMPORAL_PROFILE: 'cloud',
      TEMPORAL_ADDRESS: 'other:7233',
      TEMPORAL_NAMESPACE: 'ns2',
      TEMPORAL_API_KEY: 'k2',
    };
    expect(temporalSettings({}, env)).toMatchObject({
      connection: { address: 'other:7233', apiKey: 'k2', tls: true },
      namespace: 'ns2',
    });
    expect(temporalSettings({ temporalAddress: 'flag:7233', temporalNamespace: 'ns3' }, env)).toMatchObject({
      connection: { address: 'flag:7233' },
      namespace: 'ns3',
    });
  });

  test('TEMPORAL_TLS=false turns TLS off even with an API key', () => {
    expect(
      temporalSettings({}, { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'cloud', TEMPORAL_TLS: 'false' }).connection
        .tls,
    ).toBe(false);
  });

  test('a profile that is not in the file is a usage error', () => {
    expect(() => temporalSettings({ temporalProfile: 'nope' }, { TEMPORAL_CONFIG_FILE: file })).toThrow(
      expect.objectContaining({ exitCode: ExitCode.Usage, message: expect.stringContaining("'nope'") }),
    );
  });
});

describe('kubeSettings: the kubeconfig as kubectl reads it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'glidepath-kube-'));
  const file = join(dir, 'config');
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443' } }],
      users: [{ name: 'u', user: { token: 't' } }],
      contexts: [
        { name: 'dev', context: { cluster: 'c', user: 'u', namespace: 'team-a' } },
        { name: 'bare', context: { cluster: 'c', user: 'u' } },
      ],
      'current-context': 'dev',
    }),
  );

  test('the current context and its namespace; -n wins; --context switches; a context without one means default', () => {
    expect(kubeSettings({ kubeconfig: file })).toMatchObject({ context: 'dev', namespace: 'team-a' });
    expect(kubeSettings({ kubeconfig: file, namespace: 'prod' })).toMatchObject({ context: 'dev', namespace: 'prod' });
    expect(kubeSettings({ kubeconfig: file, context: 'bare' })).toMatchObject({
      context: 'bare',
      namespace: 'default',
    });
  });

  test('$KUBECONFIG when there is no --kubeconfig', () => {
    const saved = process.env.KUBECONFIG;
    process.env.KUBECONFIG = file;
    try {
      expect(kubeSettings({})).toMatchObject({ context: 'dev', namespace: 'team-a' });
    } finally {
      if (saved === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = saved;
    }
  });

  test('an unknown context or an unreadable file is a usage error', () => {
    expect(() => kubeSettings({ kubeconfig: file, context: 'nope' })).toThrow(
      expect.objectContaining({ exitCode: ExitCode.Usage }),
    );
    expect(() => kubeSettings({ kubeconfig: join(dir, 'missing') })).toThrow(
      expect.objectContaining({ exitCode: ExitCode.Usage }),
    );
  });
});
