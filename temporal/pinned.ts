/**
 * The running executions pinned to a version, and what can be done to them after a bad rollout: cancel,
 * terminate or signal them, or move them to another version with a versioning override (Temporal's runbook for
 * recovering pinned workflows). The workflow decides which; these only act, each on the executions
 * visibility lists as Running on the version at the time of the call.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { isGrpcServiceError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { PermanentError } from '../api/errors.js';
import { GrpcStatus } from './errors.js';
import { logWarning, sdkHeartbeat, type HeartbeatOf } from './activity-context.js';
import type { TemporalConnections, TemporalTarget } from './connections.js';
import { versionFilter } from './analysis.js';
import { serverFeatures } from './server-version.js';

const { temporal } = proto; // a CommonJS module: no named exports under ESM

/** What to do to each running pinned execution. */
export interface PinnedAction {
  kind: 'Cancel' | 'Terminate' | 'Signal';
  /** The signal to send (required for `Signal`). */
  signalName?: string;
}

/** Listed a page at a time, each acted on before the next is fetched: every one is reached, however many. */
const pageSize = 1000;
/** Calls in flight at once: thousands of executions finish in seconds without flooding the server. */
const concurrency = 10;

/**
 * The running executions pinned to the version: AutoUpgrade ones on it move on with routing by themselves, and are
 * never cancelled, terminated, signalled or re-pinned here.
 */
export const pinnedRunningOn = (t: TemporalTarget, buildId: string) =>
  `${versionFilter(t, buildId)} AND TemporalWorkflowVersioningBehavior = "Pinned" AND ExecutionStatus = "Running"`;

/** An execution that closed (or went) since visibility listed it: nothing left to do to it. */
const isGone = (err: unknown) => isGrpcServiceError(err) && err.code === GrpcStatus.NOT_FOUND;

type Execution = { workflowId: string; runId: string };

/** The activity's heartbeat (which also delivers its cancellation) and that cancellation. */
interface Progress {
  heartbeat: (details?: unknown) => void;
  cancelled: AbortSignal;
}

/** Runs `act` on every item, `concurrency` at a time, heartbeating as it goes; the number it returned true for. */
async function eachLimited<T>(items: T[], progress: Progress, act: (item: T) => Promise<boolean>): Promise<number> {
  let next = 0;
  let done = 0;
  const lane = async () => {
    while (next < items.length && !progress.cancelled.aborted) {
      if (await act(items[next++]!)) done++;
      progress.heartbeat();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, lane));
  if (progress.cancelled.aborted) throw progress.cancelled.reason; // a deletion or an abort: no more acted on
  return done;
}

export function createPinnedActivities(
  connections: TemporalConnections,
  identity: string,
  heartbeatOf: HeartbeatOf = sdkHeartbeat,
) {
  const progress = (): Progress => {
    const ctx = Context.current();
    return { heartbeat: heartbeatOf(ctx), cancelled: ctx.cancellationSignal };
  };
  async function service(t: TemporalTarget) {
    return (await connections.get(t)).workflowService;
  }

  /**
   * Acts on every running execution pinned to the version, a page at a time (thousands take longer than one call's
   * timeout: the workflow bounds the whole by its heartbeat instead). Visibility pages by a token, so acting on a page
   * does not move the next one. Returns how many were listed and how many `act` returned true for.
   */
  async function eachPinned(
    t: TemporalTarget,
    buildId: string,
    act: (e: Execution) => Promise<boolean>,
  ): Promise<{ matched: number; acted: number }> {
    const svc = await service(t);
    const p = progress();
    const query = pinnedRunningOn(t, buildId);
    let matched = 0;
    let acted = 0;
    let nextPageToken: Uint8Array | undefined;
    do {
      const res = await svc.listWorkflowExecutions({ namespace: t.temporalNamespace, pageSize, nextPageToken, query });
      const page = (res.executions ?? []).flatMap((e) =>
        e.execution?.workflowId && e.execution.runId
          ? [{ workflowId: e.execution.workflowId, runId: e.execution.runId }]
          : [],
      );
      matched += page.length;
      acted += await eachLimited(page, p, act);
      p.heartbeat();
      nextPageToken = res.nextPageToken?.length ? res.nextPageToken : undefined;
    } while (nextPageToken);
    return { matched, acted };
  }

  return {
    /** Running executions on the version (visibility). */
    async countPinned(t: TemporalTarget, buildId: string): Promise<number> {
      const { count } = await (
        await service(t)
      ).countWorkflowExecutions({
        namespace: t.temporalNamespace,
        query: pinnedRunningOn(t, buildId),
      });
      return Number(count ?? 0);
    },

    /**
     * Cancels (with `reason`), terminates (with `reason`) or signals every running execution on the version.
     * Idempotent: a terminate or signal of one closed since it was listed is skipped (the server answers NOT_FOUND);
     * a cancel of one the server accepts, closed or not, and counts in `acted`.
     */
    async actOnPinned(
      t: TemporalTarget,
      buildId: string,
      action: PinnedAction,
      reason: string,
    ): Promise<{ matched: number; acted: number }> {
      if (action.kind === 'Signal' && !action.signalName)
        throw new PermanentError('actOnPinned: a Signal action needs a signalName');
      const svc = await service(t);
      const namespace = t.temporalNamespace;
      return eachPinned(t, buildId, async (workflowExecution) => {
        try {
          if (action.kind === 'Terminate')
            await svc.terminateWorkflowExecution({ namespace, workflowExecution, reason, identity });
          else if (action.kind === 'Cancel')
            await svc.requestCancelWorkflowExecution({
              namespace,
              workflowExecution,
              reason,
              identity,
              requestId: randomUUID(),
            });
          else
            await svc.signalWorkflowExecution({
              namespace,
              workflowExecution,
              signalName: action.signalName,
              identity,
              requestId: randomUUID(),
            });
          return true;
        } catch (err) {
          if (isGone(err)) return false;
          throw err;
        }
      });
    },

    /**
     * Moves every running execution on `fromBuildId` to `toBuildId`, so their next workflow task runs on the other
     * version's workers; visibility shows the new version at once. On a server with one-time overrides (1.32), the
     * override ends with that task: the execution then keeps the behaviour its new workers report, is not held on
     * `toBuildId` by the move, and its ContinueAsNew inherits nothing of it. On older servers the override is
     * PINNED (it stays, and is inherited across ContinueAsNew). The server keeps no reason for an options update:
     * it goes to the activity's log.
     */
    async movePinned(
      t: TemporalTarget,
      fromBuildId: string,
      toBuildId: string,
      reason: string,
    ): Promise<{ matched: number; moved: number; oneTime: boolean }> {
      const connection = await connections.get(t);
      const svc = connection.workflowService;
      const { oneTimeOverride: oneTime } = await serverFeatures(connection);
      const version = { deploymentName: t.deploymentName, buildId: toBuildId };
      const versioningOverride = oneTime
        ? { oneTime: { targetDeploymentVersion: version } }
        : {
            pinned: {
              behavior:
                temporal.api.workflow.v1.VersioningOverride.PinnedOverrideBehavior.PINNED_OVERRIDE_BEHAVIOR_PINNED,
              version,
            },
          };
      logWarning(
        `moving the running executions of ${t.deploymentName} pinned to ${fromBuildId} to ${toBuildId} (${oneTime ? 'one-time' : 'pinned'} override): ${reason}`,
      );
      const { matched, acted } = await eachPinned(t, fromBuildId, async (workflowExecution) => {
        try {
          await svc.updateWorkflowExecutionOptions({
            namespace: t.temporalNamespace,
            workflowExecution,
            workflowExecutionOptions: { versioningOverride },
            updateMask: { paths: ['versioning_override'] },
            identity,
          });
          return true;
        } catch (err) {
          if (isGone(err)) return false;
          throw err;
        }
      });
      return { matched, moved: acted, oneTime };
    },
  };
}
