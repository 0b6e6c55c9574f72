/**
 * The thin Temporal activities against the real dev server, with real versioned workers (examples/worker):
 * outcome counts per version, the manager identity, acting on and moving pinned executions, and a cancelled
 * gate. The activities run as the worker runs them (a real activity Context where they need one).
 */
import { randomUUID } from 'node:crypto';
import { ActivityCancellationDetails } from '@temporalio/common';
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import {
  CancelledFailure,
  Client,
  Connection,
  WorkflowFailedError,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
} from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { managerIdentityHeldType, withFailureClassification } from '../../activities/errors.js';
import { propagationBoundMs } from '../../activities/routing.js';
import { createTemporalActivities } from '../../activities/temporal.js';
import { createAnalysisActivities } from '../../temporal/analysis.js';
import { TemporalConnections, type TemporalTarget } from '../../temporal/connections.js';
import { describeDeploymentSettled } from '../../temporal/describe.js';
import { versionNotInQueueYet } from '../../temporal/errors.js';
import { createPinnedActivities } from '../../temporal/pinned.js';
import { serverFeatures } from '../../temporal/server-version.js';
import { createExampleWorker } from '../../examples/worker/worker.js';
import { eventually } from '../harness/eventually.js';

const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const identity = 'glidepath-activities-test';
const connections = new TemporalConnections(async () => undefined);
const temporal = createTemporalActivities(connections, identity, async () => undefined);
const analysis = createAnalysisActivities(connections);
const pinned = createPinnedActivities(connections, identity);
const workers: { worker: Worker; running: Promise<void> }[] = [];
let connection: Connection;
let client: Client;

beforeAll(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
  client = new Client({ connection, namespace });
});

afterAll(async () => {
  for (const w of workers) if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
  await Promise.all(workers.map((w) => w.running.catch(() => undefined)));
  await connections.closeAll();
  await connection?.close();
});

/** A worker deployment and task queue of its own for each test. */
function fresh(label: string) {
  const id = randomUUID().slice(0, 8);
  const deploymentName = `${label}/${id}`;
  const t: TemporalTarget = {
    connection: { hostPort: process.env.TEMPORAL_ADDRESS! },
    k8sNamespace: 'test',
    temporalNamespace: namespace,
    deploymentName,
  };
  return { t, deploymentName, taskQueue: `${label}-${id}` };
}

/** Runs a real versioned example worker and waits until the server lists its version. */
async function startWorker(
  deploymentName: string,
  taskQueue: string,
  buildId: string,
  env: { failureShare?: string; hold?: string } = {},
) {
  const worker = await createExampleWorker({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: namespace,
    TEMPORAL_DEPLOYMENT_NAME: deploymentName,
    TEMPORAL_WORKER_BUILD_ID: buildId,
    EXAMPLE_TASK_QUEUE: taskQueue,
    EXAMPLE_FAILURE_SHARE: env.failureShare,
    EXAMPLE_WORKFLOW_HOLD: env.hold,
  });
  workers.push({ worker, running: worker.run() });
  await eventually(`${deploymentName}:${buildId} registered`, async () => {
    const res = await describeDeploymentSettled(connection.workflowService, namespace, deploymentName);
    return res?.workerDeploymentInfo?.versionSummaries?.some((v) => v.deploymentVersion?.buildId === buildId);
  });
}

/**
 * Starts `exampleWork` executions pinned to a build (a versioning override, as a gate is started), once the server
 * has the build in the queue (1.32 refuses a start before).
 */
async function startPinnedTo(deploymentName: string, taskQueue: string, buildId: string, n: number) {
  const start = () =>
    client.workflow.start('exampleWork', {
      taskQueue,
      workflowId: `work-${randomUUID()}`,
      versioningOverride: { pinnedTo: { deploymentName, buildId } },
    });
  const first = await eventually(`${buildId} in ${taskQueue}`, () =>
    start().catch((err: unknown) => {
      if (versionNotInQueueYet(err)) return undefined;
      throw err;
    }),
  );
  return [first, ...(await Promise.all(Array.from({ length: n - 1 }, start)))];
}

/** Waits until visibility lists exactly `n` executions Running on the build. */
const runningCount = (t: TemporalTarget, buildId: string, n: number) =>
  eventually(
    `${n} running on ${t.deploymentName}:${buildId}`,
    async () => (await pinned.countPinned(t, buildId)) === n,
  );

test('countOutcomes counts closed and failed executions per version, since a time, of the given workflow types', async () => {
  const { t, deploymentName, taskQueue } = fresh('outcomes');
  await startWorker(deploymentName, taskQueue, 'good', { failureShare: '0' });
  await startWorker(deploymentName, taskQueue, 'bad', { failureShare: '1' });
  const sinceIso = new Date().toISOString();
  const good = await startPinnedTo(deploymentName, taskQueue, 'good', 3);
  const bad = await startPinnedTo(deploymentName, taskQueue, 'bad', 4);
  for (const h of good) expect(await h.result()).toBe('good');
  for (const h of bad) await expect(h.result()).rejects.toBeInstanceOf(WorkflowFailedError);

  const goodOutcomes = await eventually('good closes visible', async () => {
    const o = await analysis.countOutcomes(t, 'good', { sinceIso });
    return o.closed === 3 && o;
  });
  expect(goodOutcomes).toEqual({ closed: 3, failed: 0 });
  const badOutcomes = await eventually('bad closes visible', async () => {
    const o = await analysis.countOutcomes(t, 'bad', { sinceIso, workflowTypes: ['exampleWork'] });
    return o.closed === 4 && o;
  });
  expect(badOutcomes).toEqual({ closed: 4, failed: 4 });
  // Other workflow types (one needing escaping: the query still parses) and a later `since` count nothing.
  expect(await analysis.countOutcomes(t, 'bad', { sinceIso, workflowTypes: ['exampleGate', 'we"ird\\type'] })).toEqual({
    closed: 0,
    failed: 0,
  });
  expect(await analysis.countOutcomes(t, 'bad', { sinceIso: new Date(Date.now() + 60_000).toISOString() })).toEqual({
    closed: 0,
    failed: 0,
  });
  await expect(analysis.countOutcomes(t, 'bad', { sinceIso: 'yesterday' })).rejects.toThrow(/not a time/);
});

test('claimManager claims an unheld worker deployment; routing refuses while another client holds it and works once handed back', async () => {
  const { t, deploymentName, taskQueue } = fresh('manager');
  const svc = connection.workflowService;
  const manager = async () =>
    (await describeDeploymentSettled(svc, namespace, deploymentName))?.workerDeploymentInfo?.managerIdentity;
  // No worker deployment yet: nothing to claim, and no routing.
  expect(await temporal.claimManager(t)).toEqual({});
  expect(await temporal.describeRouting(t)).toEqual({
    current: undefined,
    ramping: undefined,
    rampPercentage: 0,
    versions: [],
    propagating: false,
  });

  await startWorker(deploymentName, taskQueue, 'A');
  expect(await temporal.claimManager(t)).toEqual({});
  expect(await manager()).toBe(identity);
  expect(await temporal.claimManager(t)).toEqual({}); // ours already: nothing changes

  await svc.setWorkerDeploymentManager({
    namespace,
    deploymentName,
    managerIdentity: 'someone-else',
    identity: 'someone-else',
  });
  expect(await temporal.claimManager(t)).toEqual({ heldBy: 'someone-else' });
  expect(await manager()).toBe('someone-else');
  const held = {
    type: managerIdentityHeldType,
    nonRetryable: true,
    details: ['someone-else'],
    message: "the worker deployment's manager identity is held by someone-else",
  };
  await expect(temporal.setRamping(t, 'A', 10)).rejects.toMatchObject(held);
  await expect(temporal.setCurrent(t, 'A')).rejects.toMatchObject(held);
  // The server's own refusal (here a direct call, as if the holder changed after our describe) maps to the same failure.
  const direct = withFailureClassification({
    ramp: () =>
      svc.setWorkerDeploymentRampingVersion({ namespace, deploymentName, buildId: 'A', percentage: 10, identity }),
  });
  await expect(direct.ramp()).rejects.toMatchObject(held);
  expect((await temporal.describeRouting(t)).ramping).toBeUndefined();

  // Handed back (emptied): routing works, and the next claim takes it again.
  await svc.setWorkerDeploymentManager({ namespace, deploymentName, managerIdentity: '', identity: 'someone-else' });
  // The server refuses routing until every task queue of a new version is known: wait through that refusal only.
  await eventually('ramping to A', () => temporal.setRamping(t, 'A', 10).then(() => true));
  expect(await temporal.describeRouting(t)).toMatchObject({ ramping: 'A', rampPercentage: 10 });
  await temporal.setCurrent(t, 'A');
  expect(await temporal.describeRouting(t)).toMatchObject({ current: 'A', ramping: undefined });
  expect(await temporal.claimManager(t)).toEqual({});
  expect(await manager()).toBe(identity);
  // Ours: routing still works.
  await temporal.routeAway(t);
  expect(await temporal.describeRouting(t)).toMatchObject({ current: undefined, ramping: undefined });
});

test('routing writes with our last conflict token need no describe; a stale one falls back to a describe; the first claims the manager identity on the way', async () => {
  const { t, deploymentName, taskQueue } = fresh('tokens');
  const svc = connection.workflowService;
  const manager = async () =>
    (await describeDeploymentSettled(svc, namespace, deploymentName))?.workerDeploymentInfo?.managerIdentity;
  // The describes these activities make, seen on their connection (a gRPC interceptor, then the SDK's retries).
  const describes: string[] = [];
  const seen: Interceptor = (options, nextCall) => {
    if (options.method_definition.path.endsWith('/DescribeWorkerDeployment'))
      describes.push(options.method_definition.path);
    return new InterceptingCall(nextCall(options));
  };
  const countedConnections = new TemporalConnections(async () => undefined, {
    interceptors: [seen, makeGrpcRetryInterceptor(defaultGrpcRetryOptions())],
  });
  const counted = createTemporalActivities(countedConnections, identity, async () => undefined);
  await startWorker(deploymentName, taskQueue, 'A');
  await startWorker(deploymentName, taskQueue, 'B');

  // The first write claims the identity (nobody holds it) with the describe it needs anyway.
  const first = await eventually('A current', () => counted.setCurrent(t, 'A', { claim: true }).catch(() => undefined));
  expect(first.conflictToken).toEqual(expect.any(String));
  expect(await manager()).toBe(identity);
  // With its token, the next write makes no describe.
  describes.length = 0;
  const second = await eventually('B ramping', () =>
    counted.setRamping(t, 'B', 10, { conflictToken: first.conflictToken, claim: true }).catch(() => undefined),
  );
  expect(describes).toEqual([]);
  expect(second.conflictToken).not.toBe(first.conflictToken);
  // The same write again with the same token (an activity retried after its response was lost): the server
  // answers "no change" before it checks the token, so no describe either, and the token is the new one.
  expect(await counted.setRamping(t, 'B', 10, { conflictToken: first.conflictToken, claim: true })).toEqual(second);
  expect(describes).toEqual([]);
  expect(await temporal.describeRouting(t)).toMatchObject({ current: 'A', ramping: 'B', rampPercentage: 10 });

  // Someone writes (hands the identity back): our token is stale, the write describes, claims again and lands.
  await svc.setWorkerDeploymentManager({ namespace, deploymentName, managerIdentity: '', identity: 'someone-else' });
  const third = await counted.setRamping(t, 'B', 30, { conflictToken: second.conflictToken, claim: true });
  expect(describes.length).toBeGreaterThan(0);
  expect(await manager()).toBe(identity);
  expect(await temporal.describeRouting(t)).toMatchObject({ current: 'A', ramping: 'B', rampPercentage: 30 });

  // Someone else holds it: refused, token or not.
  await svc.setWorkerDeploymentManager({ namespace, deploymentName, managerIdentity: 'someone-else', identity });
  const held = { type: managerIdentityHeldType, nonRetryable: true, details: ['someone-else'] };
  await expect(
    withFailureClassification(counted).setCurrent(t, 'B', { conflictToken: third.conflictToken, claim: true }),
  ).rejects.toMatchObject(held);
  expect((await temporal.describeRouting(t)).current).toBe('A');
  await countedConnections.closeAll();
});

test('a set-current returns once the server says the routing reached every task queue, with what it read as draining', async () => {
  const { t, deploymentName, taskQueue } = fresh('propagation');
  await startWorker(deploymentName, taskQueue, 'A');
  await startWorker(deploymentName, taskQueue, 'B');
  await eventually('A current', () => temporal.setCurrent(t, 'A').then(() => true));
  const started = Date.now();
  const result = await temporal.setCurrent(t, 'B');
  const tookMs = Date.now() - started;
  const routing = await temporal.describeRouting(t);
  expect(routing.current).toBe('B');
  if (result.propagating) {
    // Said only when the next read, at most 1 s away, would pass the bound (about 2 s is usual here; a loaded
    // machine is slower).
    expect(tookMs).toBeGreaterThan(propagationBoundMs - 1_000);
  } else {
    expect(routing.propagating).toBe(false);
  }
  const a = routing.versions.find((v) => v.buildId === 'A')?.status;
  expect(['Draining', 'Drained']).toContain(a);
  const { version, routingUpdateState } = await serverFeatures(connection);
  // The tiers run on 1.32 (the default) and on 1.29 (GLIDEPATH_TEMPORAL_SERVER=cli): both versions are known.
  expect(routingUpdateState).toBe(!version.startsWith('1.29'));
  if (!routingUpdateState) {
    // An older server answers once the routing is in force, and the activity reads nothing after it.
    expect(result.draining).toBeUndefined();
  } else if (a === 'Draining') {
    // Draining comes before drained: still draining now, it was when the set-current read it.
    expect(result.draining).toEqual(['A']);
  }
});

/** Runs an activity as the worker would (it heartbeats). */
const inActivity = <A extends unknown[], R>(fn: (...args: A) => Promise<R>, ...args: A): Promise<R> =>
  new MockActivityEnvironment().run(fn, ...args);

test('actOnPinned terminates, signals and cancels the running executions on a version; again, it is a no-op', async () => {
  const { t, deploymentName, taskQueue } = fresh('act');
  await startWorker(deploymentName, taskQueue, 'A', { hold: '5m' });
  await expect(inActivity(pinned.actOnPinned, t, 'A', { kind: 'Signal' }, 'no name')).rejects.toThrow(/signalName/);

  const terminated = await startPinnedTo(deploymentName, taskQueue, 'A', 2);
  await runningCount(t, 'A', 2);
  expect(await inActivity(pinned.actOnPinned, t, 'A', { kind: 'Terminate' }, 'bad rollout')).toEqual({
    matched: 2,
    acted: 2,
  });
  for (const h of terminated) {
    expect((await h.describe()).status.name).toBe('TERMINATED');
    const last = (await h.fetchHistory()).events?.at(-1);
    expect(last?.workflowExecutionTerminatedEventAttributes?.reason).toBe('bad rollout');
  }
  // Whether visibility still lists them or not, nothing is acted on twice and nothing fails.
  expect((await inActivity(pinned.actOnPinned, t, 'A', { kind: 'Terminate' }, 'bad rollout')).acted).toBe(0);
  await runningCount(t, 'A', 0);

  const signalled = await startPinnedTo(deploymentName, taskQueue, 'A', 2);
  await runningCount(t, 'A', 2);
  expect(
    await inActivity(pinned.actOnPinned, t, 'A', { kind: 'Signal', signalName: 'finish' }, 'finish early'),
  ).toEqual({ matched: 2, acted: 2 });
  for (const h of signalled) expect(await h.result()).toBe('A');
  await runningCount(t, 'A', 0);

  const cancelled = await startPinnedTo(deploymentName, taskQueue, 'A', 2);
  await runningCount(t, 'A', 2);
  expect(await inActivity(pinned.actOnPinned, t, 'A', { kind: 'Cancel' }, 'abort')).toEqual({ matched: 2, acted: 2 });
  for (const h of cancelled) {
    const err = await h.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
  }
  await runningCount(t, 'A', 0);
  expect(await inActivity(pinned.actOnPinned, t, 'A', { kind: 'Cancel' }, 'abort')).toEqual({ matched: 0, acted: 0 });
});

test('"pinned" means pinned: AutoUpgrade executions on the same version are not counted, terminated or moved', async () => {
  const { t, deploymentName, taskQueue } = fresh('autoupgrade');
  await startWorker(deploymentName, taskQueue, 'A', { hold: '5m' });
  await startWorker(deploymentName, taskQueue, 'B', { hold: '5m' });
  await eventually('A current', () => temporal.setCurrent(t, 'A').then(() => true));
  const pinnedOnes = await startPinnedTo(deploymentName, taskQueue, 'A', 2);
  const autoUpgrade = await Promise.all(
    [1, 2].map(() =>
      client.workflow.start('exampleWork', {
        taskQueue,
        workflowId: `auto-${randomUUID()}`,
        versioningOverride: 'AUTO_UPGRADE',
      }),
    ),
  );
  // All four run on A (visibility), two of them pinned.
  await eventually(
    '4 running on A',
    async () =>
      (
        await client.workflow.count(
          `TemporalWorkerDeploymentVersion = "${deploymentName}:A" AND ExecutionStatus = "Running"`,
        )
      ).count === 4,
  );
  await runningCount(t, 'A', 2);

  const { oneTimeOverride: oneTime } = await serverFeatures(connection);
  expect(await inActivity(pinned.movePinned, t, 'A', 'B', 'A is bad')).toEqual({ matched: 2, moved: 2, oneTime });
  for (const h of autoUpgrade)
    expect((await h.describe()).raw.workflowExecutionInfo?.versioningInfo?.versioningOverride?.pinned).toBeFalsy();
  await runningCount(t, 'B', 2);
  expect(await inActivity(pinned.actOnPinned, t, 'B', { kind: 'Terminate' }, 'bad rollout')).toEqual({
    matched: 2,
    acted: 2,
  });
  for (const h of pinnedOnes) expect((await h.describe()).status.name).toBe('TERMINATED');
  for (const h of autoUpgrade) expect((await h.describe()).status.name).toBe('RUNNING');
  for (const h of autoUpgrade) await h.terminate('test done');
}, 300_000);

test('movePinned moves executions pinned to a bad build onto a good one, where they complete', async () => {
  const { t, deploymentName, taskQueue } = fresh('move');
  await startWorker(deploymentName, taskQueue, 'A', { hold: '5m' });
  await startWorker(deploymentName, taskQueue, 'B', { hold: '5m' });
  // B current: new work starts on B and is pinned there by the worker's default behaviour (no override).
  await eventually('B current', () => temporal.setCurrent(t, 'B').then(() => true));
  const handles = await Promise.all(
    [1, 2].map(() => client.workflow.start('exampleWork', { taskQueue, workflowId: `work-${randomUUID()}` })),
  );
  await runningCount(t, 'B', 2);
  // Each is holding (its timer started, nothing pending): only a new workflow task can move it, as the server
  // schedules none for an options update. Without this wait, a task already due on B would keep it there.
  for (const h of handles) {
    await eventually(
      'holding on B',
      async () => (await h.fetchHistory()).events?.some((e) => e.timerStartedEventAttributes) || undefined,
    );
  }

  const { oneTimeOverride: oneTime } = await serverFeatures(connection);
  expect(await inActivity(pinned.movePinned, t, 'B', 'A', 'B is bad')).toEqual({ matched: 2, moved: 2, oneTime });
  // Visibility lists them on A at once (the override is their effective version): B's drain no longer waits on them.
  await runningCount(t, 'B', 0);
  await runningCount(t, 'A', 2);
  for (const h of handles) {
    // One-time (server 1.32) until a workflow task completes on A; pinned on older servers.
    const override = (await h.describe()).raw.workflowExecutionInfo?.versioningInfo?.versioningOverride;
    const version = oneTime ? override?.oneTime?.targetDeploymentVersion : override?.pinned?.version;
    expect(version).toMatchObject({ deploymentName, buildId: 'A' });
    // The signal's workflow task goes to A: the execution finishes there.
    await h.signal('finish');
    expect(await h.result()).toBe('A');
  }
  await runningCount(t, 'A', 0);
  expect(await inActivity(pinned.movePinned, t, 'B', 'A', 'B is bad')).toEqual({ matched: 0, moved: 0, oneTime });
}, 300_000);

test('runGate: a cancelled activity cancels its gate workflow; a worker shutdown leaves it running for the retry', async () => {
  const { t, deploymentName, taskQueue } = fresh('gate');
  await startWorker(deploymentName, taskQueue, 'A', { hold: '5m' });
  // exampleWork as the gate: it holds until cancelled or finished.
  const gate = (workflowId: string) => ({
    buildId: 'A',
    workflowType: 'exampleWork',
    taskQueue,
    workflowId,
    timeoutMs: 120_000,
  });
  const running = (workflowId: string) =>
    eventually(`${workflowId} running on A`, async () => {
      const d = await client.workflow.getHandle(workflowId).describe();
      return (
        d.status.name === 'RUNNING' && d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === 'A'
      );
    });

  const cancelledId = `gate-${randomUUID()}`;
  const env = new MockActivityEnvironment();
  const result = env.run(temporal.runGate, t, gate(cancelledId));
  await running(cancelledId);
  env.cancel(); // as a heartbeat brings the workflow's cancellation: reason CANCELLED, cancelRequested
  await expect(result).rejects.toBeInstanceOf(CancelledFailure);
  await eventually(
    'the gate workflow cancelled',
    async () => (await client.workflow.getHandle(cancelledId).describe()).status.name === 'CANCELLED',
  );

  const keptId = `gate-${randomUUID()}`;
  const shutdownEnv = new MockActivityEnvironment();
  const kept = shutdownEnv.run(temporal.runGate, t, gate(keptId));
  await running(keptId);
  shutdownEnv.cancel('WORKER_SHUTDOWN', new ActivityCancellationDetails({ workerShutdown: true }));
  await expect(kept).rejects.toBeInstanceOf(CancelledFailure);
  const handle = client.workflow.getHandle(keptId);
  expect((await handle.describe()).status.name).toBe('RUNNING');
  await handle.signal('finish');
  expect(await handle.result()).toBe('A');
});
