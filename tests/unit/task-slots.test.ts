import { jest } from '@jest/globals';
import type { SlotReserveContext, WorkflowSlotInfo } from '@temporalio/worker';
import { RateBudget } from '../../worker/rate-budget.js';
import { budgetedSlots, callsPerTask } from '../../worker/task-slots.js';

const ctx = { slotType: 'workflow', taskQueue: 'glidepath', workerIdentity: 'test', workerBuildId: '', isSticky: false } as SlotReserveContext;
const settled = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('budgetedSlots', () => {
  let now = 0;
  beforeEach(() => {
    jest.useFakeTimers();
    now = 0;
  });
  afterEach(() => jest.useRealTimers());

  test("each task's poll waits for the tokens of its poll and completion, in the order asked", async () => {
    const budget = new RateBudget(4, 2, 5_000, () => now); // a task is 2 calls: one task now, then one every 0.5 s
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 10);
    const granted: number[] = [];
    const reservations = [0, 1, 2].map((i) => slots.reserveSlot(ctx, new AbortController().signal).then(() => granted.push(i)));
    await settled();
    expect(granted).toEqual([0]);
    now = 500;
    await jest.advanceTimersByTimeAsync(500);
    expect(granted).toEqual([0, 1]);
    now = 1000;
    await jest.advanceTimersByTimeAsync(500);
    await Promise.all(reservations);
    expect(granted).toEqual([0, 1, 2]);
  });

  test('at most maxSlots at once: the next wait for releases in the order they asked, and an eager task finds none', async () => {
    const budget = new RateBudget(1000, 1000, 5_000, () => now);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 2);
    const first = await slots.reserveSlot(ctx, new AbortController().signal);
    const second = await slots.reserveSlot(ctx, new AbortController().signal);
    const granted: string[] = [];
    const waiting = ['third', 'fourth'].map((name) => slots.reserveSlot(ctx, new AbortController().signal).then(() => granted.push(name)));
    expect(slots.tryReserveSlot(ctx)).toBeNull();
    await settled();
    expect(granted).toEqual([]);
    slots.releaseSlot({ permit: first });
    await settled();
    expect(granted).toEqual(['third']);
    slots.releaseSlot({ permit: second });
    await Promise.all(waiting);
    expect(granted).toEqual(['third', 'fourth']);
  });

  test('an eager task refused for want of tokens takes no slot', async () => {
    const budget = new RateBudget(2, callsPerTask, 5_000, () => now);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 1);
    const eager = slots.tryReserveSlot(ctx)!; // the burst: one task's calls
    expect(eager).not.toBeNull();
    slots.releaseSlot({ permit: eager });
    expect(slots.tryReserveSlot(ctx)).toBeNull(); // no tokens left
    let got = false;
    const next = slots.reserveSlot(ctx, new AbortController().signal).then(() => (got = true));
    now = 1000;
    await jest.advanceTimersByTimeAsync(1000);
    await next;
    expect(got).toBe(true); // the slot was free: only the tokens were waited for
  });

  test('a reservation whose signal is already aborted is refused at once, even with every slot taken', async () => {
    const budget = new RateBudget(1000, 1000, 5_000, () => now);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 1);
    await slots.reserveSlot(ctx, new AbortController().signal);
    const aborted = new AbortController();
    aborted.abort(new Error('shutting down'));
    await expect(slots.reserveSlot(ctx, aborted.signal)).rejects.toThrow('shutting down');
  });

  test('an eager task takes a slot only when its tokens are there now', () => {
    const budget = new RateBudget(1, 2, 5_000, () => now);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 10);
    expect(slots.tryReserveSlot(ctx)).not.toBeNull(); // the burst: two calls
    expect(slots.tryReserveSlot(ctx)).toBeNull(); // none left, and none taken
    now = 2000;
    expect(slots.tryReserveSlot(ctx)).not.toBeNull();
  });

  test('an aborted reservation leaves the queue, frees its slot and gives its tokens back', async () => {
    const budget = new RateBudget(2, 2, 5_000, () => now);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 1);
    const first = await slots.reserveSlot(ctx, new AbortController().signal); // the burst
    // Waiting for the slot: aborted there.
    const forSlot = new AbortController();
    const queued = slots.reserveSlot(ctx, forSlot.signal);
    forSlot.abort(new Error('no longer needed'));
    await expect(queued).rejects.toThrow('no longer needed');
    slots.releaseSlot({ permit: first });
    // Waiting for tokens (the bucket is empty until 1 s): aborted there, its slot and tokens come back.
    const forTokens = new AbortController();
    const paying = slots.reserveSlot(ctx, forTokens.signal);
    await settled();
    forTokens.abort(new Error('shutting down'));
    await expect(paying).rejects.toThrow('shutting down');
    now = 1000;
    expect(slots.tryReserveSlot(ctx)).not.toBeNull(); // the slot is free and the tokens of 1 s are whole
  });
});
