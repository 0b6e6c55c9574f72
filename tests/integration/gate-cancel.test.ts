/**
 * A running gate is cancelled in Temporal when its rollout stops needing it (docs/concepts.md, "Waiting on Temporal":
 * "An abort, a superseding spec or a deletion cancels a running gate at once"): an `abort` during the gate, and a new
 * build applied while the old build's gate runs. The gate is the example worker's `exampleWork` (the example's
 * `exampleGate` returns at once): it stays open for the pod's `EXAMPLE_WORKFLOW_HOLD`, here an hour, so only a
 * cancellation (or a termination) ends it within the test.
 */
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { updates } from '../../workflows/messages.js';
import {
  apply,
  eventually,
  resource,
  routing,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
  type TwdStatus,
} from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('gate-cancel');
});
afterAll(async () => {
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

const gateType = 'exampleWork';
const gate = { workflowType: gateType, input: { checks: ['smoke'] }, timeout: '10m' };

/** The resource at `v`, its pods holding every exampleWork (so the gate) for `hold`, with the gate or without. */
function spec(name: string, v: string, o: { gate: boolean; hold: string }) {
  const obj = resource(env, name, { env: { VERSION: v, EXAMPLE_WORKFLOW_HOLD: o.hold } });
  if (o.gate) (obj.spec.rollout as Record<string, unknown>).gate = gate;
  return obj;
}

async function phaseIs(name: string, phase: string, timeoutMs = 60_000): Promise<TwdStatus> {
  return eventually(
    `${name} phase ${phase}`,
    async () => {
      const s = await twdStatus(env, name);
      return s?.phase === phase ? s : undefined;
    },
    timeoutMs,
    100,
  );
}

/** Every gate execution of the resource (all runs, open and closed), as visibility lists them. */
async function gateRuns(name: string): Promise<WorkflowExecutionInfo[]> {
  const runs: WorkflowExecutionInfo[] = [];
  for await (const wf of env.client.workflow.list({ query: `WorkflowType = "${gateType}"` })) {
    if (wf.workflowId.startsWith(`glidepath-gate/${env.namespace}/${name}/`)) runs.push(wf);
  }
  return runs;
}

/** The resource's gate executions once visibility lists them all closed. */
function gateRunsClosed(name: string): Promise<WorkflowExecutionInfo[]> {
  return eventually(
    `${name}'s gate executions listed closed`,
    async () => {
      const runs = await gateRuns(name);
      return runs.length > 0 && runs.every((r) => r.status.name !== 'RUNNING') ? runs : undefined;
    },
    30_000,
    100,
  );
}

/** The gate of `buildId` once it runs (its workflow ID names the build), as Temporal describes it. */
async function gateRunning(name: string, buildId: string): Promise<string> {
  return eventually(
    `the gate of ${buildId} running`,
    async () => {
      const run = (await gateRuns(name)).find((r) => r.workflowId.includes(`/${buildId}/`));
      if (!run) return undefined;
      const d = await env.client.workflow.getHandle(run.workflowId).describe();
      return d.status.name === 'RUNNING' ? run.workflowId : undefined;
    },
    90_000,
    100,
  );
}

/** Waits until the gate execution is closed by a cancellation (or a termination); returns how it closed. */
async function gateCancelled(workflowId: string): Promise<string> {
  return eventually(
    `the gate ${workflowId} cancelled`,
    async () => {
      const { status } = await env.client.workflow.getHandle(workflowId).describe();
      // Closed any other way (COMPLETED, FAILED, TIMED_OUT) is a failure: nothing else ends it within the test.
      if (status.name !== 'RUNNING' && status.name !== 'CANCELLED' && status.name !== 'TERMINATED')
        throw new Error(`the gate closed ${status.name}`);
      return status.name === 'CANCELLED' || status.name === 'TERMINATED' ? status.name : undefined;
    },
    30_000,
    100,
  );
}

/** v1 current (no gate), then v2 with a gate that holds an hour: returns both builds and v2's gate once it runs. */
async function gating(name: string) {
  await apply(env, spec(name, 'v1', { gate: false, hold: '1h' }));
  const v1 = (await phaseIs(name, 'Ready')).currentVersion!.buildID;
  await apply(env, spec(name, 'v2', { gate: true, hold: '1h' }));
  const v2 = (await phaseIs(name, 'Gating', 90_000)).targetVersion!.buildID;
  expect(v2).not.toBe(v1);
  const gateId = await gateRunning(name, v2);
  return { v1, v2, gateId };
}

test('abort cancels a running gate: the gate execution is cancelled, the rollout Aborted, v1 stays current', async () => {
  const name = 'abort-gate';
  const { v1, v2, gateId } = await gating(name);
  // The gate runs pinned to v2.
  const pinned = (await env.client.workflow.getHandle(gateId).describe()).raw.workflowExecutionInfo?.versioningInfo
    ?.versioningOverride;
  expect(JSON.stringify(pinned)).toContain(v2);

  const reason = 'the gate takes too long';
  await workflowHandle(env, name).executeUpdate(updates.abort, {
    args: [{ reason, identity: 'gate-cancel test', buildId: v2 }],
  });

  expect(['CANCELLED', 'TERMINATED']).toContain(await gateCancelled(gateId));
  const status = await phaseIs(name, 'Aborted');
  expect(status.lastAbortReason).toBe(reason);
  expect(status.currentVersion?.buildID).toBe(v1);
  expect(await routing(env, name)).toMatchObject({ current: v1, ramping: undefined });
  // One gate execution, never started again after the abort.
  const runs = await gateRunsClosed(name);
  expect(runs.map((r) => [r.workflowId, r.status.name])).toEqual([
    [gateId, expect.stringMatching(/^(CANCELLED|TERMINATED)$/)],
  ]);
});

test("a superseding spec cancels the running gate: v3 applied while v2's gate runs", async () => {
  const name = 'supersede-gate';
  const { v1, v2, gateId } = await gating(name);

  // v3, same gate; its pods end their exampleWork at once, so v3's own gate passes.
  await apply(env, spec(name, 'v3', { gate: true, hold: '0s' }));

  expect(['CANCELLED', 'TERMINATED']).toContain(await gateCancelled(gateId));
  const ready = await eventually(
    'v3 current and Ready',
    async () => {
      const s = await twdStatus(env, name);
      const current = s?.currentVersion?.buildID;
      return s?.phase === 'Ready' && current && current !== v1 && current !== v2 && !s.targetVersion ? s : undefined;
    },
    90_000,
    100,
  );
  const v3 = ready.currentVersion!.buildID;
  expect(await routing(env, name)).toMatchObject({ current: v3 });
  // v2's gate once, cancelled; v3's gate once, completed; nothing else.
  const runs = await gateRunsClosed(name);
  const summary = runs.map((r) => ({
    build: [v2, v3].find((b) => r.workflowId.includes(`/${b}/`)) ?? r.workflowId,
    status: r.status.name,
  }));
  expect(summary).toHaveLength(2);
  expect(summary).toEqual(
    expect.arrayContaining([
      { build: v2, status: expect.stringMatching(/^(CANCELLED|TERMINATED)$/) },
      { build: v3, status: 'COMPLETED' },
    ]),
  );
});
