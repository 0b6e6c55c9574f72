import type { Connection, ConnectionOptions } from '@temporalio/client';
import { PermanentError } from '../../api/errors.js';
import { classifyFailure } from '../../activities/errors.js';
import { TemporalConnections, type TemporalTarget } from '../../temporal/connections.js';
import type { TemporalConnectionSpec } from '../../api/temporal-connection.js';

/** A Connection as far as TemporalConnections uses one: opened with options, closed once. */
interface FakeConnection {
  options: ConnectionOptions;
  closed: boolean;
  close(): Promise<void>;
}

/** Secrets by `namespace/name`, and a record of every connect and every read. */
function world() {
  const secrets = new Map<string, Record<string, string>>();
  const opened: FakeConnection[] = [];
  let reads = 0;
  let failNextConnect = false;
  const connections = new TemporalConnections(
    async (namespace, name) => {
      reads++;
      const data = secrets.get(`${namespace}/${name}`);
      return data && Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v)]));
    },
    {
      closeDelayMs: 20,
      connect: async (options) => {
        if (failNextConnect) {
          failNextConnect = false;
          throw new Error('connect ECONNREFUSED');
        }
        const conn: FakeConnection = {
          options,
          closed: false,
          async close() {
            conn.closed = true;
          },
        };
        opened.push(conn);
        return conn as unknown as Connection;
      },
    },
  );
  return {
    connections,
    secrets,
    opened,
    reads: () => reads,
    failNextConnect: () => (failNextConnect = true),
  };
}

const target = (connection: TemporalConnectionSpec, k8sNamespace = 'shop'): TemporalTarget => ({
  connection,
  k8sNamespace,
  temporalNamespace: 'orders',
  deploymentName: `${k8sNamespace}/orders`,
});
const mtls = target({
  hostPort: 'orders.tmprl.cloud:7233',
  mutualTLSSecretRef: { name: 'temporal-mtls' },
  tls: { serverName: 'orders.example' },
});
const apiKey = target({
  hostPort: 'orders.tmprl.cloud:7233',
  apiKeySecretRef: { name: 'temporal-api', key: 'apiKey' },
});
const plain = target({ hostPort: 'temporal-frontend.temporal:7233' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('TemporalConnections', () => {
  test('the same Secret content reuses the connection (the Secret is read on every get)', async () => {
    const w = world();
    w.secrets.set('shop/temporal-mtls', { 'tls.crt': 'cert-1', 'tls.key': 'key-1' });
    const first = await w.connections.get(mtls);
    const second = await w.connections.get(mtls);
    expect(second).toBe(first);
    expect(w.opened).toHaveLength(1);
    expect(w.reads()).toBe(2);
  });

  test('a rotated mTLS certificate opens a new connection and closes the old one after the delay', async () => {
    const w = world();
    w.secrets.set('shop/temporal-mtls', { 'tls.crt': 'cert-1', 'tls.key': 'key-1' });
    const old = await w.connections.get(mtls);
    w.secrets.set('shop/temporal-mtls', { 'tls.crt': 'cert-2', 'tls.key': 'key-2' });
    const rotated = await w.connections.get(mtls);
    expect(rotated).not.toBe(old);
    expect(w.opened.map((c) => c.options.tls)).toEqual([
      expect.objectContaining({ clientCertPair: { crt: Buffer.from('cert-1'), key: Buffer.from('key-1') } }),
      expect.objectContaining({ clientCertPair: { crt: Buffer.from('cert-2'), key: Buffer.from('key-2') } }),
    ]);
    // Calls in flight on the old connection get time to finish.
    expect(w.opened[0]!.closed).toBe(false);
    await sleep(60);
    expect(w.opened.map((c) => c.closed)).toEqual([true, false]);
    expect(await w.connections.get(mtls)).toBe(rotated);
  });

  test('a rotated API key opens a new connection and closes the old one', async () => {
    const w = world();
    w.secrets.set('shop/temporal-api', { apiKey: 'key-1\n' });
    await w.connections.get(apiKey);
    w.secrets.set('shop/temporal-api', { apiKey: 'key-2\n' });
    await w.connections.get(apiKey);
    expect(w.opened.map((c) => c.options.apiKey)).toEqual(['key-1', 'key-2']);
    await sleep(60);
    expect(w.opened.map((c) => c.closed)).toEqual([true, false]);
  });

  test('a change of another key of the Secret (the CA) counts as a rotation', async () => {
    const w = world();
    w.secrets.set('shop/temporal-mtls', { 'tls.crt': 'cert', 'tls.key': 'key', 'ca.crt': 'ca-1' });
    const old = await w.connections.get(mtls);
    w.secrets.set('shop/temporal-mtls', { 'tls.crt': 'cert', 'tls.key': 'key', 'ca.crt': 'ca-2' });
    expect(await w.connections.get(mtls)).not.toBe(old);
  });

  test('mTLS options carry the certificate pair, the CA and the server name', async () => {
    const w = world();
    w.secrets.set('shop/temporal-mtls', { 'tls.crt': 'cert', 'tls.key': 'key', 'ca.crt': 'ca' });
    await w.connections.get(mtls);
    expect(w.opened[0]!.options).toEqual({
      connectTimeout: '5s',
      address: 'orders.tmprl.cloud:7233',
      tls: {
        serverNameOverride: 'orders.example',
        serverRootCACertificate: Buffer.from('ca'),
        clientCertPair: { crt: Buffer.from('cert'), key: Buffer.from('key') },
      },
    });
  });

  test('a connection without Secrets reads none and is reused', async () => {
    const w = world();
    const first = await w.connections.get(plain);
    expect(await w.connections.get(plain)).toBe(first);
    expect(w.reads()).toBe(0);
    expect(w.opened[0]!.options).toEqual({ connectTimeout: '5s', address: 'temporal-frontend.temporal:7233' });
  });

  test('the same spec in two namespaces gets two connections, and neither supersedes the other', async () => {
    const w = world();
    const a = await w.connections.get(plain);
    const b = await w.connections.get(target(plain.connection, 'billing'));
    expect(b).not.toBe(a);
    await sleep(60);
    expect(w.opened.map((c) => c.closed)).toEqual([false, false]);
  });

  test.each([
    [
      'a missing Secret',
      {} as Record<string, Record<string, string>>,
      'Secret shop/temporal-mtls not found (named by the TemporalConnection)',
    ],
    [
      'a missing key',
      { 'shop/temporal-mtls': { 'tls.crt': 'cert' } },
      'Secret shop/temporal-mtls has no key "tls.key"',
    ],
    [
      'an empty key',
      { 'shop/temporal-mtls': { 'tls.crt': 'cert', 'tls.key': '' } },
      'Secret shop/temporal-mtls has no key "tls.key"',
    ],
  ])('%s is a permanent error and opens nothing', async (_case, secrets, message) => {
    const w = world();
    for (const [name, data] of Object.entries(secrets)) w.secrets.set(name, data);
    const failure = w.connections.get(mtls);
    await expect(failure).rejects.toThrow(new PermanentError(message));
    expect(classifyFailure(await failure.catch((err: unknown) => err))?.kind).toBe('permanent');
    expect(w.opened).toHaveLength(0);
  });

  test('a failed connect is not cached: the next get connects again', async () => {
    const w = world();
    w.failNextConnect();
    await expect(w.connections.get(plain)).rejects.toThrow('ECONNREFUSED');
    await expect(w.connections.get(plain)).resolves.toBeDefined();
    expect(w.opened).toHaveLength(1);
  });

  test('closeAll closes live and superseded connections at once', async () => {
    const w = world();
    w.secrets.set('shop/temporal-api', { apiKey: 'key-1' });
    await w.connections.get(apiKey);
    w.secrets.set('shop/temporal-api', { apiKey: 'key-2' });
    await w.connections.get(apiKey);
    await w.connections.get(plain);
    await w.connections.closeAll();
    expect(w.opened.map((c) => c.closed)).toEqual([true, true, true]);
  });
});
