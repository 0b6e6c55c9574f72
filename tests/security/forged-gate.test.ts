/**
 * A forged completion of a gate: someone with Temporal access only completes the rollout's pending `runGate` by hand
 * (`temporal activity complete`) while the spec's gate workflow still runs (the example worker's `exampleWork`,
 * which its pods hold for an hour: it never ends by itself within the test). A forged pass routes nothing: the
 * set-current reads the gate's own run and waits until it has passed; then the rollout goes on, and nothing outside
 * what the resource declares happens (no Deployment but v1's and v2's, routing only to v1 or v2, no other gate run,
 * no write outside the resource's namespace). A forged failure is a failed gate: the rollout aborts or pauses as
 * `rollout.gateFailurePolicy` says, and v1 keeps its routing and its pods.
 */
import { WorkflowNotFoundError, type WorkflowExecutionInfo } from '@temporalio/client';
import { completedActivities } from '../../scripts/history.js';
import {
  apply,
  deployments,
  eventually,
  resource,
  routing,
  routingCalls,
  twdStatus,
  workflowHandle,
  type TwdStatus,
} from '../harness/rollout-env.js';
import {
  byKube,
  completeByHand,
  forge,
  forgeStandalone,
  readyWith,
  saveHistory,
  snapshot,
  startSecurityWorld,
  tns,
  uidOf,
  type Audit,
  type SecurityWorld,
} from './security-env.js';

const gateType = 'exampleWork';
const gate = { workflowType: gateType, input: { checks: ['smoke'] }, timeout: '10m' };
let world: SecurityWorld;
const names: string[] = [];
/** Gate runs the tests leave open (an hour's hold): terminated after each test. */
const openGates: string[] = [];

beforeAll(async () => {
  world = await startSecurityWorld('forged-gate');
}, 180_000);
afterAll(async () => {
  for (const name of world ? names : []) await saveHistory(world, name, `${name}-history.json`);
  await world?.stop();
});
afterEach(async () => {
  for (const id of openGates.splice(0))
    await world.env.client.workflow
      .getHandle(id)
      .terminate('the test is over')
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError) && !/already completed/i.test(String(err))) throw err;
      });
  expect(world.env.violations).toEqual([]);
});

/** The resource at `marker`, with the gate from v2 on (`policy`: rollout.gateFailurePolicy). */
function spec(name: string, marker: string, o: { gate: boolean; policy?: 'Abort' | 'Pause' }) {
  const obj = resource(world.env, name, { env: { VERSION: marker } });
  const rollout = obj.spec.rollout as Record<string, unknown>;
  if (o.gate) rollout.gate = gate;
  if (o.policy) rollout.gateFailurePolicy = o.policy;
  return obj;
}

/** Every gate run of the resource (open and closed), as visibility lists them. */
async function gateRuns(name: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const wf of world.env.client.workflow.list({ query: `WorkflowType = "${gateType}"` }))
    if (wf.workflowId.startsWith(`glidepath-gate/${world.env.namespace}/${name}/`)) runs.push(wf);
  return runs;
}

/** The resource's status once its phase is `phase`, or once a build other than `v1` is current (then the test fails). */
async function phaseIs(name: string, phase: string, v1: string): Promise<TwdStatus> {
  const status = await eventually(
    `${name} phase ${phase}, or another build than v1 current`,
    async () => {
      const s = await twdStatus(world.env, name);
      const current = s?.currentVersion?.buildID;
      return s?.phase === phase || (current && current !== v1) ? s : undefined;
    },
    90_000,
    100,
  );
  expect({ phase: status.phase, current: status.currentVersion?.buildID }).toEqual({ phase, current: v1 });
  return status;
}

/**
 * v1 current (no gate); v2 applied with the gate, which runs pinned to v2 and holds; its pending `runGate` completed
 * by hand with `result`. Returns the builds, the gate run's ID and where the audit log stood before the forgery.
 */
async function forgeGate(name: string, result: { passed: boolean; message: string }, policy?: 'Abort' | 'Pause') {
  const { env } = world;
  names.push(name);
  await apply(env, spec(name, 'v1', { gate: false }));
  const v1 = await readyWith(env, name, 'v1');
  await apply(env, spec(name, 'v2', { gate: true, policy }));
  const handle = workflowHandle(env, name);
  const activityId = await eventually(
    'the rollout waiting in runGate',
    async () =>
      (await handle.describe()).raw.pendingActivities?.find((a) => a.activityType?.name === 'runGate')?.activityId ||
      undefined,
    90_000,
  );
  const run = await eventually('the gate running', async () => {
    const runs = await gateRuns(name);
    return runs.length === 1 && runs[0]!.status.name === 'RUNNING' ? runs[0] : undefined;
  });
  openGates.push(run.workflowId);
  const v2 = (await twdStatus(env, name))?.targetVersion?.buildID;
  expect(v2).toBeDefined();
  expect(run.workflowId).toContain(`/${v2}/`);
  const auditFrom = world.auditSize();

  const forged = await completeByHand(handle.workflowId, activityId, JSON.stringify(result));
  expect(forged).toMatchObject({ ok: true });
  await eventually('the forged verdict in the rollout’s history', async () =>
    completedActivities((await handle.fetchHistory()).events ?? []).some(
      (a) => a.type === 'runGate' && JSON.stringify(a.result) === JSON.stringify(result),
    ),
  );
  return { v1, v2: v2!, gateId: run.workflowId, auditFrom };
}

/** Writes since `from` that are not the resource's own: its status, Events, and its own Deployments (`own` names). */
function writesBeyond(from: number, own: string[]): string[] {
  const { env } = world;
  const allowed = (a: Audit) =>
    a.objectRef?.namespace === env.namespace &&
    ((a.objectRef.resource === 'events' && a.verb === 'create') ||
      (a.objectRef.resource === 'temporalworkerdeployments' && a.objectRef.subresource === 'status') ||
      (a.objectRef.resource === 'deployments' && own.includes(a.objectRef.name ?? '')));
  return world
    .audit(from)
    .filter((a) => !byKube(a) && !['get', 'list', 'watch'].includes(a.verb) && !allowed(a))
    .map((a) => `${a.verb} ${a.requestURI}`);
}

test('a forged pass routes nothing while the gate’s own run has not passed; once it passes, v2 becomes current and nothing beyond v1 and v2 is touched', async () => {
  const { env } = world;
  const name = 'pass';
  const { v1, v2, gateId, auditFrom } = await forgeGate(name, { passed: true, message: 'forged' });
  const own = [...(await deployments(env, name)).values()].map((d) => d.metadata!.name!);
  expect(own).toHaveLength(2);

  // The rollout believes the gate passed; the set-current reads the gate's run, still running, and is refused (and
  // tried again: the run may pass yet). v1 stays current, nothing is routed to v2.
  const handle = workflowHandle(env, name);
  const refusal = await eventually(
    'the set-current of v2 refused for its rollout gate',
    async () =>
      ((await handle.fetchHistory()).events ?? [])
        .map((e) => e.activityTaskFailedEventAttributes?.failure?.message ?? '')
        .find((m) => m.includes(`routing to ${v2} before its rollout gate passed`)) || undefined,
    90_000,
  );
  expect(refusal).toContain(`the gate run ${gateId} is still running`);
  // The same call made by the attacker: past the gate as `promoted` (from a workflow of theirs, and as a standalone
  // activity), or with a run that is not the gate's: refused.
  const ref = {
    owner: { namespace: env.namespace, name, uid: await uidOf(env, name), kind: 'TemporalWorkerDeployment' },
    temporalNamespace: tns,
    hostPort: process.env.TEMPORAL_ADDRESS!,
  };
  const calls = [
    { gate: 'promoted' },
    { gate: handle.workflowId },
    { gate: `glidepath-gate/${env.namespace}/${name}/${ref.owner.uid}/${v2}/rollout/attacker` },
  ].map((o, i) => ({
    id: `forged-${i}`,
    activity: 'setCurrent',
    taskQueue: env.controller!.taskQueue,
    args: [ref, v2, o],
  }));
  const outcomes = [
    ...(await forge(env, `attacker-${name}`, calls)),
    ...(await forgeStandalone(`attacker-${name}`, calls.slice(0, 1))),
  ];
  expect(
    outcomes.map((o) =>
      o.outcome === 'failed' ? `${o.type}: ${/before its rollout gate passed/.test(o.message)}` : o.outcome,
    ),
  ).toEqual(['Refused: true', 'Refused: true', 'Refused: true', 'Refused: true']);
  expect(await routing(env, name)).toEqual({ current: v1, percentage: 0 });
  expect((await routingCalls(env, name)).filter((c) => c.buildId === v2)).toEqual([]);

  // The gate's own run passes: the same set-current, tried again, routes to v2; v1 is sunset.
  await env.client.workflow.getHandle(gateId).signal('finish');
  expect(await readyWith(env, name, 'v2')).toBe(v2);
  await eventually('v1 scaled to 0', async () => (await deployments(env, name)).get(v1)?.spec?.replicas === 0, 60_000);

  // Nothing beyond what the resource declares: its two Deployments, routing to v1 and v2 only (a ramp's clearing is
  // the empty build), the one gate run of v2, no other write.
  expect([...(await deployments(env, name)).keys()].every((b) => b === v1 || b === v2)).toBe(true);
  const elsewhere = (await env.apps.listDeploymentForAllNamespaces()).items.filter(
    (d) => d.metadata?.namespace !== env.namespace,
  );
  expect(elsewhere.map((d) => `${d.metadata?.namespace}/${d.metadata?.name}`)).toEqual([]);
  expect((await routingCalls(env, name)).map((c) => c.buildId).filter((b) => b !== v1 && b !== v2 && b !== '')).toEqual(
    [],
  );
  const routed = await snapshot(env, name);
  expect(routed.routing.versions.filter((b) => b !== v1 && b !== v2)).toEqual([]);
  expect(routed.routing.current).toBe(v2);
  const runs = await gateRuns(name);
  expect(runs.map((r) => [r.workflowId, r.status.name])).toEqual([[gateId, 'COMPLETED']]);
  expect(writesBeyond(auditFrom, own)).toEqual([]);
}, 300_000);

test('a forged failure under gateFailurePolicy Abort aborts v2 without touching v1', async () => {
  const { env } = world;
  const name = 'abort';
  const { v1, v2, gateId, auditFrom } = await forgeGate(name, { passed: false, message: 'forged failure' }, 'Abort');
  const v1Before = (await deployments(env, name)).get(v1)!;
  const own = [...(await deployments(env, name)).values()].map((d) => d.metadata!.name!);
  const status = await phaseIs(name, 'Aborted', v1);
  expect(status.lastAbortReason).toContain('forged failure');
  expect(status.currentVersion?.buildID).toBe(v1);
  // The aborted v2 is sunset once its one pinned execution, the gate run, ends: then v1 is looked at again.
  await env.client.workflow.getHandle(gateId).terminate('the gate is over');
  await eventually('the aborted v2 sunset', async () => !(await deployments(env, name)).has(v2), 120_000);
  expect(await routing(env, name)).toEqual({ current: v1, percentage: 0 });
  expect((await routingCalls(env, name)).filter((c) => c.buildId === v2)).toEqual([]);
  const v1After = (await deployments(env, name)).get(v1)!;
  expect({ replicas: v1After.spec?.replicas, generation: v1After.metadata?.generation }).toEqual({
    replicas: 1,
    generation: v1Before.metadata?.generation,
  });
  expect(env.simulator.podCount(env.namespace, v1After.metadata!.name!)).toBe(1);
  expect(writesBeyond(auditFrom, own)).toEqual([]);
}, 300_000);

test('a forged failure under gateFailurePolicy Pause pauses the rollout without touching v1', async () => {
  const { env } = world;
  const name = 'pause';
  const { v1, v2, auditFrom } = await forgeGate(name, { passed: false, message: 'forged failure' }, 'Pause');
  const v1Before = (await deployments(env, name)).get(v1)!;
  const status = await phaseIs(name, 'Paused', v1);
  expect(status.message).toContain('forged failure');
  expect(status.currentVersion?.buildID).toBe(v1);
  expect(status.targetVersion?.buildID).toBe(v2);
  expect(await routing(env, name)).toEqual({ current: v1, percentage: 0 });
  expect((await routingCalls(env, name)).filter((c) => c.buildId === v2)).toEqual([]);
  const v1After = (await deployments(env, name)).get(v1)!;
  expect({ replicas: v1After.spec?.replicas, generation: v1After.metadata?.generation }).toEqual({
    replicas: 1,
    generation: v1Before.metadata?.generation,
  });
  expect(env.simulator.podCount(env.namespace, v1After.metadata!.name!)).toBe(1);
  const own = [...(await deployments(env, name)).values()].map((d) => d.metadata!.name!);
  expect(writesBeyond(auditFrom, own)).toEqual([]);
}, 300_000);

test('a forged pass of a step’s gate ramps no further until that gate’s own run passes', async () => {
  const { env } = world;
  const name = 'step';
  names.push(name);
  await apply(env, spec(name, 'v1', { gate: false }));
  const v1 = await readyWith(env, name, 'v1');
  const stepped = resource(env, name, {
    env: { VERSION: 'v2' },
    strategy: 'Progressive',
    steps: [
      { rampPercentage: 10, pauseDuration: '1s' },
      { rampPercentage: 50, pauseDuration: '1s' },
    ],
  });
  (stepped.spec.rollout.steps![0] as Record<string, unknown>).gate = gate;
  await apply(env, stepped);
  const handle = workflowHandle(env, name);
  const activityId = await eventually(
    'the rollout waiting in runGate after step 1',
    async () =>
      (await handle.describe()).raw.pendingActivities?.find((a) => a.activityType?.name === 'runGate')?.activityId ||
      undefined,
    90_000,
  );
  const run = await eventually('the step’s gate running', async () => {
    const runs = await gateRuns(name);
    return runs.length === 1 && runs[0]!.status.name === 'RUNNING' ? runs[0] : undefined;
  });
  openGates.push(run.workflowId);
  const v2 = (await twdStatus(env, name))?.targetVersion?.buildID;
  expect(run.workflowId).toContain(`/${v2}/step-1/`);
  expect(await routing(env, name)).toMatchObject({ current: v1, ramping: v2, percentage: 10 });

  expect(await completeByHand(handle.workflowId, activityId, '{"passed":true,"message":"forged"}')).toMatchObject({
    ok: true,
  });
  await eventually('the ramp to 50% refused for the step’s gate', async () =>
    ((await handle.fetchHistory()).events ?? []).some((e) =>
      e.activityTaskFailedEventAttributes?.failure?.message?.includes(
        `routing to ${v2} before its step-1 gate passed: the gate run ${run.workflowId} is still running`,
      ),
    ),
  );
  expect(await routing(env, name)).toMatchObject({ current: v1, ramping: v2, percentage: 10 });

  // The gate's own run passes: the ramp goes on to 50 %, then v2 becomes current.
  await env.client.workflow.getHandle(run.workflowId).signal('finish');
  expect(await readyWith(env, name, 'v2')).toBe(v2);
  expect((await routingCalls(env, name)).filter((c) => c.buildId === v2).map((c) => c.percentage)).toEqual(
    expect.arrayContaining([10, 50]),
  );
}, 300_000);
