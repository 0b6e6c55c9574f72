/**
 * RolloutWorkflow end to end: real kube-apiserver + etcd, real Temporal dev server, the controller
 * (watcher + worker) and simulated pods running real versioned workers. Every test also checks that no
 * Deployment lost its pods while its version was not drained.
 */
import { group, version } from '../../api/common.js';
import * as k8s from '@kubernetes/client-node';
import { asMergePatch } from '../../kube/client.js';
import { localActivityType } from '../../scripts/history.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../../examples/worker/activities.js';
import { exampleBundle } from '../../examples/worker/worker.js';
import { Labels } from '../../kube/versioned-deployment.js';
import { promote, resync } from '../../workflows/messages.js';
import {
  apply,
  deployments,
  eventually,
  plural,
  resource,
  routing,
  routingInForce,
  startRolloutEnv,
  taskQueueOf,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
  routingCallTimes,
  routingCalls,
} from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('rollout');
});
afterAll(async () => {
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

/** Waits until the resource reports `buildId` current and returns the status. */
async function currentIs(name: string, buildId?: string, timeoutMs = 30_000) {
  return eventually(
    `${name} current = ${buildId ?? 'any'}`,
    async () => {
      const s = await twdStatus(env, name);
      const current = s?.currentVersion?.buildID;
      return s?.phase === 'Ready' && current && (!buildId || current === buildId) ? s : undefined;
    },
    timeoutMs,
  );
}

async function startPinned(name: string, id: string) {
  const handle = await env.client.workflow.start('exampleWork', {
    taskQueue: taskQueueOf(env, name),
    workflowId: `${env.namespace}-${id}`,
  });
  const buildId = await eventually(`${id} to start on a version`, async () => {
    const d = await handle.describe();
    return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId || undefined;
  });
  return { handle, buildId };
}

test('AllAtOnce v1 → v2: v2 current in Temporal and in status; v1 kept while a pinned workflow runs, then scaled to 0, then deleted', async () => {
  await apply(
    env,
    resource(env, 'aao', { env: { VERSION: 'v1' }, sunset: { scaledownDelay: '1s', deleteDelay: '3s' } }),
  );
  const v1 = (await currentIs('aao')).currentVersion!.buildID;
  expect((await routing(env, 'aao')).current).toBe(v1);

  const pinned = await startPinned('aao', 'pinned-aao');
  expect(pinned.buildId).toBe(v1);

  await apply(
    env,
    resource(env, 'aao', { env: { VERSION: 'v2' }, sunset: { scaledownDelay: '1s', deleteDelay: '3s' } }),
  );
  const status = await eventually('v2 current', async () => {
    const s = await twdStatus(env, 'aao');
    return s?.currentVersion && s.currentVersion.buildID !== v1 && s.phase === 'Ready' ? s : undefined;
  });
  const v2 = status.currentVersion!.buildID;
  expect((await routing(env, 'aao')).current).toBe(v2);
  expect(status.deprecatedVersions?.map((v) => v.buildID)).toContain(v1);

  // New work goes to v2 while the pinned execution keeps v1 alive.
  await routingInForce(env, 'aao');
  const fresh = await env.client.workflow.start('exampleWork', {
    taskQueue: taskQueueOf(env, 'aao'),
    workflowId: `${env.namespace}-fresh`,
  });
  await fresh.signal('finish');
  expect(await fresh.result()).toBe(v2);
  await new Promise((r) => setTimeout(r, 3000));
  const v1Deployment = (await deployments(env, 'aao')).get(v1);
  expect(v1Deployment?.spec?.replicas).toBe(1);
  expect(env.simulator.podCount(env.namespace, v1Deployment!.metadata!.name!)).toBe(1);

  await pinned.handle.signal('finish');
  expect(await pinned.handle.result()).toBe(v1);
  await eventually('v1 scaled to 0', async () => (await deployments(env, 'aao')).get(v1)?.spec?.replicas === 0);
  await eventually('v1 deleted', async () => !(await deployments(env, 'aao')).has(v1));
  // The simulator records it once v1's pod has stopped (its worker's shutdown), which can be after the deletion.
  await eventually('the simulator stopped the pod of v1', () =>
    env.simulator.scaleEvents.some((e) => e.buildId === v1 && e.to === 0),
  );
  await eventually(
    'v1 gone from the status',
    async () => ((await twdStatus(env, 'aao'))?.deprecatedVersions ?? []).length === 0,
  );
});

test('Progressive with 3 steps: each ramp is seen in Temporal in order, each pause held in full, then current', async () => {
  const steps = [
    { rampPercentage: 10, pauseDuration: '3s' },
    { rampPercentage: 40, pauseDuration: '3s' },
    { rampPercentage: 70, pauseDuration: '3s' },
  ];
  await apply(env, resource(env, 'prog', { strategy: 'Progressive', steps, env: { VERSION: 'v1' } }));
  const v1 = (await currentIs('prog')).currentVersion!.buildID;

  await apply(env, resource(env, 'prog', { strategy: 'Progressive', steps, env: { VERSION: 'v2' } }));
  const seen: { percentage: number; at: number }[] = [];
  const v2 = await eventually(
    'v2 current',
    async () => {
      const r = await routing(env, 'prog');
      if (r.ramping && seen.at(-1)?.percentage !== r.percentage)
        seen.push({ percentage: r.percentage, at: Date.now() });
      return r.current && r.current !== v1 ? r.current : undefined;
    },
    60_000,
    20,
  );
  expect(seen.map((s) => s.percentage)).toEqual([10, 40, 70]);
  // Ready comes after the set-current's completion is in the history: on 1.30+ the server routes to v2 while the
  // activity still reads the routing's propagation.
  await currentIs('prog', v2);
  // Each step holds its 3 s pause: never early (how late is the benchmark's business, not a test's). Measured on
  // the server's clock, from the workflow's history: a routing call lands, the next one starts ≥ 3 s later.
  const { starts, ends } = await routingCallTimes(env, 'prog', 4); // 3 ramps + set current
  const held = [1, 2, 3].map((i) => starts[i]! - ends[i - 1]!);
  const honoured = held.every((ms) => ms >= 3000);
  expect(honoured ? 'each pause held in full' : `steps held ${held.join(' / ')} ms`).toBe('each pause held in full');
});

test('the first version ramps away from unversioned workers still polling its task queue, as the strategy says', async () => {
  // An unversioned worker of the same task queue: what a team has before it adopts Worker Versioning.
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const unversioned = await Worker.create({
    connection,
    namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue: taskQueueOf(env, 'adopt'),
    workflowBundle: await exampleBundle(),
    activities: createActivities({}),
  });
  const running = unversioned.run();
  try {
    // It has done work (then idles in a long poll, which the dev server's 1 s poller history soon forgets).
    await env.client.workflow.execute('exampleWork', {
      taskQueue: taskQueueOf(env, 'adopt'),
      workflowId: `unversioned-${env.namespace}`,
    });
    const steps = [{ rampPercentage: 30, pauseDuration: '2s' }];
    await apply(env, resource(env, 'adopt', { strategy: 'Progressive', steps, env: { VERSION: 'v1' } }));
    const v1 = (await currentIs('adopt')).currentVersion!.buildID;
    expect((await routing(env, 'adopt')).current).toBe(v1);
    // The ramp lasted one 2 s step: the history says it happened (a poller could miss that window while the
    // server is busy with the first ramp after a registration).
    expect(await routingCalls(env, 'adopt')).toEqual([
      { call: 'setRamping', buildId: v1, percentage: 30 },
      { call: 'setCurrent', buildId: v1 },
    ]);
  } finally {
    unversioned.shutdown();
    await running;
    await connection.close();
  }
});

test('Manual: nothing is routed to the new version until promote', async () => {
  await apply(env, resource(env, 'manual', { strategy: 'Manual', env: { VERSION: 'v1' } }));
  const v1 = (await currentIs('manual')).currentVersion!.buildID; // the very first version, with no unversioned pollers
  await apply(env, resource(env, 'manual', { strategy: 'Manual', env: { VERSION: 'v2' } }));
  const waiting = await eventually('awaiting promotion', async () => {
    const s = await twdStatus(env, 'manual');
    return s?.phase === 'AwaitingPromotion' ? s : undefined;
  });
  const v2 = waiting.targetVersion!.buildID;
  await new Promise((r) => setTimeout(r, 2000));
  expect(await routing(env, 'manual')).toEqual({ current: v1, ramping: undefined, percentage: 0 });

  await workflowHandle(env, 'manual').signal(promote, {});
  await currentIs('manual', v2);
  expect((await routing(env, 'manual')).current).toBe(v2);
});

test('v3 applied during v2’s ramp: v2 is abandoned (ramp cleared) and sunset, v3 becomes current', async () => {
  const steps = [{ rampPercentage: 50, pauseDuration: '1m' }];
  await apply(env, resource(env, 'super', { strategy: 'Progressive', steps, env: { VERSION: 'v1' } }));
  const v1 = (await currentIs('super')).currentVersion!.buildID;
  await apply(env, resource(env, 'super', { strategy: 'Progressive', steps, env: { VERSION: 'v2' } }));
  const v2 = await eventually('v2 ramping', async () => (await routing(env, 'super')).ramping);

  await apply(env, resource(env, 'super', { strategy: 'Progressive', steps, env: { VERSION: 'v3' } }));
  const v3 = await eventually('v3 ramping', async () => {
    const r = await routing(env, 'super');
    return r.ramping && r.ramping !== v2 ? r.ramping : undefined;
  });
  expect((await routing(env, 'super')).current).toBe(v1);
  await workflowHandle(env, 'super').signal(promote, { full: true });
  await currentIs('super', v3);
  await eventually('v2 and v1 sunset (Deployments deleted)', async () => {
    const ds = await deployments(env, 'super');
    return !ds.has(v2) && !ds.has(v1) && ds.has(v3);
  });
});

test('a Deployment deleted by hand is recreated', async () => {
  await apply(env, resource(env, 'heal', { env: { VERSION: 'v1' } }));
  const v1 = (await currentIs('heal')).currentVersion!.buildID;
  const d = (await deployments(env, 'heal')).get(v1)!;
  await env.apps.deleteNamespacedDeployment({ name: d.metadata!.name!, namespace: env.namespace });
  const recreated = await eventually('the Deployment recreated', async () => {
    const again = (await deployments(env, 'heal')).get(v1);
    return again && again.metadata!.uid !== d.metadata!.uid ? again : undefined;
  });
  expect(recreated.spec?.replicas).toBe(1);
});

test("a resync heals a Deployment edited by hand, leaves a scaler's replicas alone, and writes nothing when nothing drifted", async () => {
  await apply(env, resource(env, 'drift', { env: { VERSION: 'v1' } }));
  const v1 = (await currentIs('drift')).currentVersion!.buildID;
  const name = (await deployments(env, 'drift')).get(v1)!.metadata!.name!;
  const get = () => env.apps.readNamespacedDeployment({ name, namespace: env.namespace });
  const image = (d: k8s.V1Deployment) => d.spec!.template!.spec!.containers[0]!.image;
  const wanted = image(await get());
  const events = async () =>
    (
      await env.kc
        .makeApiClient(k8s.CoreV1Api)
        .listNamespacedEvent({ namespace: env.namespace, fieldSelector: 'involvedObject.name=drift' })
    ).items;
  /** The reconciliations recorded (a local activity's marker, or the activity it fell back to). */
  const reconciliations = async () =>
    ((await workflowHandle(env, 'drift').fetchHistory()).events ?? []).filter(
      (e) =>
        (localActivityType(e) ?? e.activityTaskScheduledEventAttributes?.activityType?.name) === 'reconcileDeployments',
    ).length;
  const resyncRound = async () => {
    const rounds = await reconciliations();
    await workflowHandle(env, 'drift').signal(resync);
    await eventually('a resync round', async () => (await reconciliations()) > rounds);
  };

  // A scaler (its own field manager, through the scale subresource) holds the replicas: they stay its.
  await env.apps.patchNamespacedDeploymentScale(
    { name, namespace: env.namespace, body: { spec: { replicas: 2 } }, fieldManager: 'a-scaler' },
    asMergePatch,
  );
  // Settled first: the Deployment controller writes its status as the second pod becomes ready.
  const scaled = await eventually(
    'the scaled Deployment settled',
    async () => {
      const d = await get();
      const s = d.status;
      const settled = s?.observedGeneration === d.metadata!.generation && s?.updatedReplicas === 2;
      return settled && s?.readyReplicas === 2 && s?.availableReplicas === 2 ? d : undefined;
    },
    60_000,
  );
  await resyncRound();
  const after = await get();
  expect(after.spec!.replicas).toBe(2);
  expect(after.metadata!.resourceVersion).toBe(scaled.metadata!.resourceVersion); // nothing drifted: no write

  // Someone edits the image by hand: the next round applies it again.
  const edited = {
    ...scaled.spec!.template!.spec!,
    containers: [{ ...scaled.spec!.template!.spec!.containers[0]!, image: 'glidepath/example-worker:edited' }],
  };
  await env.apps.patchNamespacedDeployment(
    { name, namespace: env.namespace, body: { spec: { template: { spec: edited } } }, fieldManager: 'kubectl-edit' },
    asMergePatch,
  );
  await resyncRound();
  await eventually('the image healed', async () => image(await get()) === wanted);
  expect((await get()).spec!.replicas).toBe(2);
  await eventually('a DeploymentHealed Event', async () =>
    (await events()).some((e) => e.reason === 'DeploymentHealed'),
  );
});

test('a resync deletes a stray Deployment of ours at 0 pods, and leaves one with pods alone', async () => {
  await apply(env, resource(env, 'strays', { env: { VERSION: 'v1' } }));
  await currentIs('strays');
  const uid = (
    (await env.custom.getNamespacedCustomObject({
      group,
      version,
      namespace: env.namespace,
      plural,
      name: 'strays',
    })) as k8s.KubernetesObject
  ).metadata!.uid!;
  const stray = (buildId: string, replicas: number): k8s.V1Deployment => ({
    metadata: {
      name: `strays-${buildId}`,
      labels: {
        [Labels.managedBy]: 'glidepath',
        [Labels.workerDeployment]: 'strays',
        [Labels.buildId]: buildId,
        [Labels.ownerUid]: uid,
      },
    },
    spec: {
      replicas,
      selector: { matchLabels: { [Labels.buildId]: buildId } },
      template: {
        metadata: { labels: { [Labels.buildId]: buildId } },
        spec: { containers: [{ name: 'w', image: 'x', env: [{ name: 'EXAMPLE_NEVER_READY', value: 'true' }] }] },
      },
    },
  });
  await env.apps.createNamespacedDeployment({ namespace: env.namespace, body: stray('old-0', 0) });
  await env.apps.createNamespacedDeployment({ namespace: env.namespace, body: stray('old-1', 1) });
  await workflowHandle(env, 'strays').signal(resync);
  await eventually('the stray at 0 pods deleted', async () => !(await deployments(env, 'strays')).has('old-0'));
  const left = await deployments(env, 'strays');
  expect(left.has('old-1')).toBe(true);
  expect(left.size).toBe(2);
});

test('deleting the resource cleans up Temporal and Kubernetes, then the finalizer goes', async () => {
  await apply(env, resource(env, 'gone', { env: { VERSION: 'v1' } }));
  await currentIs('gone');
  env.deleting.add('gone');
  await env.custom.deleteNamespacedCustomObject({ group, version, namespace: env.namespace, plural, name: 'gone' });
  await eventually(
    'the resource gone (finalizer removed)',
    async () => (await twdStatus(env, 'gone')) === undefined && !(await exists('gone')),
  );
  expect((await deployments(env, 'gone')).size).toBe(0);
  expect(await routing(env, 'gone')).toEqual({ percentage: 0 });
  // Removing the finalizer is the workflow's last act; it completes right after.
  await eventually(
    'the workflow completed',
    async () => (await workflowHandle(env, 'gone').describe()).status.name === 'COMPLETED',
    10_000,
  );
});

async function exists(name: string): Promise<boolean> {
  try {
    await env.custom.getNamespacedCustomObject({ group, version, namespace: env.namespace, plural, name });
    return true;
  } catch {
    return false;
  }
}
