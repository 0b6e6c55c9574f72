/** Heartbeats of an activity that waits on something else. */
import type { Context } from '@temporalio/activity';
import { firstHeartbeatAt } from '../temporal/activity-context.js';

/**
 * Runs `fn`, heartbeating every 2 s from `firstHeartbeatAt` while `alive()`: an activity that waits on something else
 * says it is alive, and stops saying so when what it waits on has stopped answering. The SDK sends at most one
 * heartbeat per throttle interval (0.8 × the heartbeat timeout, at most `maxHeartbeatThrottleInterval`), the latest
 * details. `startedAt`: when the activity began (its setup before the wait counts).
 */
export async function heartbeating<T>(
  ctx: Context,
  alive: () => boolean,
  fn: () => Promise<T>,
  o: { details?: () => unknown; startedAt?: number } = {},
): Promise<T> {
  const from = firstHeartbeatAt(ctx, o.startedAt ?? Date.now());
  const beat = setInterval(() => Date.now() >= from && alive() && ctx.heartbeat(o.details?.()), 2000);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}
