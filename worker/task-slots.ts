/**
 * Worker task slots that cost the process's Temporal budget (./rate-budget.ts). A slot is reserved before each
 * poll for a task, and a task is a poll and a completion: two calls. Without this the budget bounds only the
 * calls the process makes itself, while a hundred rollouts moving in step (a hundred step timers firing in the
 * same second, each a workflow task and an activity) send hundreds of task calls a second.
 *
 * A workflow task's completion follows its poll within milliseconds, so the slot pays both. An activity may run
 * for minutes (a registration wait), and a hundred of them end in the same second when a version registers: its
 * slot pays the poll, and its completion pays its own turn when it is sent (`completionsPaid`).
 */
import type { ActivityInboundCallsInterceptor, CustomSlotSupplier, SlotInfo, SlotPermit } from '@temporalio/worker';
import type { RateBudget } from './rate-budget.js';

/** A poll for a task and the completion that answers it. */
export const callsPerTask = 2;

/** How long an activity's completion waits for its turn at most; beyond that it goes out uncounted. */
export const completionMaxWaitMs = 2_000;

/**
 * At most `maxSlots` tasks at once (as the SDK's fixed-size supplier), each taking `callsAtReserve` tokens of
 * `budget` before its poll (default: the poll and the completion).
 */
export function budgetedSlots<SI extends SlotInfo>(budget: RateBudget, maxSlots: number, callsAtReserve = callsPerTask): CustomSlotSupplier<SI> {
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
        await budget.takeWaiting(callsAtReserve, signal);
      } catch (err) {
        free();
        throw err;
      }
      return {};
    },
    tryReserveSlot(): SlotPermit | null {
      if (used >= maxSlots || !budget.tryTake(callsAtReserve)) return null;
      used++;
      return {};
    },
    markSlotUsed() {},
    releaseSlot: free,
  };
}

/**
 * An activity interceptor: the attempt's result (or failure) is handed back to the worker, which reports it to the
 * server at once, at its turn in `budget`, waiting at most `maxWaitMs` (an attempt must not time out waiting to
 * report; one that would goes out uncounted). A local activity reports to no server.
 */
export function completionsPaid(budget: RateBudget, maxWaitMs = completionMaxWaitMs): (ctx: { info: { isLocal: boolean } }) => { inbound: ActivityInboundCallsInterceptor } {
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        if (ctx.info.isLocal) return next(input);
        try {
          const result: unknown = await next(input);
          await budget.turnWithin(maxWaitMs);
          return result;
        } catch (err) {
          await budget.turnWithin(maxWaitMs);
          throw err;
        }
      },
    },
  });
}
