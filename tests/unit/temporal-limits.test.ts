import { describe, expect, test } from '@jest/globals';
import type { SlotReserveContext } from '@temporalio/worker';
import { pacedSlots, slotCalls, temporalLimits, TokenBucket } from '../../worker/temporal-limits.js';

const ctx = {} as SlotReserveContext;

describe('TokenBucket', () => {
  test('a burst at once, then one token per 1 / rate, promised in the order asked', () => {
    const bucket = new TokenBucket(4, 2, 0);
    expect([bucket.take(0), bucket.take(0), bucket.take(0), bucket.take(0)]).toEqual([0, 0, 250, 500]);
    expect(bucket.take(500)).toBe(250); // two refilled by 500 ms, both promised: the next is 250 ms further
  });

  test('tryTake takes only a token that is there now; giveBack returns one', () => {
    const bucket = new TokenBucket(2, 1, 0);
    expect(bucket.tryTake(0)).toBe(true);
    expect(bucket.tryTake(100)).toBe(false);
    bucket.giveBack();
    expect(bucket.tryTake(100)).toBe(true);
    expect(bucket.tryTake(700)).toBe(true); // 0.2 left at 100 ms, 1.2 → 1 by 700 ms
  });

  test('an idle bucket holds no more than its burst', () => {
    const bucket = new TokenBucket(10, 3, 0);
    expect([0, 1, 2, 3].map(() => bucket.take(60_000))).toEqual([0, 0, 0, 100]);
  });
});

describe('pacedSlots', () => {
  test('at most maxSlots at once; a freed slot goes to the first waiting', async () => {
    let now = 0;
    const slots = pacedSlots(new TokenBucket(1000, 10, 0), 2, 1, () => now);
    const signal = new AbortController().signal;
    await slots.reserveSlot(ctx, signal);
    await slots.reserveSlot(ctx, signal);
    expect(slots.tryReserveSlot(ctx)).toBeNull();
    let third = false;
    const waiting = slots.reserveSlot(ctx, signal).then(() => (third = true));
    await Promise.resolve();
    expect(third).toBe(false);
    now = 10;
    slots.releaseSlot({ permit: {}, slotInfo: undefined } as never);
    await waiting;
    expect(third).toBe(true);
  });

  test('a slot waits for its token; aborted, it gives the slot and the token back', async () => {
    const bucket = new TokenBucket(1, 1, Date.now());
    const slots = pacedSlots(bucket, 5, 1);
    await slots.reserveSlot(ctx, new AbortController().signal); // the burst
    const abort = new AbortController();
    const waiting = slots.reserveSlot(ctx, abort.signal);
    abort.abort(new Error('poller stopped'));
    await expect(waiting).rejects.toThrow('poller stopped');
    expect(slots.tryReserveSlot(ctx)).toBeNull(); // the token given back refills from -1 to 0: none yet
  });
});

describe('pacedSlots: a slot costs the calls it stands for', () => {
  test('a slot of 2.5 calls waits until the bucket has them; tryReserveSlot takes only what is there', async () => {
    let now = 0;
    const bucket = new TokenBucket(10, 5, 0);
    const slots = pacedSlots(bucket, 10, 2.5, () => now);
    const signal = new AbortController().signal;
    await slots.reserveSlot(ctx, signal);
    await slots.reserveSlot(ctx, signal); // the burst of 5: two slots
    expect(slots.tryReserveSlot(ctx)).toBeNull();
    now = 250; // 2.5 tokens refilled
    expect(slots.tryReserveSlot(ctx)).not.toBeNull();
    expect(bucket.take(now)).toBe(100); // the bucket is empty: the next single call waits 1 / 10 s
  });
});

describe('temporalLimits', () => {
  test('one bucket paces the workflow task and activity slots and the own calls', async () => {
    const limits = temporalLimits(50);
    expect(limits.interceptors).toHaveLength(2); // the SDK's retries, then each attempt paced
    expect(limits.main.tuner).toMatchObject({
      workflowTaskSlotSupplier: { type: 'custom' },
      activityTaskSlotSupplier: { type: 'custom' },
    });
    expect(limits.waits.tuner).toMatchObject({ activityTaskSlotSupplier: { type: 'custom' } });
    // Shared: two workflow task slots spend the burst (5 at 50 a second): an activity slot finds nothing now.
    expect(slotCalls.workflowTask * 2).toBe(5);
    const tuner = limits.main.tuner as { workflowTaskSlotSupplier: ReturnType<typeof pacedSlots> } & {
      activityTaskSlotSupplier: ReturnType<typeof pacedSlots>;
    };
    const signal = new AbortController().signal;
    await tuner.workflowTaskSlotSupplier.reserveSlot(ctx, signal);
    await tuner.workflowTaskSlotSupplier.reserveSlot(ctx, signal);
    expect(tuner.activityTaskSlotSupplier.tryReserveSlot(ctx)).toBeNull();
  });
});
