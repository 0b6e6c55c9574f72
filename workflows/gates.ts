/**
 * Gates: the user's workflow, started pinned to the target version before it gets traffic (or after a
 * step). Its input is read inside the activity that starts it, so a Secret never enters this history.
 */
import { CancellationScope, isCancellation, type ActivityOptions } from '@temporalio/workflow';
import { gateWorkflowIdPrefix, promotedPastGate } from '../api/names.js';
import type { Gate } from '../api/temporal-worker-deployment.js';
import type { RolloutContext } from './context.js';
import type { RolloutState, Target } from './state.js';
import { isPaused } from './decisions.js';

const cancelOptions: ActivityOptions = {
  startToCloseTimeout: '10s',
  retry: { initialInterval: '500ms', maximumAttempts: 3 },
};

/**
 * How a gate ended for the rollout: passed, promoted past after it failed (go on), promoted past without the
 * remaining steps, or stop (aborted).
 */
export type GateOutcome = 'passed' | 'promoted' | 'promotedFully' | 'aborted';

/**
 * What let the target past the gates before its next routing change, for the routing activity to read: the latest
 * step gate it passed, else its rollout gate; a promote (pending, or to current) or a rollback counts as `promoted`.
 */
export function gateEvidence(state: RolloutState, target: Target): string | undefined {
  const promoted = state.promote !== undefined && (state.promote.buildId ?? target.buildId) === target.buildId;
  if (promoted || target.promotedFully || target.rollback) return promotedPastGate;
  return target.stepGatePassedBy ?? target.gatePassedBy;
}

/** Runs the gate pinned to the target; on failure aborts or pauses, as `gateFailurePolicy` says. */
export async function passGate(
  ctx: RolloutContext,
  gate: Gate,
  registration: NonNullable<Target['registration']>,
  label: string,
): Promise<GateOutcome> {
  const { owner, state } = ctx;
  const target = state.target!;
  const { buildId } = target;
  for (;;) {
    ctx.transition('Gating', 'Gating', `running ${gate.workflowType} on ${buildId} (${label})`);
    // Once per lifecycle (the uid), generation that changed the gate, and person's request (`retry`, `resume`: they
    // clear the IDs). Kept in the state, so a restart, a ContinueAsNew or an unrelated edit waits on the same run.
    const ids = (target.gateRunIds ??= {});
    const workflowId = (ids[label] ??=
      `${gateWorkflowIdPrefix(owner, buildId, label)}${state.desired!.generation}.${(state.gateSeq = (state.gateSeq ?? 0) + 1)}`);
    const t = ctx.temporalTarget();
    let result: { passed: boolean; message: string };
    try {
      result = await ctx.call(`gate ${gate.workflowType}`, () =>
        ctx.gateWaits().runGate(t, {
          buildId,
          gate: label,
          // A workflow task queue of the target: an activity-only queue would never run it.
          taskQueue: gate.taskQueue ?? registration.workflowTaskQueues?.[0] ?? registration.taskQueues[0] ?? '',
          workflowId,
        }),
      );
    } catch (err) {
      // An abort, a superseding spec or a deletion: the gate workflow goes too, now (a few tries: an unreachable
      // server must not hold up an abort or a deletion; the waiting activity cancels it too when it hears).
      if (isCancellation(err)) {
        await CancellationScope.nonCancellable(() =>
          ctx.withSummary(`cancel the gate ${gate.workflowType}`, () =>
            ctx.activities(cancelOptions).cancelGate(t, workflowId),
          ),
        ).catch(() => undefined);
      }
      throw err;
    }
    if (result.passed) return 'passed';
    const why = `gate ${gate.workflowType} failed on ${buildId}: ${result.message}`;
    if (ctx.spec().rollout.gateFailurePolicy === 'Abort') {
      state.aborted = { buildId, reason: why, cause: 'GateFailed' };
      return 'aborted';
    }
    state.pausedBy = { reason: why, buildId, cause: 'GateFailed' }; // this build's: a newer target is not held by it
    ctx.transition('Paused', 'GateFailed', `${why}; resume or retry to run it again, promote to skip it`, 'Warning');
    for (;;) {
      await ctx.wait(() => !isPaused(state) || state.promote !== undefined);
      if (!isPaused(state) || state.promote !== undefined) break;
      ctx.checkpoint();
    }
    const promote = state.promote;
    if (promote) {
      state.promote = undefined;
      state.pausedBy = undefined;
      return promote.full ? 'promotedFully' : 'promoted';
    }
  }
}
