/**
 * The workflow tier's driver of one RolloutWorkflow: started as the watcher starts it, for a new owner with a fake
 * world of its own, and steered and read as people and the watcher do (spec, controls, queries).
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import type { SignalDefinition, UpdateDefinition } from '@temporalio/common';
import proto from '@temporalio/proto';
import { rolloutWorkflowId } from '../../api/names.js';
import type { Desired, Owner } from '../../api/resource.js';
import type { Timings } from '../../api/timings.js';
import * as messages from '../../workflows/messages.js';
import type { RolloutWorkflow } from '../../workflows/rollout-workflow.js';
import type { HistoryEntry, RolloutStatus } from '../../workflows/state.js';
import { eventually } from '../harness/eventually.js';
import { desired, testInstallation, type FakeRig, type FakeWorld } from './fake-world.js';

export type ControlRequest = messages.PromoteRequest & messages.RollbackRequest & messages.AbortRequest;

export interface Rollout {
  world: FakeWorld;
  owner: Owner;
  workflowId: string;
  firstRunId: string;
  /** The latest run of the chain. */
  handle(): WorkflowHandle<typeof RolloutWorkflow>;
  /** The run ID of the latest run. */
  runId(): Promise<string>;
  spec(d: Desired): Promise<void>;
  status(): Promise<RolloutStatus>;
  history(): Promise<HistoryEntry[]>;
  /** The control as an update: its answer (the status once it took effect), or a rejection. */
  control(name: messages.ControlName, req?: ControlRequest): Promise<RolloutStatus>;
  /** The control as a signal. */
  signal(name: messages.ControlName, req?: ControlRequest): Promise<void>;
  /** The status once `probe` holds. */
  until(what: string, probe: (s: RolloutStatus) => boolean): Promise<RolloutStatus>;
  /** Waits until the workflow has continued as new past the run `runId`; returns the latest run's ID. */
  continuedPast(runId: string): Promise<string>;
  /** Why each workflow task of every run so far failed (none, if all is well). */
  taskFailures(): Promise<string[]>;
}

const taskFailed = proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED;
const unhandledCommand =
  proto.temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;

/** Starts a RolloutWorkflow for a new owner named after `label`, its world with `timings`. */
export async function startRollout(rig: FakeRig, label: string, timings: Partial<Timings>): Promise<Rollout> {
  const { client } = rig;
  const owner = { namespace: 'shop', name: `${label}-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
  const world = rig.worlds.create(owner, workflowId, timings);
  const started = await rig.start(workflowId, owner);
  const handle = () => client.workflow.getHandle<typeof RolloutWorkflow>(workflowId);
  const status = () => handle().query(messages.status);
  const runId = async () => (await handle().describe()).runId;
  return {
    world,
    owner,
    workflowId,
    firstRunId: started.firstExecutionRunId,
    handle,
    runId,
    spec: (d) => world.applySpec(d),
    status,
    history: () => handle().query(messages.history),
    control: (name, req = {}) =>
      handle().executeUpdate(messages.updates[name] as UpdateDefinition<RolloutStatus, [ControlRequest]>, {
        args: [req],
      }),
    signal: (name, req = {}) =>
      handle().signal(messages.controlSignals[name] as SignalDefinition<[ControlRequest?]>, req),
    until: (what, probe) =>
      eventually(what, async () => {
        const s = await status();
        return probe(s) ? s : undefined;
      }),
    continuedPast: (before) =>
      eventually(`a ContinueAsNew after run ${before}`, async () => {
        const now = await runId();
        return now !== before ? now : undefined;
      }),
    taskFailures: async () => {
      const failures: string[] = [];
      for await (const run of client.workflow.list({ query: `WorkflowId = "${workflowId}"` })) {
        const history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
        for (const e of history.events ?? []) {
          // UnhandledCommand is the server's "signals came in while you completed: run the task again" (a
          // ContinueAsNew racing pod-status signals), not a failure of the workflow's code.
          const cause = e.workflowTaskFailedEventAttributes?.cause;
          if (e.eventType === taskFailed && cause !== unhandledCommand)
            failures.push(e.workflowTaskFailedEventAttributes?.failure?.message ?? 'workflow task failed');
        }
      }
      return failures;
    },
  };
}

/** A rollout whose first version (`first`: v1, AllAtOnce, generation 1) is current. */
export async function withCurrentV1(
  rig: FakeRig,
  label: string,
  timings: Partial<Timings>,
  first: Desired = desired(1, 'v1'),
): Promise<Rollout> {
  const r = await startRollout(rig, label, timings);
  await r.spec(first);
  await r.until('v1 to be current', (s) => s.phase === 'Ready' && s.current === 'v1');
  return r;
}
