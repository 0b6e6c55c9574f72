import { jest } from '@jest/globals';
import type { SlotReserveContext, WorkflowSlotInfo } from '@temporalio/worker';
import { RateBudget } from '../../worker/rate-budget.js';
import { budgetedSlots, completionsPaid, completionWaitCap, HistoryFetchCredits } from '../../worker/task-slots.js';

const ctx = {
  slotType: 'workflow',
  taskQueue: 'glidepath',
  workerIdentity: 'test',
  workerBuildId: '',
  isSticky: false,
} as SlotReserveContext;
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

  test("each task's poll waits for its token, in the order asked", async () => {
    const budget = new RateBudget(2, 1, 5_000, () => now); // one poll now, then one every 0.5 s
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 10);
    const granted: number[] = [];
    const reservations = [0, 1, 2].map((i) =>
      slots.reserveSlot(ctx, new AbortController().signal).then(() => granted.push(i)),
    );
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
    const waiting = ['third', 'fourth'].map((name) =>
      slots.reserveSlot(ctx, new AbortController().signal).then(() => granted.push(name)),
    );
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
    const budget = new RateBudget(1, 1, 5_000, () => now);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 1);
    const eager = slots.tryReserveSlot(ctx)!; // the burst: one poll
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
    const budget = new RateBudget(1, 1, 5_000, () => now);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 10);
    expect(slots.tryReserveSlot(ctx)).not.toBeNull(); // the burst: one call
    expect(slots.tryReserveSlot(ctx)).toBeNull(); // none left, and none taken
    now = 1000;
    expect(slots.tryReserveSlot(ctx)).not.toBeNull();
  });

  test('an aborted reservation leaves the queue, frees its slot and gives its tokens back', async () => {
    const budget = new RateBudget(1, 1, 5_000, () => now);
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

describe('HistoryFetchCredits', () => {
  const make = () => {
    let now = 0;
    const charged: number[] = [];
    const credits = new HistoryFetchCredits({ charge: () => charged.push(now) }, () => now, 60_000, 10_000, 10);
    return { credits, charged, at: (t: number) => (now = t) };
  };

  test("each poll pays ahead the last minute's share of tasks that needed a fetch, once ten tasks came", () => {
    const { credits, at } = make();
    for (let i = 0; i < 9; i++) {
      credits.taskCame(false);
      if (i % 3) credits.fetched(); // two tasks in three fetch
    }
    expect([credits.ahead(), credits.ahead()]).toEqual([false, false]); // nine tasks: too few to tell
    credits.taskCame(false); // ten tasks, six fetches: a share of 0.6
    const paid = Array.from({ length: 10 }, () => credits.ahead()).filter(Boolean).length;
    expect(paid).toBe(6);
    at(61_000);
    expect(Array.from({ length: 10 }, () => credits.ahead()).filter(Boolean)).toEqual([]); // a minute later nothing is remembered
  });

  test('a fetch uses the credit of a task whose poll paid ahead, for ten seconds after the task came; without one it is counted when reported', () => {
    const { credits, charged, at } = make();
    credits.taskCame(true);
    credits.taskCame(true);
    credits.taskCame(false);
    at(500);
    credits.fetched();
    expect(charged).toEqual([]); // paid with its poll
    at(11_000);
    credits.fetched(); // the second credit lapsed at 10 s: its task needed none
    expect(charged).toEqual([11_000]);
  });
});

describe('budgetedSlots with history fetches paid ahead', () => {
  afterEach(() => jest.useRealTimers());

  test("while most tasks fetch, a poll pays two calls and the fetch after it none: the budget's seconds hold the fetches too", async () => {
    jest.useFakeTimers();
    const now = 0;
    const counted: Array<'paid' | 'unheld'> = [];
    const budget = new RateBudget(
      100,
      100,
      5_000,
      () => now,
      (how) => counted.push(how),
    );
    const credits = new HistoryFetchCredits(budget, () => now, 60_000, 10_000, 2);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 10, credits);
    const task = async () => {
      const permit = await slots.reserveSlot(ctx, new AbortController().signal);
      slots.markSlotUsed({ slotInfo: { type: 'workflow', workflowType: 'RolloutWorkflow', isSticky: true }, permit });
      credits.fetched(); // the core fetched the history before the activation
      slots.releaseSlot({ permit });
    };
    await task();
    await task();
    expect(counted).toEqual(['paid', 'unheld', 'paid', 'unheld']); // not yet known: counted when reported
    await task();
    expect(counted.slice(4)).toEqual(['paid', 'paid']); // every task fetched: the poll and its fetch, both waiting their turn
    // A poll that paid ahead and brought no task leaves no credit: the next fetch without a paid poll is counted.
    const empty = await slots.reserveSlot(ctx, new AbortController().signal);
    expect(counted.slice(6)).toEqual(['paid', 'paid']);
    slots.releaseSlot({ permit: empty });
    const unpaid = await slots.tryReserveSlot(ctx); // an eager task pays its poll only
    slots.markSlotUsed({
      slotInfo: { type: 'workflow', workflowType: 'RolloutWorkflow', isSticky: false },
      permit: unpaid!,
    });
    credits.fetched();
    expect(counted.slice(8)).toEqual(['paid', 'unheld']);
  });

  test('aborted while paying the fetch ahead: the slot is free again and the abort is rethrown', async () => {
    jest.useFakeTimers();
    let now = 0;
    const budget = new RateBudget(1, 1, 5_000, () => now);
    const credits = new HistoryFetchCredits(budget, () => now, 60_000, 10_000, 1);
    credits.taskCame(false);
    credits.fetched(); // every task fetched: the next poll pays one ahead
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 1, credits);
    const aborted = new AbortController();
    const reservation = slots.reserveSlot(ctx, aborted.signal); // its poll's token now, the fetch's a second later
    await settled();
    aborted.abort(new Error('shutting down'));
    await expect(reservation).rejects.toThrow('shutting down');
    now = 5_000;
    await jest.advanceTimersByTimeAsync(5_000);
    expect(slots.tryReserveSlot(ctx)).not.toBeNull(); // the one slot is free
  });
});

describe('completionsPaid', () => {
  let now = 0;
  beforeEach(() => {
    jest.useFakeTimers();
    now = 0;
  });
  afterEach(() => jest.useRealTimers());

  const info = { isLocal: false, startToCloseTimeoutMs: 30_000, scheduledTimestampMs: 0, scheduleToCloseTimeoutMs: 0 };
  const run = (
    budget: RateBudget,
    isLocal: boolean,
    outcome: () => Promise<unknown>,
    signal = new AbortController().signal,
  ) => {
    const { inbound } = completionsPaid(
      budget,
      2_000,
      () => now,
    )({ info: { ...info, isLocal }, cancellationSignal: signal });
    return inbound.execute!({ args: [], headers: {} }, outcome);
  };

  test("an activity's result is handed back at its completion's turn: a bunch of them spreads over the seconds", async () => {
    const budget = new RateBudget(2, 2, 5_000, () => now); // two calls a second
    const done: number[] = [];
    const attempts = [0, 1, 2, 3].map((i) => run(budget, false, async () => i).then((r) => done.push(r as number)));
    await settled();
    expect(done).toEqual([0, 1]); // the second's two turns
    now = 1000;
    await jest.advanceTimersByTimeAsync(1000);
    await Promise.all(attempts);
    expect(done).toEqual([0, 1, 2, 3]);
  });

  test('a failure waits its turn too and is rethrown as it was', async () => {
    const budget = new RateBudget(1, 1, 5_000, () => now);
    await run(budget, false, async () => 'first'); // takes the second's one turn
    let failed: unknown;
    const attempt = run(budget, false, () => Promise.reject(new Error('boom'))).catch((err: unknown) => (failed = err));
    await settled();
    expect(failed).toBeUndefined();
    now = 1000;
    await jest.advanceTimersByTimeAsync(1000);
    await attempt;
    expect((failed as Error).message).toBe('boom');
  });

  test('a completion waits for room at most as long as it may, then goes; a local activity never waits', async () => {
    const budget = new RateBudget(1, 1, 5_000, () => now);
    await run(budget, false, async () => 'a'); // the second's one call
    const sent: string[] = [];
    const second = run(budget, false, async () => 'b').then((r) => sent.push(`${r as string} ${now}`)); // may wait 2 s
    // A heartbeat timeout of 7.5 s: it may wait a fifth of it less a second, 0.5 s.
    const { inbound } = completionsPaid(
      budget,
      2_000,
      () => now,
    )({ info: { ...info, heartbeatTimeoutMs: 7_500 }, cancellationSignal: new AbortController().signal });
    const third = inbound.execute!({ args: [], headers: {} }, async () => 'c').then((r) =>
      sent.push(`${r as string} ${now}`),
    );
    const local = run(budget, true, async () => 'local').then((r) => sent.push(`${r as string} ${now}`));
    await settled();
    expect(sent).toEqual(['local 0']);
    now = 500;
    await jest.advanceTimersByTimeAsync(500);
    expect(sent).toEqual(['local 0', 'c 500']); // past its wait: out without room
    now = 1000;
    await jest.advanceTimersByTimeAsync(500);
    expect(sent).toEqual(['local 0', 'c 500']); // the budget is one a second: c's call is paid for first
    now = 2000;
    await jest.advanceTimersByTimeAsync(1000);
    await Promise.all([second, third, local]);
    expect(sent).toEqual(['local 0', 'c 500', 'b 2000']);
  });
});

describe('budgetedSlots: the slot pays the poll only', () => {
  test('a budget of two a second lets two polls out in a second', async () => {
    const budget = new RateBudget(2, 2, 5_000, () => 0);
    const slots = budgetedSlots<WorkflowSlotInfo>(budget, 10);
    expect(slots.tryReserveSlot(ctx)).not.toBeNull();
    expect(slots.tryReserveSlot(ctx)).not.toBeNull();
    expect(slots.tryReserveSlot(ctx)).toBeNull();
  });
});

describe('completionWaitCap: waiting to report never times an attempt out', () => {
  const info = { isLocal: false, startToCloseTimeoutMs: 30_000, scheduledTimestampMs: 0, scheduleToCloseTimeoutMs: 0 };
  test('the most it may wait, a second short of each deadline', () => {
    expect(completionWaitCap(info, 0, 1_000, 2_000)).toBe(2_000); // far from its 30 s
    expect(completionWaitCap(info, 0, 28_500, 2_000)).toBe(500); // its start-to-close is 1.5 s away
    expect(completionWaitCap(info, 0, 29_500, 2_000)).toBe(0);
    expect(
      completionWaitCap(
        { ...info, startToCloseTimeoutMs: 600_000, scheduledTimestampMs: 10_000, scheduleToCloseTimeoutMs: 60_000 },
        10_000,
        69_000,
        2_000,
      ),
    ).toBe(0); // schedule-to-close 1 s away
    expect(completionWaitCap({ ...info, heartbeatTimeoutMs: 10_000 }, 0, 1_000, 2_000)).toBe(1_000); // a fifth of 10 s, less a second
  });
});

describe('completionsPaid: a cancelled attempt', () => {
  test('reports at once, where an attempt that was not cancelled waits its turn', async () => {
    jest.useFakeTimers();
    try {
      const clock = () => jest.now();
      const budget = new RateBudget(1, 1, 5_000, clock);
      const info = {
        isLocal: false,
        startToCloseTimeoutMs: 30_000,
        scheduledTimestampMs: 0,
        scheduleToCloseTimeoutMs: 0,
      };
      const attempt = (signal: AbortSignal) =>
        completionsPaid(
          budget,
          2_000,
          clock,
        )({ info: { ...info, scheduledTimestampMs: clock() }, cancellationSignal: signal }).inbound;
      await attempt(new AbortController().signal).execute!({ args: [], headers: {} }, async () => 'first'); // the second's one call
      const cancelled = new AbortController();
      cancelled.abort(new Error('cancelled'));
      let done = false;
      const second = attempt(cancelled.signal).execute!({ args: [], headers: {} }, () =>
        Promise.reject(new Error('cancelled')),
      ).catch(() => (done = true));
      let waiting = true;
      const third = attempt(new AbortController().signal).execute!({ args: [], headers: {} }, async () => 'third').then(
        () => (waiting = false),
      );
      await settled();
      expect(done).toBe(true); // room would have been 1 s away
      expect(waiting).toBe(true); // the third's is
      await second;
      await jest.advanceTimersByTimeAsync(1000);
      await third;
      expect(waiting).toBe(false);
    } finally {
      jest.useRealTimers();
    }
  });
});
