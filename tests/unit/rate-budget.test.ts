import { jest } from '@jest/globals';
import { Metadata, type InterceptingCall, type InterceptorOptions } from '@grpc/grpc-js';
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

  test('several tokens at once wait for all of them', () => {
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
    ['one a second', 1, { limit: 1, ms: 1000 }],
    ['a call every other second', 0.5, { limit: 1, ms: 2000 }],
  ] as const)('%s', (_case, rate, window) => {
    expect(windowOf(rate)).toEqual(window);
  });
});

describe('windowTurn', () => {
  const second = (limit: number) => ({ limit, ms: 1000 });

  test.each([
    // [case, sent, at, limit, n, start of the last]
    ['an empty window: at once', [], 0, 2, 1, 0],
    ['room in the window: at once', [0], 10, 2, 1, 10],
    ['a full window: when its oldest start leaves it', [0, 10], 20, 2, 1, 1000],
    ['overfull (calls that went without waiting): when enough have left it', [0, 10, 20], 30, 2, 1, 1010],
    ['several calls: each takes its own turn', [], 0, 2, 3, 1000],
  ] as const)('%s', (_case, sent, at, limit, n, atMs) => {
    expect(windowTurn(sent, at, second(limit), n)).toBe(atMs);
  });
});

describe('RateBudget', () => {
  /** Runs `fn` on jest's fake clock, the budget's clock too. */
  async function onFakeTime<T>(fn: (clock: () => number) => Promise<T>): Promise<T> {
    jest.useFakeTimers({ now: 0 });
    try {
      return await fn(() => jest.now());
    } finally {
      jest.useRealTimers();
    }
  }
  const never = new AbortController().signal;

  test('a burst above the rate still sends at most the rate within any second', () =>
    onFakeTime(async (clock) => {
      const budget = new RateBudget(3, 10, 5_000, clock);
      const sent: number[] = [];
      const calls = Array.from({ length: 7 }, () => budget.take().then(() => sent.push(clock())));
      await jest.advanceTimersByTimeAsync(2_000);
      await Promise.all(calls);
      expect(sent).toEqual([0, 0, 0, 1000, 1000, 1000, 2000]);
    }));

  test('waitNowMs() says how long a call asking now would wait: nothing while one fits, the next turn once the window is full', () =>
    onFakeTime(async (clock) => {
      const budget = new RateBudget(2, 10, 5_000, clock);
      expect(budget.waitNowMs()).toBe(0);
      expect(budget.tryTake()).toBe(true);
      expect(budget.tryTake()).toBe(true);
      await jest.advanceTimersByTimeAsync(200);
      expect(budget.waitNowMs()).toBe(800); // the second's two are spent: one more goes when the first leaves
      await jest.advanceTimersByTimeAsync(800);
      expect(budget.waitNowMs()).toBe(0);
    }));

  test('charge() counts a call that went without asking when it went: the calls waiting get room once the window has it again', () =>
    onFakeTime(async (clock) => {
      const counted: string[] = [];
      const budget = new RateBudget(2, 10, 5_000, clock, (how) => counted.push(how));
      await jest.advanceTimersByTimeAsync(500);
      budget.charge();
      budget.charge();
      budget.charge(); // three within the second: one more than the rate, and nothing could hold it back
      expect(budget.tryTake()).toBe(false);
      let sentAt: number | undefined;
      const call = budget.take().then(() => (sentAt = clock()));
      await jest.advanceTimersByTimeAsync(1_000);
      await call;
      expect(sentAt).toBe(1_500); // when two of the three have left the window
      expect(counted).toEqual(['unheld', 'unheld', 'unheld', 'paid']);
      expect(budget.recentPeaks()).toEqual({ second: 3, fiveSeconds: 4 });
    }));

  test('calls that wait leave room for those it cannot hold back, as many as came within a second lately: the seconds stay at the rate', () =>
    onFakeTime(async (clock) => {
      const counted: number[] = [];
      const budget = new RateBudget(10, 10, 600_000, clock, () => counted.push(clock()));
      // Three heartbeats late in every second, and far more polls waiting than the rate lets out.
      const polls = Array.from({ length: 1000 }, () => budget.takeWaiting(never));
      for (let s = 0; s < 20; s++) {
        await jest.advanceTimersByTimeAsync(s * 1000 + 900 - clock());
        for (let i = 0; i < 3; i++) budget.charge();
      }
      const inSecondTo = (end: number) => counted.filter((t) => t > end - 1000 && t <= end).length;
      // The first second had no reserve yet (10 polls, then 3 heartbeats); once the budget has seen them, none does.
      expect(inSecondTo(999)).toBe(13);
      const later = counted.filter((t) => t >= 1000 && t < 19_000).map((t) => inSecondTo(t));
      expect(Math.max(...later)).toBe(10);
      expect(budget.reserve()).toBe(3);
      // Room for the polls still: seven a second.
      expect(counted.filter((t) => t >= 10_000 && t < 19_000)).toHaveLength(9 * 10);
      // Once nothing unheld came for a minute, the whole rate is the polls' again.
      await jest.advanceTimersByTimeAsync(50_000);
      expect(budget.reserve()).toBe(3);
      await jest.advanceTimersByTimeAsync(11_000);
      expect(budget.reserve()).toBe(0);
      expect(inSecondTo(clock())).toBe(10);
      await jest.advanceTimersByTimeAsync(60_000);
      await Promise.all(polls); // every poll went
    }));

  test('at 50 a second one call is spare: the first unheld call, or one beyond the pace seen, still finds the second under the rate', () =>
    onFakeTime(async (clock) => {
      const counted: number[] = [];
      const budget = new RateBudget(50, 50, 600_000, clock, () => counted.push(clock()));
      const inSecondTo = (end: number) => counted.filter((t) => t > end - 1000 && t <= end).length;
      expect(budget.reserve()).toBe(1);
      const polls = Array.from({ length: 200 }, () => budget.takeWaiting(never));
      await jest.advanceTimersByTimeAsync(900);
      expect(inSecondTo(clock())).toBe(49);
      budget.charge(); // a heartbeat, the first unheld call
      expect(inSecondTo(clock())).toBe(50);
      expect(budget.reserve()).toBe(2);
      await jest.advanceTimersByTimeAsync(1_000);
      budget.charge();
      budget.charge(); // two now, one beyond the pace seen
      expect(inSecondTo(clock())).toBe(50);
      await jest.advanceTimersByTimeAsync(10_000);
      await Promise.all(polls);
    }));

  test('the reserve is at most half the rate: a storm of unheld calls never stops the calls that wait', () =>
    onFakeTime(async (clock) => {
      const budget = new RateBudget(10, 10, 600_000, clock);
      for (let i = 0; i < 30; i++) budget.charge();
      expect(budget.reserve()).toBe(5);
      let sentAt: number | undefined;
      await jest.advanceTimersByTimeAsync(3_000);
      const call = budget.take().then(() => (sentAt = clock()));
      await jest.advanceTimersByTimeAsync(10);
      await call;
      expect(sentAt).toBe(3_000);
    }));

  test('calls that finish work (turnWithin) go before those that start it; past their wait they go, counted', () =>
    onFakeTime(async (clock) => {
      const counted: string[] = [];
      const budget = new RateBudget(1, 1, 10_000, clock, (how) => counted.push(how));
      const sent: string[] = [];
      await budget.take(); // the second's call
      const polls = [budget.takeWaiting(never).then(() => sent.push(`poll ${clock()}`))];
      const completions = [
        budget.turnWithin(1_500).then(() => sent.push(`completion ${clock()}`)),
        budget.turnWithin(1_500).then(() => sent.push(`late completion ${clock()}`)),
      ];
      await jest.advanceTimersByTimeAsync(3_000);
      await Promise.all([...polls, ...completions]);
      // The first completion at the next second, ahead of the poll that asked before it; the second had 1.5 s to
      // wait, so it went at 1.5 s without room, and the poll waited for the second token after it (one a second).
      expect(sent).toEqual(['completion 1000', 'late completion 1500', 'poll 3000']);
      expect(counted).toEqual(['paid', 'paid', 'unheld', 'paid']);
    }));

  test('take() resolves in the order asked; one that would wait more than maxWaitMs is refused at once and counts nothing', () =>
    onFakeTime(async (clock) => {
      const budget = new RateBudget(1, 1, 2_000, clock);
      await budget.take(); // the burst
      const done: number[] = [];
      const queued = [1, 2].map((i) => budget.take().then(() => done.push(i))); // at 1 s and 2 s: within the wait
      await expect(budget.take()).rejects.toThrow(
        "the controller's Temporal budget (--temporal-qps) is spent for the next 3 s: try again later",
      );
      await expect(budget.take()).rejects.toThrow('spent for the next 3 s'); // the refusal took nothing
      await jest.advanceTimersByTimeAsync(1_000);
      expect(done).toEqual([1]);
      await jest.advanceTimersByTimeAsync(1_000);
      await Promise.all(queued);
      expect(done).toEqual([1, 2]);
    }));

  test('an aborted wait leaves the queue: the one behind it takes its place', () =>
    onFakeTime(async (clock) => {
      const budget = new RateBudget(1, 1, 5_000, clock);
      await budget.take();
      const aborted = new AbortController();
      const first = budget.takeWaiting(aborted.signal);
      let secondAt: number | undefined;
      const second = budget.takeWaiting(never).then(() => (secondAt = clock()));
      aborted.abort(new Error('shutting down'));
      await expect(first).rejects.toThrow('shutting down');
      await jest.advanceTimersByTimeAsync(1_000);
      await second;
      expect(secondAt).toBe(1_000);
    }));

  test('whatever the calls and whenever they ask, none that waited went out into a second already holding the rate', () =>
    fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.array(
          fc.record({
            at: fc.integer({ min: 0, max: 4_000 }),
            kind: fc.constantFrom('take', 'wait', 'finish', 'charge'),
          }),
          { maxLength: 60 },
        ),
        (rate, asks) =>
          onFakeTime(async (clock) => {
            const counted: number[] = [];
            const crowded: string[] = [];
            const budget = new RateBudget(rate, rate, 60_000, clock, (how) => {
              const now = clock();
              counted.push(now);
              const inSecond = counted.filter((t) => t > now - 1000).length;
              if (how === 'paid' && inSecond > rate) crowded.push(`${inSecond} calls in the second to ${now}`);
            });
            const calls: Promise<unknown>[] = [];
            for (const { at, kind } of [...asks].sort((x, y) => x.at - y.at)) {
              await jest.advanceTimersByTimeAsync(at - clock());
              if (kind === 'charge') budget.charge();
              else if (kind === 'take') calls.push(budget.take());
              else if (kind === 'wait') calls.push(budget.takeWaiting(never));
              else calls.push(budget.turnWithin(60_000));
            }
            await jest.advanceTimersByTimeAsync(120_000);
            await Promise.all(calls);
            expect(crowded).toEqual([]);
            expect(counted).toHaveLength(asks.length); // every call went, and once
          }),
      ),
      { numRuns: 50 },
    ));

  test('a rate of 0 or below, or a burst below 1, is refused with the value named', () => {
    expect(() => new RateBudget(0)).toThrow('a rate budget needs a rate above 0, not 0');
    expect(() => new RateBudget(Number.NaN)).toThrow('not NaN');
    expect(() => new RateBudget(5, 0)).toThrow('a rate budget needs a burst of at least 1, not 0');
  });
});

describe('RateBudget.retriesPaid', () => {
  test("the SDK's retries of a call (the same options again) each wait for room; a first attempt was paid outside them", async () => {
    jest.useFakeTimers({ now: 0 });
    try {
      const clock = () => jest.now();
      const budget = new RateBudget(1, 1, 5_000, clock);
      const started: number[] = [];
      const nextCall = () =>
        ({
          start: () => void started.push(clock()),
          cancelWithStatus() {},
          getPeer: () => '',
          sendMessageWithContext() {},
          sendMessage() {},
          startRead() {},
          halfClose() {},
        }) as unknown as ConstructorParameters<typeof InterceptingCall>[0];
      const options = {
        method_definition: { path: '/temporal.api.workflowservice.v1.WorkflowService/DescribeWorkerDeployment' },
      } as InterceptorOptions;
      const interceptor = budget.retriesPaid();
      expect(budget.tryTake()).toBe(true); // the first attempt's call, paid by the budget's own interceptor
      interceptor(options, nextCall).start(new Metadata(), {});
      interceptor(options, nextCall).start(new Metadata(), {}); // its retry
      interceptor({ ...options }, nextCall).start(new Metadata(), {}); // another call (its own options): a first attempt
      await jest.advanceTimersByTimeAsync(0);
      expect(started).toEqual([0, 0]);
      await jest.advanceTimersByTimeAsync(1_000);
      expect(started).toEqual([0, 0, 1_000]);
    } finally {
      jest.useRealTimers();
    }
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
