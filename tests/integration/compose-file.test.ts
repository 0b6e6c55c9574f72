/**
 * docker-compose.yml as Debian's docker-compose reads it (`config` validates the file and resolves its
 * variables): the services Temporal's compose examples have, and a controller built from our Dockerfile with a
 * kubeconfig from the host. The search attributes it registers are the ones the workflows upsert.
 * (The e2e tier starts the controller service from it.)
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { searchAttributeKeys } from '../../workflows/search-attributes.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

interface Service {
  image?: string;
  build?: { context: string };
  command?: string[] | string;
  environment?: Record<string, string>;
  volumes?: string[];
  network_mode?: string;
}

const config = (env: Record<string, string>) =>
  parse(
    execFileSync('docker-compose', ['-f', 'docker-compose.yml', 'config'], {
      cwd: root,
      encoding: 'utf8',
      env: { PATH: process.env.PATH!, HOME: process.env.HOME!, ...env },
    }),
  ) as { services: Record<string, Service> };

test("it validates, with Temporal on PostgreSQL, the Web UI, and the controller built here with the host's kubeconfig", () => {
  const { services } = config({ KUBECONFIG: '/tmp/some/kubeconfig' });
  expect(Object.keys(services).sort()).toEqual([
    'controller',
    'postgresql',
    'temporal',
    'temporal-schema',
    'temporal-setup',
    'temporal-ui',
  ]);
  expect(services.temporal!.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgresql' });
  const controller = services.controller!;
  expect(controller.build?.context).toBe(root.replace(/\/$/, ''));
  expect(controller.network_mode).toBe('host');
  expect(controller.volumes).toContainEqual(
    expect.stringMatching(/^\/tmp\/some\/kubeconfig:\/etc\/glidepath\/kubeconfig:ro$/),
  );
  expect(controller.environment).toMatchObject({
    KUBECONFIG: '/etc/glidepath/kubeconfig',
    TEMPORAL_ADDRESS: 'localhost:7233',
  });
});

test('the controller takes the Temporal address from the environment, as the manual path sets it', () => {
  expect(
    config({ TEMPORAL_ADDRESS: '127.0.0.1:17233', KUBECONFIG: '/k' }).services.controller!.environment!
      .TEMPORAL_ADDRESS,
  ).toBe('127.0.0.1:17233');
});

test('the search attributes it registers are exactly those the rollouts upsert', () => {
  const command = config({ KUBECONFIG: '/k' }).services['temporal-setup']!.command;
  const script = Array.isArray(command) ? command.join('\n') : String(command);
  const names = /for name in ([^;]+);/.exec(script)![1]!.trim().split(/\s+/);
  expect(names.sort()).toEqual(searchAttributeKeys.map((k) => k.name).sort());
});
