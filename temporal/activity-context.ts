/**
 * What code of this room takes from the activity it runs in: its logger, and its heartbeat, which the caller makes.
 */
import { Context } from '@temporalio/activity';

/**
 * When an activity's first heartbeat is due: a quarter of its heartbeat timeout after it started (the timeout counts
 * from the start), so a wait that ends sooner sends none. Each heartbeat is a call and a write on the server.
 */
export function firstHeartbeatAt(ctx: Context): number {
  return Date.now() + (ctx.info.heartbeatTimeoutMs ?? 0) / 4;
}

/** Makes the heartbeat of the activity whose context is `ctx`. */
export type HeartbeatOf = (ctx: Context) => (details?: unknown) => void;

/** The SDK's heartbeat as it is, counted nowhere. */
export const sdkHeartbeat: HeartbeatOf = (ctx) => (details) => ctx.heartbeat(details);

/**
 * Logs a warning through the activity's logger (which adds the workflow and activity it belongs to), or the
 * console outside an activity.
 */
export function logWarning(message: string): void {
  let log: { warn(message: string): void } = console;
  try {
    log = Context.current().log;
  } catch {
    // Not in an activity: the watcher calls some activities directly.
  }
  log.warn(message);
}
