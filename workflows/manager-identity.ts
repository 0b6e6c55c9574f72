/**
 * The worker deployment's manager identity held by someone else: the rollout waits, saying who holds it, and goes on
 * when it is handed back.
 */
import { CancelledFailure } from '@temporalio/workflow';
import type { RolloutContext } from './context.js';
import { recheckDelay } from './decisions.js';
import { Blocked } from './failures.js';

/**
 * Someone else holds the worker deployment's manager identity: the phase says who, and the caller tries again
 * after a backoff (attempt 0, 1, … : 1 s doubling to 1 min).
 */
export async function waitForManager(
  ctx: RolloutContext,
  holder: string,
  attempt: number,
  opts: { untilDeleted?: boolean; background?: boolean } = {},
): Promise<void> {
  // Background work (a sunset's version delete) waits too, but the phase is the rollout's to say.
  if (!opts.background && ctx.state.managerHeldBy !== holder) {
    ctx.state.managerHeldBy = holder;
    ctx.transition(
      'Paused',
      'ManagerIdentityHeld',
      `the worker deployment's manager identity is held by ${holder}: the rollout goes on when it is handed back (temporal worker deployment manager-identity unset)`,
      'Warning',
    );
  }
  await ctx.wait(
    () => ctx.state.deleting,
    recheckDelay(attempt, 60_000),
    'wait for the manager identity to be handed back',
  );
  if (ctx.state.deleting) {
    // The deletion's own steps (untilDeleted: false) go on, reporting it; the rollout's stop.
    if (opts.untilDeleted === false)
      throw new Blocked('a routing change', `the worker deployment's manager identity is held by ${holder}`);
    throw new CancelledFailure('the resource is being deleted');
  }
  ctx.checkpoint();
}

/** The manager identity is ours again (or nobody's). */
export function managerBack(ctx: RolloutContext): void {
  if (ctx.state.managerHeldBy === undefined) return;
  ctx.record(
    'transition',
    'ManagerIdentityHandedBack',
    'glidepath',
    `${ctx.state.managerHeldBy} no longer holds the manager identity`,
  );
  ctx.event(
    'Normal',
    'ManagerIdentityHandedBack',
    `${ctx.state.managerHeldBy} no longer holds the manager identity: the rollout goes on`,
  );
  ctx.state.managerHeldBy = undefined;
  if (ctx.state.target) ctx.state.target.managerClaimed = false; // claimed again before its next routing change
  ctx.markDirty();
}
