import { jest } from '@jest/globals';
import fc from 'fast-check';
import { RateBudget, budgeted, takeToken, windowOf, windowTurn, type Bucket } from '../../worker/rate-budget.js';

describe('takeToken', () => {
  const full: Bucket = { tokens: 4, atMs: 0 };

  test.each([
    // [case, bucket, now, rate/s, burst, waitMs, tokens after]
    ['a full bucket: at once', full, 0, 2, 4, 0, 3],
    ['the last token: at once', { tokens: 1, atMs: 0 }, 0, 2, 4, 0, 0],
    ['empty: waits for the next token', { tokens: 0, atMs: 0 }, 0, 2, 4, 500, -1],
    ['two promised already: waits for the third', { tokens: -2, atMs: 0 }, 0, 2, 4, 1500, -3],
    ['refilled by the time passed', { tokens: 0, atMs: 0 }, 1000, 2, 4, 0, 1],
    ['refilled up to the burst only', { tokens: 0, atMs: 0 }, 60_000, 2, 4, 0, 3],
    ['a clock that went back refills nothing', { tokens: 0, atMs: 1000 }, 0, 2, 4, 500, -1],
    ['a fractional rate', { tokens: 0, atMs: 0 }, 0, 0.5, 1, 2000, -1],
  ] as const)('%s', (_case, bucket, now, rate, burst, waitMs, tokens) => {
    const taken = takeToken(bucket, now, rate, burst);
    expect(taken.waitMs).toBe(waitMs);
    expect(taken.bucket).toEqual({ tokens, atMs: now });
  });

  test('several tokens at once (a task: its poll and completion) wait for all of them', () => {
    expect(takeToken({ tokens: 1, atMs: 0 }, 0, 2, 4, 2)).toEqual({ bucket: { tokens: -1, atMs: 0 }, waitMs: 500 });
    expect(takeToken({ tokens: 4, atMs: 0 }, 0, 2, 4, 2)).toEqual({ bucket: { tokens: 2, atMs: 0 }, waitMs: 0 });
  });

  test('over a long run, calls go out at the rate, after the first burst', () => {
    let bucket: Bucket = { tokens: 10, atMs: 0 };
    const sendTimes: number[] = [];
    for (let i = 0; i < 110; i++) {
      const taken = takeToken(bucket, 0, 10, 10); // 110 calls all at t=0
      bucket = taken.bucket;
      sendTimes.push(taken.waitMs);
    }
    expect(sendTimes.slice(0, 10)).toEqual(Array(10).fill(0));
    expect(sendTimes.at(-1)).toBe(10_000); // 100 more at 10/s
    expect(sendTimes).toEqual([...sendTimes].sort((a, b) => a - b)); // first asked, first sent
  });
});

describe('windowOf', () => {
  test.each([
    ['a second of calls within any second', 50, { limit: 50, ms: 1000 }],
    ['a fractional rate: rounded up, over a longer window', 2.5, { limit: 3, ms: 1200 }],
    ['below 2: a task (its poll and completion) still fits', 1, { limit: 2, ms: 2000 }],
    ['a call every other second', 0.5, { limit: 2, ms: 4000 }],
  ] as const)('%s', (_case, rate, window) => {
    expect(windowOf(rate)).toEqual(window);
  });
});

describe('windowTurn', () => {
  const second = (limit: number) => ({ limit, ms: 1000 });

  test.each([
    // [case, sent, at, limit, n, start of the last, sent after]
    ['an empty window: at once', [], 0, 2, 1, 0, [0]],
    ['room in the window: at once', [0], 10, 2, 1, 10, [0, 10]],
    ['a full window: when its oldest start leaves it', [0, 10], 20, 2, 1, 1000, [0, 10, 1000]],
    ['after a reserved turn, never before it (first asked, first sent)', [0, 900], 100, 5, 1, 900, [0, 900, 900]],
    ['several calls: each takes its own turn', [], 0, 2, 3, 1000, [0, 0, 1000]],
    ['only the last 2 × limit starts are kept', [0, 1, 2, 3], 5000, 2, 1, 5000, [1, 2, 3, 5000]],
  ] as const)('%s', (_case, sent, at, limit, n, atMs, after) => {
    expect(windowTurn(sent, at, second(limit), n)).toEqual({ atMs, sent: after });
  });

  test('no window ever holds more than its limit, whenever the calls ask', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.5, max: 20, noNaN: true }), fc.array(fc.integer({ min: 0, max: 3000 }), { maxLength: 200 }), (rate, asks) => {
        const window = windowOf(rate);
        let sent: number[] = [];
        const starts: number[] = [];
        for (const at of [...asks].sort((a, b) => a - b)) {
          const turn = windowTurn(sent, at, window);
          expect(turn.atMs).toBeGreaterThanOrEqual(at);
          sent = turn.sent;
          starts.push(turn.atMs);
        }
        for (const from of starts) expect(starts.filter((t) => t >= from && t < from + window.ms).length).toBeLessThanOrEqual(window.limit);
      }),
    );
  });
});

describe('RateBudget', () => {
  test('a burst above the rate still sends at most the rate within any second', async () => {
    const now = 0;
    const budget = new RateBudget(3, 10, 5_000, () => now);
    const waits: number[] = [];
    jest.useFakeTimers();
    try {
      const calls = Array.from({ length: 7 }, () => budget.take().then(() => waits.push(jest.now())));
      await jest.advanceTimersByTimeAsync(2_000);
      await Promise.all(calls);
    } finally {
      jest.useRealTimers();
    }
    expect(waits.map((t) => t - waits[0]!)).toEqual([0, 0, 0, 1000, 1000, 1000, 2000]);
  });

  test('charge() counts a call that went out without asking when its turn is near: the next call waits for it', async () => {
    const now = 0;
    const budget = new RateBudget(2, 10, 500, () => now); // a burst of 10: only the window can refuse
    expect(budget.charge()).toBe(true);
    expect(budget.charge()).toBe(true);
    expect(budget.tryTake(1)).toBe(false); // the window is full
    expect(budget.charge(2_000)).toBe(true); // its turn is 1 s away: within 2 s, counted
    await expect(budget.take()).rejects.toThrow('spent for the next 1 s'); // its turn is the one after the third's
  });

  test('charge() does not count a call whose turn is further away than it allows: no backlog of its own', async () => {
    const now = 0;
    const budget = new RateBudget(2, 10, 1_500, () => now);
    expect([budget.charge(), budget.charge(), budget.charge(), budget.charge()]).toEqual([true, true, true, true]); // turns 0, 0, 1 s, 1 s
    expect(budget.charge()).toBe(false); // 2 s away: not counted, and nothing reserved
    await expect(budget.take()).rejects.toThrow('spent for the next 2 s'); // not 3 s
  });

  test('turnWithin() waits for a turn within its limit; beyond it the call goes at once, counted up to maxWaitMs ahead', async () => {
    jest.useFakeTimers();
    try {
      let now = 0;
      const budget = new RateBudget(1, 1, 3_000, () => now);
      const done: string[] = [];
      const calls = ['a', 'b', 'c', 'd', 'e'].map((name) => budget.turnWithin(1_000).then(() => done.push(name)));
      await Promise.resolve();
      await Promise.resolve();
      // a: the burst; b: 1 s away, waits; c, d: 2 s and 3 s away, go at once and keep those turns; e: 4 s away, beyond 3 s: uncounted.
      expect(done).toEqual(['a', 'c', 'd', 'e']);
      await expect(budget.take()).rejects.toThrow('spent for the next 4 s'); // after d's turn, not e's
      now = 1000;
      await jest.advanceTimersByTimeAsync(1000);
      await Promise.all(calls);
      expect(done).toEqual(['a', 'c', 'd', 'e', 'b']);
    } finally {
      jest.useRealTimers();
    }
  });

  test('take() resolves in the order asked, each when its token is due', async () => {
    jest.useFakeTimers();
    try {
      let now = 0;
      const budget = new RateBudget(2, 1, 5_000, () => now);
      const done: number[] = [];
      const calls = [0, 1, 2].map((i) => budget.take().then(() => done.push(i)));
      await Promise.resolve();
      expect(done).toEqual([0]);
      now = 500;
      await jest.advanceTimersByTimeAsync(500);
      expect(done).toEqual([0, 1]);
      now = 1000;
      await jest.advanceTimersByTimeAsync(500);
      await Promise.all(calls);
      expect(done).toEqual([0, 1, 2]);
    } finally {
      jest.useRealTimers();
    }
  });

  test('a call whose token is more than maxWaitMs away is refused at once, and takes nothing from the bucket', async () => {
    const now = 0;
    const budget = new RateBudget(1, 1, 2_000, () => now);
    await budget.take(); // the burst
    const queued = [budget.take(), budget.take()]; // due at 1 s and 2 s: within the wait
    await expect(budget.take()).rejects.toThrow("the controller's Temporal budget (--temporal-qps) is spent for the next 3 s: try again later");
    await expect(budget.take()).rejects.toThrow('spent for the next 3 s'); // the refusal reserved nothing
    await Promise.all(queued);
  });

  test('a rate of 0 or below, or a burst below 1, is refused with the value named', () => {
    expect(() => new RateBudget(0)).toThrow('a rate budget needs a rate above 0, not 0');
    expect(() => new RateBudget(Number.NaN)).toThrow('not NaN');
    expect(() => new RateBudget(5, 0)).toThrow('a rate budget needs a burst of at least 1, not 0');
  });
});

describe('budgeted', () => {
  test.each([
    ['/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkerDeployment', undefined, true],
    ['/temporal.api.workflowservice.v1.WorkflowService/SignalWithStartWorkflowExecution', undefined, true],
    ['/temporal.api.workflowservice.v1.WorkflowService/GetSystemInfo', new Date(), false], // connect's: it has a deadline
    ['/temporal.api.workflowservice.v1.WorkflowService/GetWorkflowExecutionHistory', undefined, false], // a long poll
    ['/temporal.api.workflowservice.v1.WorkflowService/PollWorkflowExecutionUpdate', undefined, false],
    ['/temporal.api.workflowservice.v1.WorkflowService/UpdateWorkflowExecution', undefined, false],
  ] as const)('%s (deadline %s): %s', (path, deadline, expected) => {
    expect(budgeted(path, deadline)).toBe(expected);
  });
});
