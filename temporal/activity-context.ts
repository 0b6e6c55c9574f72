/**
 * What code of this room takes from the activity it runs in: its logger, and its heartbeat, which the caller makes.
 */
import { Context } from '@temporalio/activity';

/**
 * When an activity that began at `startedAt` sends its first heartbeat: a quarter of its heartbeat timeout in (the
 * timeout counts from the start), so a wait that ends sooner sends none (each heartbeat is a call and a write on the
 * server); and 5 s before its attempt's end at the latest, so a timeout carries its last details.
 */
export function firstHeartbeatAt(ctx: Context, startedAt: number): number {
  const { heartbeatTimeoutMs = 0, startToCloseTimeoutMs } = ctx.info;
  return startedAt + Math.min(heartbeatTimeoutMs / 4, Math.max(0, startToCloseTimeoutMs - 5_000));
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
