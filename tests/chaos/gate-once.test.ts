/**
 * A gate runs once per generation however often the controller dies during it (docs/concepts.md, "Waiting on
 * Temporal": "A retry after a crash waits on the same gate run, or reads the outcome of the one that ended
 * meanwhile. It never starts it again"). The controller — a separate process, what `npm start` runs — is SIGKILLed
 * while v2's gate runs and started again; the wait on the gate (the `runGate` activity, one attempt, heartbeat
 * timeout 10 s) times out, and the rollout makes it again, on the new process. Both moments the retry can meet are made to happen, each in a test of its own: the
 * gate still running when the retry starts, and the gate ended while no controller ran. Either way: one gate
 * execution for the resource, ever, completed, and v2 current.
 *
 * The gate is the example worker's `exampleWork` (the example's `exampleGate` returns at once and cannot be told to
 * last): it stays open for the pod's `EXAMPLE_WORKFLOW_HOLD` (an hour here) or until its `finish` signal, which the
 * test sends when the moment it wants has come, so the order of kill, retry and the gate's end is not left to timing.
 */
import type { WorkflowExecutionInfo } from '@temporalio/client';
import proto from '@temporalio/proto';
import { rolloutWorkflowId } from '../../api/names.js';
import {
  apply,
  eventually,
  resource,
  routing,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
} from '../harness/rollout-env.js';
import { chaosDir, killController, startControllerProcess, type ControllerProcess } from './chaos-harness.js';

const { PendingActivityState } = proto.temporal.api.enums.v1;
const gateType = 'exampleWork';
const gate = { workflowType: gateType, input: { checks: ['smoke'] }, timeout: '10m' };

let env: RolloutEnv;
let controller: ControllerProcess | undefined;
let logFile: string;

const startController = async () => {
  controller = await startControllerProcess({ namespace: env.namespace, logFile });
};

beforeAll(async () => {
  env = await startRolloutEnv('chaos-gate', { inProcessController: false });
  logFile = `${chaosDir(env.namespace)}/controller.log`;
  await startController();
}, 5 * 60_000);
afterAll(async () => {
  await killController(controller);
  await env?.stop();
}, 5 * 60_000);
afterEach(() => {
  expect(env.violations).toEqual([]);
});

/** The resource at `v`; v2 has the gate, and its pods hold every exampleWork (so the gate) an hour or until `finish`. */
function spec(name: string, v: string) {
  const obj = resource(env, name, {
    env: { VERSION: v, EXAMPLE_WORKFLOW_HOLD: '1h' },
    sunset: { scaledownDelay: '0s', deleteDelay: '1s' },
  });
  if (v !== 'v1') (obj.spec.rollout as Record<string, unknown>).gate = gate;
  return obj;
}

/** Every gate execution of the resource (all IDs, all runs, open and closed), as visibility lists them. */
async function gateRuns(name: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const wf of env.client.workflow.list({ query: `WorkflowType = "${gateType}"` })) {
    if (wf.workflowId.startsWith(`glidepath-gate/${env.namespace}/${name}/`)) runs.push(wf);
  }
  return runs;
}

/** Every execution (all runs) of one workflow ID. */
async function executionsOf(workflowId: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const wf of env.client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) runs.push(wf);
  return runs;
}

/** The attempts of every `runGate` activity of the rollout's workflow chain that ended: the attempt that ended it and how. */
async function runGateAttempts(name: string): Promise<{ attempt: number; outcome: string }[]> {
  const workflowId = rolloutWorkflowId(env.installation, env.namespace, name);
  const out: { attempt: number; outcome: string }[] = [];
  for (const run of await executionsOf(workflowId)) {
    const events = (await env.client.workflow.getHandle(workflowId, run.runId).fetchHistory()).events ?? [];
    const gates = new Set<string>();
    const attempts = new Map<string, number>();
    for (const e of events) {
      if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'runGate') gates.add(String(e.eventId));
      const started = e.activityTaskStartedEventAttributes;
      if (started && gates.has(String(started.scheduledEventId)))
        attempts.set(String(started.scheduledEventId), started.attempt ?? 0);
      const ended =
        (e.activityTaskCompletedEventAttributes && 'completed') ||
        (e.activityTaskFailedEventAttributes && 'failed') ||
        (e.activityTaskTimedOutEventAttributes && 'timed out') ||
        (e.activityTaskCanceledEventAttributes && 'cancelled');
      const of = String(
        (
          e.activityTaskCompletedEventAttributes ??
          e.activityTaskFailedEventAttributes ??
          e.activityTaskTimedOutEventAttributes ??
          e.activityTaskCanceledEventAttributes
        )?.scheduledEventId,
      );
      if (ended && gates.has(of)) out.push({ attempt: attempts.get(of) ?? 0, outcome: ended });
    }
  }
  return out;
}

/** v1 current, then v2 applied: returns both builds and v2's gate once it runs. */
async function gating(name: string) {
  await apply(env, spec(name, 'v1'));
  const v1 = await eventually(
    'v1 current and Ready',
    async () => {
      const s = await twdStatus(env, name);
      return s?.phase === 'Ready' ? s.currentVersion?.buildID : undefined;
    },
    120_000,
    200,
  );
  await apply(env, spec(name, 'v2'));
  const v2 = await eventually(
    'v2 the target',
    async () => {
      const b = (await twdStatus(env, name))?.targetVersion?.buildID;
      return b && b !== v1 ? b : undefined;
    },
    120_000,
    200,
  );
  const gateId = await eventually(
    `the gate of ${v2} running`,
    async () => {
      const runs = await gateRuns(name);
      const run = runs.find((r) => r.workflowId.includes(`/${v2}/`));
      if (!run) return undefined;
      return (await env.client.workflow.getHandle(run.workflowId).describe()).status.name === 'RUNNING'
        ? run.workflowId
        : undefined;
    },
    120_000,
    100,
  );
  return { v1, v2, gateId };
}

/**
 * Waits until v2 is current and Ready, nothing in flight, and Temporal routes to it; fails at once if meanwhile a
 * second gate execution of the resource shows (a new ID or a new run of the same one), rather than waiting on it.
 */
async function v2Current(name: string, v2: string): Promise<void> {
  const gates = await eventually(
    'v2 current and Ready, or a second gate execution',
    async () => {
      const runs = (await gateRuns(name)).map((r) => `${r.workflowId} run ${r.runId}: ${r.status.name}`);
      if (runs.length > 1) return runs;
      const s = await twdStatus(env, name);
      return s?.phase === 'Ready' && s.currentVersion?.buildID === v2 && !s.targetVersion ? runs : undefined;
    },
    180_000,
    200,
  );
  expect(gates).toHaveLength(1);
  expect((await routing(env, name)).current).toBe(v2);
}

/** One gate execution of the resource ever: `gateId`, one run, completed on v2 (its result is the build it ran on). */
async function gateRanOnce(name: string, gateId: string, v2: string): Promise<void> {
  const runs = await eventually(
    'the gate executions listed closed',
    async () => {
      const all = await gateRuns(name);
      return all.length > 0 && all.every((r) => r.status.name !== 'RUNNING') ? all : undefined;
    },
    30_000,
    100,
  );
  expect(runs.map((r) => [r.workflowId, r.status.name])).toEqual([[gateId, 'COMPLETED']]);
  expect((await executionsOf(gateId)).map((r) => r.status.name)).toEqual(['COMPLETED']);
  expect(await env.client.workflow.getHandle(gateId).result()).toBe(v2);
}

/**
 * v2 current, one gate run ever, and the rollout's waits on it: the first cut off by the kill (its heartbeat timed
 * out), made again by the rollout on the new process, which completed with the gate's outcome.
 */
async function rolledOutAfterOneGateRun(name: string, gateId: string, v2: string): Promise<void> {
  await v2Current(name, v2);
  await gateRanOnce(name, gateId, v2);
  expect(await runGateAttempts(name)).toEqual([
    { attempt: 1, outcome: 'timed out' },
    { attempt: 1, outcome: 'completed' },
  ]);
}

test(
  'a gate runs once when the controller is SIGKILLed during it: the restarted controller waits on the running gate',
  async () => {
    const name = 'gate-running';
    const { v2, gateId } = await gating(name);

    await killController(controller);
    await startController();
    // The wait on the gate, made again after the first timed out, is running in the new process: the gate has not
    // ended yet.
    await eventually(
      'the runGate activity made again and running in the new controller',
      async () => {
        const d = await workflowHandle(env, name).describe();
        const wait = (d.raw.pendingActivities ?? []).find((a) => a.activityType?.name === 'runGate');
        if (wait?.state !== PendingActivityState.PENDING_ACTIVITY_STATE_STARTED) return false;
        return (await runGateAttempts(name)).some((a) => a.outcome === 'timed out');
      },
      120_000,
      200,
    );
    expect((await env.client.workflow.getHandle(gateId).describe()).status.name).toBe('RUNNING');

    // The gate ends now: every gate execution of the resource that runs (one, if the retry started none of its own).
    for (const run of await gateRuns(name))
      if (run.status.name === 'RUNNING') await env.client.workflow.getHandle(run.workflowId).signal('finish');
    await rolledOutAfterOneGateRun(name, gateId, v2);
  },
  10 * 60_000,
);

test(
  'a gate runs once when it ended while the SIGKILLed controller was down: the restarted controller reads its outcome',
  async () => {
    const name = 'gate-ended';
    const { v2, gateId } = await gating(name);

    await killController(controller);
    // The gate ends while no controller runs.
    await env.client.workflow.getHandle(gateId).signal('finish');
    await eventually(
      'the gate completed',
      async () => (await env.client.workflow.getHandle(gateId).describe()).status.name === 'COMPLETED',
      30_000,
      100,
    );
    await startController();
    await rolledOutAfterOneGateRun(name, gateId, v2);
  },
  10 * 60_000,
);
