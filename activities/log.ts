/** One-line warnings from code that runs both as an activity and in the watcher. */
import { Context } from '@temporalio/activity';

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
