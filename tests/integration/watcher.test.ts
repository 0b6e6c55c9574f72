/**
 * The watcher's side of the contract, against real servers: specs that got past admission but cannot be
 * rolled out, connection changes, several controllers at once, and progress deadlines.
 */
import * as k8s from '@kubernetes/client-node';
import { WorkflowNotFoundError } from '@temporalio/client';
import { group, version } from '../../api/common.js';
import { asMergePatch } from '../../activities/kubernetes/client.js';
import { startController } from '../../worker/controller.js';
import { apply, deployments, eventually, resource, startRolloutEnv, twdStatus, workflowHandle, type RolloutEnv } from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('watcher');
});
afterAll(async () => {
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

const envOf = (d: k8s.V1Deployment) => Object.fromEntries((d.spec?.template?.spec?.containers?.[0]?.env ?? []).map((e) => [e.name, e.value]));

test('a spec that got past admission but cannot be rolled out: InvalidSpec condition, a Warning Event, no workflow, nothing touched', async () => {
  const obj = resource(env, 'bad', { env: { VERSION: 'v1' } });
  (obj.spec.workerOptions as Record<string, unknown>).unsafeCustomBuildID = '---'; // the CRD allows it; no build ID can be made of it
  await apply(env, obj);
  const status = await eventually('InvalidSpec', async () => {
    const s = await twdStatus(env, 'bad');
    return s?.phase === 'InvalidSpec' ? s : undefined;
  });
  expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
  expect(JSON.stringify(status)).toContain('spec.workerOptions.unsafeCustomBuildID');
  // The Event is written just after the status.
  await eventually('a Warning Event InvalidSpec', async () => {
    const events = await env.kc.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace: env.namespace, fieldSelector: 'involvedObject.name=bad' });
    return events.items.some((e) => e.type === 'Warning' && e.reason === 'InvalidSpec');
  }, 10_000);
  await expect(workflowHandle(env, 'bad').describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  expect((await deployments(env, 'bad')).size).toBe(0);
});

test('a resource whose TemporalConnection does not exist yet waits (ConnectionNotFound) and rolls out once it appears', async () => {
  const obj = resource(env, 'early', { env: { VERSION: 'v1' } });
  obj.spec.workerOptions.connectionRef.name = 'later';
  await apply(env, obj);
  const waiting = await eventually('ConnectionNotFound', async () => {
    const s = await twdStatus(env, 'early');
    return s?.conditions?.some((c) => c.reason === 'ConnectionNotFound') ? s : undefined;
  });
  expect(waiting.phase).toBe('Pending');
  expect((await deployments(env, 'early')).size).toBe(0);
  // Said once: the watcher's own status write must not set off another one.
  const rv = async () => ((await env.custom.getNamespacedCustomObject({ group, version, namespace: env.namespace, plural: 'temporalworkerdeployments', name: 'early' })) as k8s.KubernetesObject).metadata?.resourceVersion;
  const before = await rv();
  await new Promise((r) => setTimeout(r, 2000));
  expect(await rv()).toBe(before);
  await env.custom.createNamespacedCustomObject({
    group, version, namespace: env.namespace, plural: 'temporalconnections',
    body: { apiVersion: `${group}/${version}`, kind: 'TemporalConnection', metadata: { name: 'later' }, spec: { hostPort: process.env.TEMPORAL_ADDRESS } },
  });
  await eventually('rolled out', async () => (await twdStatus(env, 'early'))?.phase === 'Ready');
});

test('a TemporalConnection change reaches the live Deployments of every resource that uses it', async () => {
  await apply(env, resource(env, 'conn-a', { env: { VERSION: 'v1' } }));
  await apply(env, resource(env, 'conn-b', { env: { VERSION: 'v1' } }));
  for (const name of ['conn-a', 'conn-b']) await eventually(`${name} ready`, async () => (await twdStatus(env, name))?.phase === 'Ready');
  await env.custom.patchNamespacedCustomObject(
    { group, version, namespace: env.namespace, plural: 'temporalconnections', name: 'local', body: { spec: { tls: { serverName: 'frontend.glidepath.test' } } } },
    asMergePatch,
  );
  for (const name of ['conn-a', 'conn-b']) {
    await eventually(`${name}'s Deployment re-rendered`, async () => {
      const [d] = [...(await deployments(env, name)).values()];
      return d && envOf(d).TEMPORAL_TLS_SERVER_NAME === 'frontend.glidepath.test';
    });
  }
  await env.custom.patchNamespacedCustomObject(
    { group, version, namespace: env.namespace, plural: 'temporalconnections', name: 'local', body: { spec: { tls: null } } },
    asMergePatch,
  );
});

test('two controllers at once are harmless: one workflow, one Deployment per build', async () => {
  const second = await startController({
    kubeConfig: env.kc,
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' },
    taskQueue: `glidepath-${env.namespace}`,
    namespaces: [env.namespace],
    timings: { drainPollMaxMs: 1000 },
  });
  try {
    await apply(env, resource(env, 'twice', { env: { VERSION: 'v1' } }));
    const v1 = await eventually('v1 current', async () => (await twdStatus(env, 'twice'))?.currentVersion?.buildID);
    await apply(env, resource(env, 'twice', { env: { VERSION: 'v2' } }));
    await eventually('v2 current and v1 gone', async () => {
      const s = await twdStatus(env, 'twice');
      const ds = await deployments(env, 'twice');
      return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1 && ds.size === 1;
    });
    const runs = [];
    for await (const wf of env.client.workflow.list({ query: `WorkflowId = 'glidepath/${env.namespace}/twice'` })) runs.push(wf);
    expect(runs).toHaveLength(1);
  } finally {
    await second.stop();
  }
});

test('a version whose pods never become ready fails its progress deadline; a fixed template supersedes it', async () => {
  const broken = resource(env, 'deadline', { env: { VERSION: 'v1', EXAMPLE_NEVER_READY: 'true' } });
  (broken.spec as Record<string, unknown>).progressDeadlineSeconds = 2;
  await apply(env, broken);
  const failed = await eventually('progress deadline exceeded', async () => {
    const s = await twdStatus(env, 'deadline');
    return s?.phase === 'Failed' ? s : undefined;
  });
  expect(failed.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'ProgressDeadlineExceeded' });

  const fixed = resource(env, 'deadline', { env: { VERSION: 'v1' } });
  (fixed.spec as Record<string, unknown>).progressDeadlineSeconds = 2;
  await apply(env, fixed);
  await eventually('the fixed build current', async () => (await twdStatus(env, 'deadline'))?.phase === 'Ready');
  await eventually('the broken build sunset', async () => (await deployments(env, 'deadline')).size === 1);
});
