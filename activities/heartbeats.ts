/**
 * An activity's heartbeats counted in the controller's Temporal budget. The SDK sends them on its own
 * connection, past the budget's interceptor, and at most one per throttle interval: 0.8 × the heartbeat timeout,
 * at most 60 s (30 s without a timeout). The count follows that pace, so a wait that heartbeats every 2 s is
 * charged for the one call in eight the SDK makes.
 */
import type { Context } from '@temporalio/activity';

/** Counts calls that went out without asking the budget (`RateBudget.charge`). */
export type Charge = () => void;

/** The SDK's pace of sending heartbeats for an activity whose heartbeat timeout is `timeoutMs`. */
export function heartbeatThrottleMs(timeoutMs: number | undefined): number {
  return timeoutMs ? Math.min(0.8 * timeoutMs, 60_000) : 30_000;
}

/** `ctx.heartbeat`, charging `charge` once per throttle interval from the first heartbeat on. */
export function chargedHeartbeat(ctx: Context, charge: Charge, nowMs: () => number = Date.now): (details?: unknown) => void {
  const everyMs = heartbeatThrottleMs(ctx.info.heartbeatTimeoutMs);
  let chargedAt: number | undefined;
  return (details) => {
    ctx.heartbeat(details);
    const now = nowMs();
    if (chargedAt === undefined || now - chargedAt >= everyMs) {
      chargedAt = now;
      charge();
    }
  };
}
