/**
 * An activity's heartbeats counted in the controller's Temporal budget. The SDK sends them on its own
 * connection, past the budget's interceptor, and at most one per throttle interval: 0.8 × the heartbeat timeout,
 * at most 60 s (30 s without a timeout). The count follows that pace, so a wait that heartbeats every 2 s is
 * charged for the one call in eight the SDK makes (sdk-core's activity heartbeat manager).
 */
import type { Context } from '@temporalio/activity';

/** Counts calls that went out without asking the budget (`RateBudget.charge`). */
export type Charge = () => void;

/** The SDK's pace of sending heartbeats for an activity whose heartbeat timeout is `timeoutMs`. */
export function heartbeatThrottleMs(timeoutMs: number | undefined): number {
  return timeoutMs ? Math.min(0.8 * timeoutMs, 60_000) : 30_000;
}

/**
 * `ctx.heartbeat`, charging `charge` for each heartbeat the SDK sends: the first at once; after that, the latest
 * details at the end of each throttle interval in which there were any, or at once when the interval had none.
 */
export function chargedHeartbeat(
  ctx: Context,
  charge: Charge,
  nowMs: () => number = () => performance.now(),
): (details?: unknown) => void {
  const everyMs = heartbeatThrottleMs(ctx.info.heartbeatTimeoutMs);
  let sentAt: number | undefined;
  let pending = false;
  return (details) => {
    ctx.heartbeat(details);
    const now = nowMs();
    // The pending heartbeat went out when its interval ended (one at most: it starts the next interval).
    if (pending && sentAt !== undefined && now >= sentAt + everyMs) {
      sentAt += everyMs;
      pending = false;
      charge();
    }
    if (sentAt === undefined || (!pending && now >= sentAt + everyMs)) {
      sentAt = now;
      charge();
    } else pending = true;
  };
}

/**
 * Runs `fn`, heartbeating every 2 s meanwhile while `alive()`: an activity that waits on something else says it
 * is alive, and stops saying so when what it waits on has stopped answering.
 */
export async function heartbeating<T>(
  ctx: Context,
  charge: Charge,
  alive: () => boolean,
  fn: () => Promise<T>,
  details?: () => unknown,
): Promise<T> {
  const heartbeat = chargedHeartbeat(ctx, charge);
  const beat = setInterval(() => alive() && heartbeat(details?.()), 2000);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}
