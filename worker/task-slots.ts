/**
 * Worker task slots that cost the process's Temporal budget (./rate-budget.ts). A slot is reserved before each
 * poll for a task and pays the poll. Without this the budget bounds only the calls the process makes itself,
 * while a hundred rollouts moving in step (a hundred step timers firing in the same second, each a workflow task
 * and an activity) send hundreds of task calls a second.
 *
 * A task's completion pays its own turn when it is sent, not when its poll goes out: a hundred workflow tasks
 * polled in a second are run over the next seconds by the workflow thread, and a hundred activities (registration
 * waits) end in the same second when a version registers. An activity's through `completionsPaid`, a workflow
 * task's through a sink (../workflows/task-cost.ts).
 */
import type { ActivityInboundCallsInterceptor, CustomSlotSupplier, SlotInfo, SlotPermit } from '@temporalio/worker';
import type { RateBudget } from './rate-budget.js';

/**
 * How long a task's completion waits for its turn at most (beyond that it goes out at once): a workflow task has
 * 10 s, and its activation may have taken seconds of it on a busy worker. Activities waiting 5 s (as long as a call
 * of the process's own) were tried at 1,000 rollouts: slower, for no fewer calls a second
 * (docs/design/rate-budget.md, "Who waits, and for how long").
 */
export const completionMaxWaitMs = 2_000;

/**
 * History fetches paid ahead, with the polls of the workflow tasks they come before. The Temporal core fetches a
 * rollout's history when a task comes for one no longer in its cache, and the worker hears of it only when that
 * activation runs (../workflows/task-cost.ts): counted then, the fetches of several seconds can land in one, beyond
 * what the budget keeps free (at 1,000 rollouts and a cache of 100, 24 in one second beside 29 polls). So each poll
 * pays ahead the share of tasks that needed a fetch over the last minute (accrued poll by poll: at a share of one
 * half, every other poll pays one more call), as calls that wait their turn. The task such a poll brings leaves a
 * credit, and a fetch reported later uses one instead of being counted unheld. A credit unused for `creditMs`
 * after its task came lapses, and a poll that brought no task leaves none: the budget counted a call that did not
 * go.
 */
export class HistoryFetchCredits {
  private readonly tasks: number[] = [];
  private readonly fetches: number[] = [];
  private readonly credits: number[] = [];
  /** The fetches the polls so far should have paid ahead and did not yet (below one). */
  private owed = 0;

  constructor(
    private readonly budget: Pick<RateBudget, 'charge'>,
    private readonly clock: () => number = () => performance.now(),
    private readonly memoryMs = 60_000,
    private readonly creditMs = 10_000,
    private readonly minTasks = 10,
  ) {}

  /**
   * Whether this poll pays a fetch ahead: it owes the last minute's share of tasks that needed one (nothing while
   * fewer than `minTasks` came), and pays once the polls' shares add up to a whole call.
   */
  ahead(): boolean {
    const now = this.clock();
    const tasks = recent(this.tasks, now - this.memoryMs).length;
    if (tasks < this.minTasks) return false;
    this.owed += Math.min(1, recent(this.fetches, now - this.memoryMs).length / tasks);
    if (this.owed < 1 - 1e-9) return false; // shares like 0.6 do not add up to exactly 1 in floating point
    this.owed = Math.max(0, this.owed - 1);
    return true;
  }

  /**
   * A workflow task came (its slot is used); `fetchPaid`: its poll paid a fetch ahead, a credit from now (not from
   * the poll's reservation: a long poll can wait a minute for its task).
   */
  taskCame(fetchPaid: boolean): void {
    const now = this.clock();
    this.tasks.push(now);
    if (fetchPaid) this.credits.push(now);
  }

  /** The core fetched a history: paid ahead already, or counted now. */
  fetched(): void {
    const now = this.clock();
    recent(this.fetches, now - this.memoryMs).push(now);
    const live = recent(this.credits, now - this.creditMs);
    if (live.length) live.shift();
    else this.budget.charge();
  }
}

/** Drops the times at or before `since` from `times` (ascending) in place; returns it. */
function recent(times: number[], since: number): number[] {
  let old = 0;
  while (old < times.length && times[old]! <= since) old++;
  if (old) times.splice(0, old);
  return times;
}

/**
 * At most `maxSlots` tasks at once (as the SDK's fixed-size supplier), each taking a token of `budget` (its poll)
 * before it polls, and a second for the history fetch its task will likely need when `fetches` says so.
 */
export function budgetedSlots<SI extends SlotInfo>(
  budget: RateBudget,
  maxSlots: number,
  fetches?: HistoryFetchCredits,
): CustomSlotSupplier<SI> {
  let used = 0;
  const waiting: Array<() => void> = [];
  const free = () => {
    used--;
    waiting.shift()?.();
  };
  /** Resolves once a slot is ours (first come, first served); aborted, it leaves the queue. */
  const slot = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason as Error);
      if (used < maxSlots) return void (used++, resolve());
      const granted = () => (signal.removeEventListener('abort', abort), used++, resolve());
      const abort = () => {
        waiting.splice(waiting.indexOf(granted), 1);
        reject(signal.reason as Error);
      };
      waiting.push(granted);
      signal.addEventListener('abort', abort, { once: true });
    });
  return {
    type: 'custom',
    async reserveSlot(_ctx, signal): Promise<SlotPermit> {
      await slot(signal);
      try {
        await budget.takeWaiting(signal);
        if (fetches?.ahead()) {
          await budget.takeWaiting(signal);
          return { fetchPaid: true };
        }
      } catch (err) {
        free();
        throw err;
      }
      return {};
    },
    tryReserveSlot(): SlotPermit | null {
      if (used >= maxSlots || !budget.tryTake()) return null;
      used++;
      return {};
    },
    markSlotUsed({ permit }) {
      fetches?.taskCame((permit as { fetchPaid?: boolean }).fetchPaid === true);
    },
    releaseSlot: free,
  };
}

/** What `completionsPaid` reads of an activity's context. */
export interface CompletionContext {
  info: {
    isLocal: boolean;
    startToCloseTimeoutMs: number;
    scheduledTimestampMs: number;
    scheduleToCloseTimeoutMs: number;
    heartbeatTimeoutMs?: number;
  };
  cancellationSignal: AbortSignal;
}

/**
 * How long an attempt that ends now may wait to report, at most `maxWaitMs`: a second short of its start-to-close
 * and schedule-to-close deadlines and of a fifth of its heartbeat timeout (the SDK heartbeats at 0.8 of it), so
 * waiting never times it out. Pure.
 */
export function completionWaitCap(
  info: CompletionContext['info'],
  startedAtMs: number,
  nowMs: number,
  maxWaitMs: number,
): number {
  const caps = [maxWaitMs];
  if (info.startToCloseTimeoutMs > 0) caps.push(startedAtMs + info.startToCloseTimeoutMs - nowMs - 1000);
  if (info.scheduleToCloseTimeoutMs > 0)
    caps.push(info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs - nowMs - 1000);
  if (info.heartbeatTimeoutMs) caps.push(info.heartbeatTimeoutMs / 5 - 1000);
  return Math.max(0, Math.min(...caps));
}

/**
 * An activity interceptor: the attempt's result (or failure) is handed back to the worker, which reports it to the
 * server at once, at its turn in `budget`, waiting at most `maxWaitMs` and never into its timeouts
 * (`completionWaitCap`); one whose turn is further goes out at once (`RateBudget.turnWithin`). A cancelled attempt
 * reports at once (its caller waits for the cancellation), and a local activity reports to no server.
 */
export function completionsPaid(
  budget: RateBudget,
  maxWaitMs = completionMaxWaitMs,
  clock: () => number = Date.now,
): (ctx: CompletionContext) => { inbound: ActivityInboundCallsInterceptor } {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        if (ctx.info.isLocal) return next(input);
        const startedAt = clock();
        const turn = () =>
          ctx.cancellationSignal.aborted
            ? undefined
            : budget.turnWithin(completionWaitCap(ctx.info, startedAt, clock(), maxWaitMs));
        try {
          const result: unknown = await next(input);
          await turn();
          return result;
        } catch (err) {
          await turn();
          throw err;
        }
      },
    },
  });
}
