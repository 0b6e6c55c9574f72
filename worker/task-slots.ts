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
 * of the process's own) were tried at 1,000 rollouts: slower, for no fewer calls a second (README, "Against the
 * targets").
 */
export const completionMaxWaitMs = 2_000;

/**
 * At most `maxSlots` tasks at once (as the SDK's fixed-size supplier), each taking a token of `budget` (its poll)
 * before it polls.
 */
export function budgetedSlots<SI extends SlotInfo>(budget: RateBudget, maxSlots: number): CustomSlotSupplier<SI> {
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
    markSlotUsed() {},
    releaseSlot: free,
  };
}

/** What `completionsPaid` reads of an activity's context. */
export interface CompletionContext {
  info: { isLocal: boolean; startToCloseTimeoutMs: number; scheduledTimestampMs: number; scheduleToCloseTimeoutMs: number; heartbeatTimeoutMs?: number };
  cancellationSignal: AbortSignal;
}

/**
 * How long an attempt that ends now may wait to report, at most `maxWaitMs`: a second short of its start-to-close
 * and schedule-to-close deadlines and of a fifth of its heartbeat timeout (the SDK heartbeats at 0.8 of it), so
 * waiting never times it out. Pure.
 */
export function completionWaitCap(info: CompletionContext['info'], startedAtMs: number, nowMs: number, maxWaitMs: number): number {
  const caps = [maxWaitMs];
  if (info.startToCloseTimeoutMs > 0) caps.push(startedAtMs + info.startToCloseTimeoutMs - nowMs - 1000);
  if (info.scheduleToCloseTimeoutMs > 0) caps.push(info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs - nowMs - 1000);
  if (info.heartbeatTimeoutMs) caps.push(info.heartbeatTimeoutMs / 5 - 1000);
  return Math.max(0, Math.min(...caps));
}

/**
 * An activity interceptor: the attempt's result (or failure) is handed back to the worker, which reports it to the
 * server at once, at its turn in `budget`, waiting at most `maxWaitMs` and never into its timeouts
 * (`completionWaitCap`); one whose turn is further goes out at once (`RateBudget.turnWithin`). A cancelled attempt
 * reports at once (its caller waits for the cancellation), and a local activity reports to no server.
 */
export function completionsPaid(budget: RateBudget, maxWaitMs = completionMaxWaitMs, clock: () => number = Date.now): (ctx: CompletionContext) => { inbound: ActivityInboundCallsInterceptor } {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        if (ctx.info.isLocal) return next(input);
        const startedAt = clock();
        const turn = () => (ctx.cancellationSignal.aborted ? undefined : budget.turnWithin(completionWaitCap(ctx.info, startedAt, clock(), maxWaitMs)));
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
