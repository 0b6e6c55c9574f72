/**
 * How a rollout calls its activities. Reads and idempotent writes run inside the workflow task that decided them,
 * as local activities: no activity task, poll, completion or workflow task after each, which is most of what a
 * rollout costs in Temporal calls. They run one at a time: concurrent local activities can resolve in another order
 * on replay than they did (sdk-core resolves their markers in history order). One that failed within its bound is
 * made again as an activity (`RolloutContext.call` tries again), as are the next ones of its kind until an activity
 * succeeded: an outage's waits belong outside a workflow task. A set-current, the long waits and the bulk calls are
 * always activities.
 */
import {
  condition,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  type ActivityInterfaceFor,
  type ActivityOptions,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, RoutingCallResult } from '../activities/index.js';
import {
  bulkOptions,
  deploymentWriteOptions,
  gateWaitOptions,
  kubeOptions,
  localOptions,
  localReportingOptions,
  localRoutingWriteOptions,
  reportingOptions,
  temporalOptions,
  waitOptions,
  waitWithinOptions,
} from './activity-options.js';
import { NotMadeInTask } from './failures.js';
import { waitsTaskQueue } from './task-queues.js';

type AnyActivity = (...args: unknown[]) => Promise<unknown>;
type CallKind = 'kube' | 'temporal' | 'routing';
/** How a call inside the task went: its answer, or that it is to be made as an activity. */
type Turn<T> = { local: true; value: T } | { local: false };

export abstract class ActivityCalls {
  /**
   * The summary the Web UI shows for the activities scheduled now: the `what` of the `call` (or `withSummary`)
   * running. Set only while its function runs synchronously, which is when the activity proxies below are read.
   */
  private summaryNow?: string;
  /**
   * A local routing write landed in this workflow task and asked that the report it causes wait for the next task,
   * so its marker is recorded without waiting for the status and Events (a step's ramp: `statusWriter`).
   */
  protected reportInNextTask = false;
  /** The local activity last queued: the next starts when it is done. */
  private localTail: Promise<unknown> = Promise.resolve();
  /**
   * The kinds of call (Kubernetes, Temporal, routing writes) whose last call inside the task failed: their next go
   * as activities, whose retries outlast an outage, until one succeeds. Read when a call's turn comes.
   */
  private readonly asActivity = new Set<CallKind>();

  /**
   * Whether the run is ending (continuing as new, or handed away): no local activity then (see `statusWriter`).
   * Never decided from the history's length: an activation after a local activity resolved can see another length
   * on replay than it did.
   */
  abstract runEnding(): boolean;

  /** Kubernetes reads and idempotent writes, in the task; a cancelled write is waited for (nothing lands after a deletion). */
  get kube(): ActivityInterfaceFor<Activities> {
    return this.inTask('kube', kubeOptions);
  }
  /** Temporal reads and version deletes, in the task. */
  get temporal(): ActivityInterfaceFor<Activities> {
    return this.inTask('temporal', temporalOptions);
  }
  /** Writes to a worker deployment recorded before they are made: a set-current, a ramp's clearing, a deletion. */
  get temporalActivity(): ActivityInterfaceFor<Activities> {
    return this.activities(deploymentWriteOptions);
  }
  /** Acting on every execution pinned to a version (thousands of calls): bounded by its heartbeat, not a budget. */
  get bulk(): ActivityInterfaceFor<Activities> {
    return this.activities(bulkOptions);
  }
  /** Long-waiting activities (registration, gates, drainage), heartbeating, up to a day per attempt. */
  waits() {
    return this.activities(waitOptions(waitsTaskQueue(workflowInfo().taskQueue)));
  }
  /**
   * The wait on a gate workflow, with a short heartbeat timeout: a controller that died during a gate is replaced
   * within seconds, and the retry waits on the same gate run (gates are few: their heartbeats cost little).
   */
  gateWaits() {
    return this.activities(gateWaitOptions(waitsTaskQueue(workflowInfo().taskQueue)));
  }
  /** A long-waiting activity that must be done within `leftMs` (else a TimeoutFailure: `deadlinePassed`). */
  waitsWithin(leftMs: number) {
    return this.activities(waitWithinOptions(waitsTaskQueue(workflowInfo().taskQueue), leftMs));
  }

  /** Activities with `options`, each call summarised by the `call` or `withSummary` it is made in. */
  activities(options: ActivityOptions): ActivityInterfaceFor<Activities> {
    return proxyActivities<Activities>({ ...options, ...this.summary() });
  }

  /**
   * Runs `fn` with `summary` as the Web UI's summary of the activities it schedules (read synchronously: the
   * activity must be called before `fn`'s first await, as `() => ctx.kube.scaleDeployment(…)` does).
   */
  withSummary<T>(summary: string, fn: () => T): T {
    const outer = this.summaryNow;
    this.summaryNow = summary;
    try {
      return fn();
    } finally {
      this.summaryNow = outer;
    }
  }

  /**
   * A ramp (`write` with the activities to make it with), inside the workflow task that decided it. When the local
   * write failed, it is made again as an activity; a local write that landed but did not answer in time is harmless
   * again: the activity finds the routing done. Not for a set-current: a local write
   * lands before its task is recorded, and a task lost then (a controller killed) runs again with what came
   * meanwhile first; an abort accepted there would leave the build it aborted current. A stray ramp is undone by
   * the abort's own read of the routing (`clearRampIf`); a set-current, the point of no return, stays an activity,
   * recorded before it is made (`promoting`).
   */
  async routingCall(
    write: (activities: ActivityInterfaceFor<Activities>) => Promise<RoutingCallResult>,
    o: { reportInNextTask?: boolean } = {},
  ) {
    const byActivity = this.temporalActivity; // the summary is read now, synchronously
    const local = proxyLocalActivities<Activities>({ ...localRoutingWriteOptions, ...this.summary() });
    const turn = await this.inTurn('routing', () => write(local));
    if (turn.local) {
      if (o.reportInNextTask) this.reportInNextTask = true;
      return turn.value;
    }
    const result = await write(byActivity);
    this.asActivity.delete('routing');
    return result;
  }

  /** Whether a report runs inside the task: always, but once the run is ending. */
  protected reportsInTask(): boolean {
    return !this.runEnding();
  }

  /** The report's activities: in the task (one attempt within 2 s) or an activity retried until it lands. */
  protected reporter(inTask: boolean): ActivityInterfaceFor<Activities> {
    if (!inTask) return this.activities(reportingOptions);
    const local = proxyLocalActivities<Activities>({ ...localReportingOptions, ...this.summary() });
    return this.queued(local);
  }

  /** Runs `fn` (which schedules one local activity) when the local activities queued before it are done. */
  private oneLocalAtATime<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.localTail.then(fn);
    this.localTail = run.catch(() => undefined);
    return run;
  }

  /**
   * Makes a call of `kind` inside the task when its turn comes (`run`, one local activity), unless calls of its kind
   * go as activities then, or the run is ending. A failure is thrown as `NotMadeInTask`, and calls of its kind go as
   * activities from then on: `call` makes it again at once, as an activity (a refusal too: a local activity's
   * failure can come unwrapped, and the activity's is the one the callers read).
   */
  private inTurn<T>(kind: CallKind, run: () => Promise<T>): Promise<Turn<T>> {
    return this.oneLocalAtATime(async (): Promise<Turn<T>> => {
      if (this.asActivity.has(kind) || this.runEnding()) return { local: false };
      try {
        return { local: true, value: await run() };
      } catch (err) {
        if (isCancellation(err)) throw err;
        log.warn('call not made inside the workflow task: its kind goes as activities', { kind, error: String(err) });
        this.asActivity.add(kind);
        throw new NotMadeInTask(err);
      }
    });
  }

  /** `local`'s activities, each run one at a time (`oneLocalAtATime`). */
  private queued(local: ActivityInterfaceFor<Activities>): ActivityInterfaceFor<Activities> {
    return new Proxy(local, {
      get: (target, name: string) => {
        const call = target[name as keyof Activities] as unknown as AnyActivity;
        return (...args: unknown[]) => this.oneLocalAtATime(() => call(...args));
      },
    });
  }

  /** Activities of `kind` called inside the task, or as activities with `fallback` after one failed there. */
  private inTask(kind: CallKind, fallback: ActivityOptions): ActivityInterfaceFor<Activities> {
    const byActivity = this.activities(fallback); // the summary is read now, synchronously
    const local = proxyLocalActivities<Activities>({ ...localOptions, ...this.summary() });
    const call = async (name: keyof Activities, args: unknown[]) => {
      const turn = await this.inTurn(kind, () => (local[name] as unknown as AnyActivity)(...args));
      if (turn.local) return turn.value;
      const result = await (byActivity[name] as unknown as AnyActivity)(...args);
      this.asActivity.delete(kind);
      return result;
    };
    return new Proxy({} as ActivityInterfaceFor<Activities>, {
      get:
        (_, name: string) =>
        (...args: unknown[]) =>
          call(name as keyof Activities, args),
    });
  }

  private summary(): { summary?: string } {
    return this.summaryNow ? { summary: this.summaryNow } : {};
  }
}

/**
 * Resolves once the rest of the current activation has run: the handlers and flows woken with the caller, and the
 * activities they schedule on the way (a condition registered false, then made true, unblocks in the SDK's next
 * pass, after the microtasks of this one).
 */
export async function restOfActivation(): Promise<void> {
  let passed = false;
  const next = condition(() => passed);
  passed = true;
  await next;
}
