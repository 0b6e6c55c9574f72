/**
 * The attacker's workflow, run by the attacker's own Worker on a task queue of its own: it schedules the
 * controller's activities on the controller's task queues, with arguments of its choosing, one attempt each, and
 * says how each ended. Bundled by `Worker.create({ workflowsPath })` (tests/security/security-env.ts).
 */
import { ActivityFailure, ApplicationFailure, TimeoutFailure, proxyActivities } from '@temporalio/workflow';

/** One forged call: the activity type, the queue it is scheduled on, its arguments. */
export interface ForgedCall {
  /** Unique in the run: what the test names the call by. */
  id: string;
  activity: string;
  taskQueue: string;
  args: unknown[];
}

/** How a forged call ended: completed (with its result), or failed with the failure's type and message. */
export type ForgedOutcome =
  | { id: string; activity: string; outcome: 'completed'; result: unknown }
  | { id: string; activity: string; outcome: 'failed'; type: string; message: string };

type AnyActivity = (...args: unknown[]) => Promise<unknown>;

/** The failure's type: an ApplicationFailure's `type`, a timeout's kind, else the failure's class. */
function failureOf(err: unknown): { type: string; message: string } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? 'ApplicationFailure', message: cause.message };
  if (cause instanceof TimeoutFailure) return { type: `Timeout:${String(cause.timeoutType)}`, message: cause.message };
  if (cause instanceof Error) return { type: cause.name, message: cause.message };
  return { type: 'unknown', message: String(cause) };
}

/** Schedules every call at once (one attempt, short timeouts) and returns how each ended, in the calls' order. */
export async function forgeActivities(calls: ForgedCall[]): Promise<ForgedOutcome[]> {
  const byQueue = new Map<string, Record<string, AnyActivity>>();
  const activitiesOn = (taskQueue: string) => {
    let proxy = byQueue.get(taskQueue);
    if (!proxy) {
      proxy = proxyActivities<Record<string, AnyActivity>>({
        taskQueue,
        // A refusal is one read of the apiserver: anything that runs this long was not refused.
        startToCloseTimeout: '15s',
        scheduleToCloseTimeout: '45s',
        retry: { maximumAttempts: 1 },
      });
      byQueue.set(taskQueue, proxy);
    }
    return proxy;
  };
  return Promise.all(
    calls.map(async (call): Promise<ForgedOutcome> => {
      try {
        const result = await activitiesOn(call.taskQueue)[call.activity]!(...call.args);
        return { id: call.id, activity: call.activity, outcome: 'completed', result: result ?? null };
      } catch (err) {
        return { id: call.id, activity: call.activity, outcome: 'failed', ...failureOf(err) };
      }
    }),
  );
}
