/**
 * Worker task slots that cost the process's Temporal budget (./rate-budget.ts). A slot is reserved before each
 * poll for a task, and a task is a poll and a completion: two calls. Without this the budget bounds only the
 * calls the process makes itself, while a hundred rollouts moving in step (a hundred step timers firing in the
 * same second, each a workflow task and an activity) send hundreds of task calls a second.
 */
import type { CustomSlotSupplier, SlotInfo, SlotPermit } from '@temporalio/worker';
import type { RateBudget } from './rate-budget.js';

/** A poll for a task and the completion that answers it. */
export const callsPerTask = 2;

/**
 * At most `maxSlots` tasks at once (as the SDK's fixed-size supplier), each taking `callsPerTask` tokens of
 * `budget` before its poll.
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
        await budget.takeWaiting(callsPerTask, signal);
      } catch (err) {
        free();
        throw err;
      }
      return {};
    },
    tryReserveSlot(): SlotPermit | null {
      if (used >= maxSlots || !budget.tryTake(callsPerTask)) return null;
      used++;
      return {};
    },
    markSlotUsed() {},
    releaseSlot: free,
  };
}
