/**
 * Errors reaching Temporal reach the status: a connection to an address nothing listens on, and a Temporal
 * namespace that does not exist, each show in the resource's status (what is retried, or what is refused, and why)
 * and in a Warning Event within the half minute docs/concepts.md promises ("Every error reaches the status"; here:
 * 90 s, on a busy 2-core machine), and the rollout goes on once the cause is fixed.
 */
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../../api/common.js';
import { asMergePatch } from '../../kube/client.js';
import { freePort } from '../../scripts/servers/processes.js';
import { createTemporalConnection } from '../../scripts/servers/rollout-namespace.js';
import { apply, eventually, resource, startRolloutEnv, twdStatus, type RolloutEnv } from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('temporal-errors');
});
afterAll(async () => {
  await env?.stop();
});

const messageOf = async (name: string) =>
  ((await twdStatus(env, name)) as { message?: string } | undefined)?.message ?? '';
const warnings = async (name: string) =>
  (
    await env.kc
      .makeApiClient(k8s.CoreV1Api)
      .listNamespacedEvent({ namespace: env.namespace, fieldSelector: `involvedObject.name=${name}` })
  ).items
    .filter((e) => e.type === 'Warning')
    .map((e) => `${e.reason}: ${e.message}`);

test('a connection nothing answers: the status and an Event say the call is refused; fixed, the rollout goes on', async () => {
  const closed = await freePort(); // nothing listens there
  await createTemporalConnection(env.custom, env.namespace, `127.0.0.1:${closed}`, 'nowhere');
  const twd = resource(env, 'unreachable', { env: { VERSION: 'v1' } });
  twd.spec.workerOptions.connectionRef = { name: 'nowhere' };
  await apply(env, twd);

  const message = await eventually(
    'the status says what is retried, and why',
    async () => {
      const m = await messageOf('unreachable');
      if (/retrying/.test(m) && /refused|ECONNREFUSED|UNAVAILABLE/i.test(m)) return m;
      throw new Error(`status message: ${m}; Warning Events: ${(await warnings('unreachable')).join(' | ')}`);
    },
    90_000,
    500,
  );
  expect(message).toContain(String(closed)); // names where it could not connect
  // The report writes the status, then its Events: the Event follows the status by a moment.
  const events = await eventually(
    'a Warning Event Retrying',
    async () => {
      const retrying = (await warnings('unreachable')).filter((e) => e.startsWith('Retrying:'));
      return retrying.length > 0 ? retrying : undefined;
    },
    30_000,
    500,
  );
  expect(events[0]).toMatch(/refused|ECONNREFUSED|UNAVAILABLE/i);

  await env.custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace: env.namespace,
      plural: 'temporalconnections',
      name: 'nowhere',
      body: { spec: { hostPort: process.env.TEMPORAL_ADDRESS } },
    },
    asMergePatch,
  );
  await eventually(
    'v1 current once the connection is fixed',
    async () => (await twdStatus(env, 'unreachable'))?.phase === 'Ready',
    120_000,
    500,
  );
  expect(await messageOf('unreachable')).not.toMatch(/retrying/);
});

test('a Temporal namespace that does not exist: the status names it as not found', async () => {
  const twd = resource(env, 'no-namespace', { env: { VERSION: 'v1' } });
  twd.spec.workerOptions.temporalNamespace = 'no-such-namespace';
  await apply(env, twd);
  const message = await eventually(
    'the status says the namespace is not found',
    async () => {
      const m = await messageOf('no-namespace');
      if (/no-such-namespace/.test(m) && /not found|NOT_FOUND/i.test(m)) return m;
      throw new Error(`status message: ${m}; Warning Events: ${(await warnings('no-namespace')).join(' | ')}`);
    },
    90_000,
    500,
  );
  expect(message).toMatch(/retrying|refused/);
  await eventually(
    'a Warning Event naming the namespace as not found',
    async () =>
      (await warnings('no-namespace')).some((e) => /no-such-namespace/.test(e) && /not found|NOT_FOUND/i.test(e)),
    30_000,
    500,
  );
});
