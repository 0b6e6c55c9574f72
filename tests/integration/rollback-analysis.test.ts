/**
 * Rollback in seconds, analysis from Temporal's visibility, pinned executions moved after an abort, and the
 * manager identity — end to end: real kube-apiserver + etcd, real Temporal dev server, the controller and
 * simulated pods running the real example worker (its failure share set by the pod's env).
 */
import { execFileSync } from 'node:child_process';
import { updates } from '../../workflows/messages.js';
import { workerDeploymentName } from '../../api/names.js';
import { activityTypes } from '../../scripts/history.js';
import { serverFeatures } from '../../temporal/server-version.js';
import {
  apply,
  eventually,
  resource,
  routing,
  routingInForce,
  startRolloutEnv,
  taskQueueOf,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
  type TwdStatus,
} from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('controls-it');
});
afterAll(async () => {
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

type Spec = ReturnType<typeof resource>;
/** The resource with more of `spec.rollout` / `spec.sunset` than the harness' options cover. */
function withRollout(obj: Spec, rollout: Record<string, unknown>, sunset?: Record<string, unknown>): Spec {
  const spec = obj.spec as Record<string, unknown> & {
    rollout: Record<string, unknown>;
    sunset: Record<string, unknown>;
  };
  return {
    ...obj,
    spec: { ...spec, rollout: { ...spec.rollout, ...rollout }, sunset: { ...spec.sunset, ...sunset } },
  } as Spec;
}

async function statusWhere(
  name: string,
  what: string,
  ok: (s: TwdStatus & Record<string, unknown>) => boolean,
  timeoutMs = 60_000,
) {
  return eventually(
    what,
    async () => {
      const s = (await twdStatus(env, name)) as (TwdStatus & Record<string, unknown>) | undefined;
      return s && ok(s) ? s : undefined;
    },
    timeoutMs,
  );
}
const currentIs = (name: string, buildId?: string) =>
  statusWhere(
    name,
    `${name} current = ${buildId ?? 'any'}`,
    (s) => s.phase === 'Ready' && !!s.currentVersion && (!buildId || s.currentVersion.buildID === buildId),
  );

/** Starts `n` exampleWork executions on the resource's task queue (routed by Temporal: current or ramping). */
async function startWork(name: string, n: number, prefix: string) {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      env.client.workflow.start('exampleWork', {
        taskQueue: taskQueueOf(env, name),
        workflowId: `${env.namespace}-${prefix}-${i}`,
      }),
    ),
  );
}

/** Starts executions on the resource's task queue every 250 ms until stopped: traffic for the ramp to split. */
function keepWorking(name: string, prefix: string): () => Promise<void> {
  let stopped = false;
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      await env.client.workflow.start('exampleWork', {
        taskQueue: taskQueueOf(env, name),
        workflowId: `${env.namespace}-${prefix}-${i}`,
      });
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
  };
}

test('analysis: a v2 that fails its executions is aborted during its first step; a healthy v3 is promoted', async () => {
  const analysis = { maxFailurePercentage: 20, minExecutions: 4, maxWait: '1m' };
  const spec = (version: string, failureShare: string) =>
    withRollout(
      resource(env, 'analysed', {
        strategy: 'Progressive',
        steps: [{ rampPercentage: 50, pauseDuration: '6s' }],
        env: { VERSION: version, EXAMPLE_WORKFLOW_HOLD: '0s', EXAMPLE_FAILURE_SHARE: failureShare },
      }),
      { analysis, gateFailurePolicy: 'Abort' },
    );
  await apply(env, spec('v1', '0'));
  const v1 = (await currentIs('analysed')).currentVersion!.buildID;

  await apply(env, spec('v2', '1'));
  const ramping = await statusWhere(
    'analysed',
    'v2 ramping',
    (s) => s.phase === 'Ramping' && s.targetVersion?.rampPercentage === 50,
  );
  const v2 = ramping.targetVersion!.buildID;
  // Half of new executions go to v2 and fail there; keep them coming until the analysis decided.
  const stopBad = keepWorking('analysed', 'bad');
  const aborted = await statusWhere('analysed', 'v2 aborted by its analysis', (s) => s.phase === 'Aborted');
  await stopBad();
  expect(aborted.conditions?.find((c) => c.type === 'Ready')?.reason).toBe('AnalysisFailed');
  expect(aborted.lastAbortReason).toMatch(new RegExp(`${v2}: (\\d+) of \\1 failed \\(100 %\\)`));
  expect(aborted.lastAnalysis).toMatch(/over 20 %/);
  expect(await routing(env, 'analysed')).toEqual({ current: v1, ramping: undefined, percentage: 0 });
  // The Temporal Web UI shows it in the workflow's current details.
  const metadata = (await workflowHandle(env, 'analysed').query('__temporal_workflow_metadata')) as {
    currentDetails?: string;
  };
  expect(metadata.currentDetails).toMatch(/last analysis: .*over 20 %/);
  // `kubectl get twd` says why, in its Message column.
  const table = execFileSync(
    process.env.GLIDEPATH_KUBECTL!,
    ['--kubeconfig', process.env.KUBECONFIG!, 'get', 'twd', 'analysed', '-n', env.namespace],
    { encoding: 'utf8' },
  );
  expect(table.split('\n')[0]).toMatch(/PHASE\s+AGE\s+MESSAGE/);
  expect(table).toMatch(/Aborted .*over 20 %/);

  await apply(env, spec('v3', '0'));
  await statusWhere('analysed', 'v3 ramping', (s) => s.phase === 'Ramping' && s.targetVersion?.buildID !== v2);
  const stopGood = keepWorking('analysed', 'good');
  const promoted = await currentIs('analysed');
  await stopGood();
  expect(promoted.currentVersion!.buildID).not.toBe(v1);
  expect(promoted.lastAnalysis).toMatch(/0 of \d+ failed \(0 %\).*within limits/);
}, 240_000);

test('onAbort.movePinned: executions pinned to an aborted v2 complete on v1', async () => {
  const spec = (version: string) =>
    withRollout(
      resource(env, 'moved', {
        strategy: 'Progressive',
        steps: [{ rampPercentage: 50, pauseDuration: '10m' }],
        env: { VERSION: version },
      }),
      { onAbort: { movePinned: true } },
    );
  await apply(env, spec('v1'));
  const v1 = (await currentIs('moved')).currentVersion!.buildID;
  await apply(env, spec('v2'));
  const v2 = (await statusWhere('moved', 'v2 ramping', (s) => s.phase === 'Ramping')).targetVersion!.buildID;
  await routingInForce(env, 'moved');
  // Executions held open (EXAMPLE_WORKFLOW_HOLD 1h); about half start on v2, pinned there.
  const handles = await startWork('moved', 12, 'pinned');
  const onV2 = await eventually('some executions pinned to v2', async () => {
    const on = [];
    for (const h of handles)
      if ((await h.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === v2) on.push(h);
    return on.length > 0 && on.length + (await countOn(v1)) === handles.length ? on : undefined;
  });

  const answer = await workflowHandle(env, 'moved').executeUpdate(updates.abort, {
    args: [{ reason: 'bad build', identity: 'test', buildId: v2 }],
  });
  expect(answer).toMatchObject({ phase: 'Aborted', lastAbortReason: 'bad build' });
  await eventually('PinnedExecutionsMoved', async () => (await countOn(v2)) === 0 || undefined);
  // A one-time move (server 1.32) ends with the execution's next workflow task, on v1; an older server's pinned
  // override stays. A signal no handler takes is such a task.
  const { oneTimeOverride } = await serverFeatures(env.connection);
  await onV2[0]!.signal('nudge');
  await eventually(oneTimeOverride ? 'the move ended on v1' : 'the move held on v1', async () => {
    const info = (await onV2[0]!.describe()).raw.workflowExecutionInfo?.versioningInfo;
    if (info?.deploymentVersion?.buildId !== v1) return undefined;
    return (oneTimeOverride ? !info.versioningOverride : info.versioningOverride?.pinned?.version?.buildId === v1)
      ? true
      : undefined;
  });
  for (const h of onV2) await h.signal('finish');
  const results = await Promise.all(onV2.map((h) => h.result()));
  expect(results).toEqual(onV2.map(() => v1));
}, 180_000);

async function countOn(buildId: string): Promise<number> {
  const { count } = await env.client.workflow.count(
    `TemporalWorkerDeploymentVersion = "${workerDeploymentName(env.namespace, 'moved')}:${buildId}" AND ExecutionStatus = "Running"`,
  );
  return count;
}

test('the manager identity held by someone else pauses the rollout; handed back, it goes on', async () => {
  await apply(env, resource(env, 'managed', { env: { VERSION: 'v1' } }));
  const v1 = (await currentIs('managed')).currentVersion!.buildID;
  const svc = env.connection.workflowService;
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const deploymentName = workerDeploymentName(env.namespace, 'managed');
  const setManager = async (managerIdentity: string) => {
    const { conflictToken } = await svc.describeWorkerDeployment({ namespace, deploymentName });
    await svc.setWorkerDeploymentManager({
      namespace,
      deploymentName,
      managerIdentity,
      conflictToken,
      identity: 'alice',
    });
  };
  await setManager('alice');

  await apply(env, resource(env, 'managed', { env: { VERSION: 'v2' } }));
  const held = await statusWhere(
    'managed',
    'paused: ManagerIdentityHeld',
    (s) => s.phase === 'Paused' && s.conditions?.[0]?.reason === 'ManagerIdentityHeld',
  );
  expect(held.message).toMatch(/held by alice/);
  expect(await workflowHandle(env, 'managed').query('status')).toMatchObject({ paused: true, managerHeldBy: 'alice' });
  expect((await routing(env, 'managed')).current).toBe(v1);

  await setManager(''); // handed back
  const done = await currentIs('managed');
  expect(done.currentVersion!.buildID).not.toBe(v1);
}, 180_000);

test('rollback in seconds: the control and the spec going back both switch to v1 at once, no steps, and say RolledBack', async () => {
  const spec = (version: string) =>
    resource(env, 'rb', {
      strategy: 'Progressive',
      steps: [{ rampPercentage: 50, pauseDuration: '2s' }],
      env: { VERSION: version },
      sunset: { scaledownDelay: '1h', deleteDelay: '2h' },
    });
  await apply(env, spec('v1'));
  const v1 = (await currentIs('rb')).currentVersion!.buildID;
  await apply(env, spec('v2'));
  const v2 = (
    await statusWhere('rb', 'v2 current after its step', (s) => s.phase === 'Ready' && s.currentVersion?.buildID !== v1)
  ).currentVersion!.buildID;

  // The control: answered once routing changed.
  const sent = Date.now();
  const answer = await workflowHandle(env, 'rb').executeUpdate(updates.rollback, {
    args: [{ reason: 'errors in prod', identity: 'alice' }],
  });
  const answeredMs = Date.now() - sent;
  expect(answer).toMatchObject({ current: v1, phase: 'Ready', reason: 'RolledBack' });
  expect((await routing(env, 'rb')).current).toBe(v1);
  const s = await statusWhere('rb', 'status says routing differs from the spec', (s) => !!s.routing);
  expect(s.routing).toMatchObject({ currentBuildID: v1, specBuildID: v2 });
  console.log(`rollback control → answered with routing changed: ${answeredMs} ms`);

  // `retry` rolls the spec's build out again, through its step.
  await workflowHandle(env, 'rb').executeUpdate(updates.retry, { args: [{ identity: 'alice' }] });
  await currentIs('rb', v2);

  // The spec going back to v1's template: current at once, no ramp.
  const before = (await workflowHandle(env, 'rb').fetchHistory()).events?.length ?? 0;
  await apply(env, spec('v1'));
  const back = await statusWhere(
    'rb',
    'v1 current again by spec',
    (s) => s.currentVersion?.buildID === v1 && s.phase === 'Ready',
  );
  expect(back.conditions?.[0]?.reason).toBe('RolledBack');
  const events = ((await workflowHandle(env, 'rb').fetchHistory()).events ?? []).slice(before);
  const activities = activityTypes(events);
  expect(activities).toContain('setCurrent');
  expect(activities).not.toContain('setRamping');
  expect(activities).not.toContain('awaitVersionRegistered');
}, 180_000);
