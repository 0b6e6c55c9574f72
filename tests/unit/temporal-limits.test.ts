import { describe, expect, test } from '@jest/globals';
import type { SlotReserveContext } from '@temporalio/worker';
import { Pace, pacedSlots, slotCalls, temporalLimits, Turn } from '../../worker/temporal-limits.js';

const ctx = {} as SlotReserveContext;
/** Lets the pace's timers and the promises they resolve run. */
const settle = () => new Promise((r) => setTimeout(r, 0));

/** A pace on a clock the test moves; `at(ms)` moves it and lets the pace serve. */
function manualPace(rate: number, burst: number) {
  let now = 0;
  const pace = new Pace(rate, burst, () => now);
  const served: string[] = [];
  const ask = (name: string, n: number, turn: Turn, signal?: AbortSignal) =>
    pace.take(n, turn, signal).then(
      () => void served.push(name),
      () => void served.push(`${name} gave up`),
    );
  const at = async (ms: number) => {
    now = ms;
    pace.giveBack(0); // serves whoever the refilled tokens are enough for
    await settle();
  };
  return { pace, served, ask, at };
}

describe('Pace', () => {
  test('a burst at once, then the rate, first come first served within a turn', async () => {
    const { served, ask, at } = manualPace(10, 2);
    void ask('a', 1, Turn.underWay);
    void ask('b', 1, Turn.underWay);
    void ask('c', 1, Turn.underWay);
    await settle();
    expect(served).toEqual(['a', 'b']);
    await at(50);
    expect(served).toEqual(['a', 'b']); // half a token
    await at(100);
    expect(served).toEqual(['a', 'b', 'c']);
  });

  test('work under way goes before new work, and new work before the waits, whoever asked first', async () => {
    const { served, ask, at } = manualPace(10, 2);
    void ask('spend', 2, Turn.underWay);
    void ask('wait poll', 1, Turn.waiting);
    void ask('slot', 2, Turn.newWork);
    void ask('in-task read', 1, Turn.underWay);
    await settle();
    expect(served).toEqual(['spend']);
    await at(100);
    expect(served).toEqual(['spend', 'in-task read']);
    await at(300);
    expect(served).toEqual(['spend', 'in-task read', 'slot']);
    await at(400);
    expect(served).toEqual(['spend', 'in-task read', 'slot', 'wait poll']);
  });

  test('tryTake takes only what is there, and never ahead of one waiting in its turn or before', async () => {
    const { pace, ask, at } = manualPace(10, 2);
    expect(pace.tryTake(2, Turn.newWork)).toBe(true);
    expect(pace.tryTake(1, Turn.underWay)).toBe(false);
    void ask('read', 1, Turn.underWay);
    await at(150); // 1.5 tokens: the read takes one
    expect(pace.tryTake(1, Turn.newWork)).toBe(false); // half a token left
    void ask('poll', 1, Turn.waiting);
    await at(200); // 1 token: the poll waiting in its turn is served first
    expect(pace.tryTake(1, Turn.waiting)).toBe(false);
    expect(pace.waiting).toEqual([0, 0, 0]);
  });

  test('an aborted wait leaves the queue: the ones behind it are served', async () => {
    const { served, ask, at } = manualPace(10, 1);
    void ask('spend', 1, Turn.underWay);
    const abort = new AbortController();
    void ask('cancelled', 1, Turn.underWay, abort.signal);
    void ask('next', 1, Turn.underWay);
    abort.abort(new Error('cancelled'));
    await at(100);
    expect(served).toEqual(['spend', 'cancelled gave up', 'next']);
  });

  test('one asking more than the bucket holds is served when it is full, and owes the rest', async () => {
    const { served, ask, at } = manualPace(10, 2);
    void ask('big', 3, Turn.newWork);
    void ask('next', 1, Turn.newWork);
    await settle();
    expect(served).toEqual(['big']);
    await at(100);
    expect(served).toEqual(['big']); // 1 owed, then nothing yet
    await at(200);
    expect(served).toEqual(['big', 'next']);
  });

  test('holds no more than its burst', async () => {
    const { served, ask, at } = manualPace(10, 3);
    await at(60_000);
    for (const name of ['a', 'b', 'c', 'd']) void ask(name, 1, Turn.underWay);
    await settle();
    expect(served).toEqual(['a', 'b', 'c']);
  });
});

describe('pacedSlots', () => {
  test('at most maxSlots at once; a freed slot goes to the first waiting', async () => {
    const slots = pacedSlots(new Pace(1000, 10), 2, 1);
    const signal = new AbortController().signal;
    await slots.reserveSlot(ctx, signal);
    await slots.reserveSlot(ctx, signal);
    expect(slots.tryReserveSlot(ctx)).toBeNull();
    let third = false;
    const waiting = slots.reserveSlot(ctx, signal).then(() => (third = true));
    await settle();
    expect(third).toBe(false);
    slots.releaseSlot({ permit: {}, slotInfo: undefined } as never);
    await waiting;
    expect(third).toBe(true);
  });

  test('a slot waits for the calls it stands for; aborted, it gives the slot back and takes no token', async () => {
    const { pace, at } = manualPace(10, 5);
    const slots = pacedSlots(pace, 5, 2.5);
    const signal = new AbortController().signal;
    await slots.reserveSlot(ctx, signal);
    await slots.reserveSlot(ctx, signal); // the burst of 5: two slots
    expect(slots.tryReserveSlot(ctx)).toBeNull();
    const abort = new AbortController();
    const waiting = slots.reserveSlot(ctx, abort.signal);
    abort.abort(new Error('poller stopped'));
    await expect(waiting).rejects.toThrow('poller stopped');
    await at(250); // 2.5 refilled, none of them taken by the aborted slot
    expect(slots.tryReserveSlot(ctx)).not.toBeNull();
  });
});

describe('temporalLimits', () => {
  test('one pace for the workflow task and activity slots and the own calls', () => {
    const limits = temporalLimits(50);
    expect(limits.interceptors).toHaveLength(2); // the SDK's retries, then each attempt paced
    expect(limits.main.tuner).toMatchObject({
      workflowTaskSlotSupplier: { type: 'custom' },
      activityTaskSlotSupplier: { type: 'custom' },
    });
    expect(limits.waits.tuner).toMatchObject({ activityTaskSlotSupplier: { type: 'custom' } });
    // Shared: two workflow task slots spend the burst (5 at 50 a second), and an activity slot finds nothing now.
    type Slots = ReturnType<typeof pacedSlots>;
    const tuner = limits.main.tuner as unknown as Record<
      'workflowTaskSlotSupplier' | 'activityTaskSlotSupplier',
      Slots
    >;
    const wft = tuner.workflowTaskSlotSupplier;
    const activity = tuner.activityTaskSlotSupplier;
    expect(wft.tryReserveSlot(ctx)).not.toBeNull();
    expect(wft.tryReserveSlot(ctx)).not.toBeNull();
    expect(slotCalls.workflowTask * 2).toBe(5);
    expect(activity.tryReserveSlot(ctx)).toBeNull();
  });
});
