import { RetryScheduler, backoffMs, signalBackoff, type Timers } from '../../starter/retry-scheduler.js';

describe('backoffMs', () => {
  test.each([
    [0, 200],
    [1, 400],
    [3, 1600],
    [7, 25_600],
    [8, 30_000],
    [1000, 30_000],
  ])('retry %d waits %d ms before jitter', (attempt, ms) =>
    expect(backoffMs(attempt, signalBackoff, () => 0)).toBe(ms),
  );

  test('jitter only shortens a delay, by at most its share', () => {
    expect(backoffMs(3, signalBackoff, () => 0.999999)).toBe(1280);
    expect(backoffMs(20, signalBackoff, () => 0.5)).toBe(27_000);
  });
});

/** Timers run by hand: `fire()` runs every due timer, in order. */
function manualTimers() {
  const due: { fn: () => void; ms: number; cleared: boolean }[] = [];
  const timers: Timers = {
    setTimeout: (fn, ms) => {
      const t = { fn, ms, cleared: false };
      due.push(t);
      return t;
    },
    clearTimeout: (t) => void ((t as { cleared: boolean }).cleared = true),
  };
  return {
    timers,
    delays: () => due.map((t) => t.ms),
    pending: () => due.filter((t) => !t.cleared).length,
    fire: () => {
      for (const t of due.splice(0)) if (!t.cleared) t.fn();
    },
  };
}

const settle = () => new Promise<void>((r) => setImmediate(r));

describe('RetryScheduler', () => {
  const make = () => {
    const clock = manualTimers();
    const retries: string[] = [];
    const scheduler = new RetryScheduler({
      timers: clock.timers,
      random: () => 0,
      onRetry: (key, err, ms) => retries.push(`${key} ${ms} ${(err as Error).message}`),
    });
    return { clock, retries, scheduler };
  };

  test('a failure is retried with growing delays until it succeeds, with no new event', async () => {
    const { clock, retries, scheduler } = make();
    let calls = 0;
    scheduler.schedule('a', async () => {
      if (++calls < 4) throw new Error(`down ${calls}`);
    });
    for (let i = 0; i < 3; i++) {
      await settle();
      clock.fire();
    }
    await settle();
    expect(calls).toBe(4);
    expect(retries).toEqual(['a 200 down 1', 'a 400 down 2', 'a 800 down 3']);
    expect(scheduler.size).toBe(0);
  });

  test('newer work replaces a waiting retry, and starts from the first delay again', async () => {
    const { clock, scheduler } = make();
    const ran: string[] = [];
    scheduler.schedule('a', async () => {
      ran.push('old');
      throw new Error('down');
    });
    await settle();
    expect(clock.pending()).toBe(1);
    scheduler.schedule('a', async () => void ran.push('new'));
    await settle();
    expect(clock.pending()).toBe(0);
    clock.fire();
    await settle();
    expect(ran).toEqual(['old', 'new']);
  });

  test('work for one key waits for the running one; only the latest waiting work runs', async () => {
    const { scheduler } = make();
    const ran: string[] = [];
    let release!: () => void;
    scheduler.schedule('a', () => new Promise<void>((r) => (release = () => (ran.push('first'), r()))));
    scheduler.schedule('a', async () => void ran.push('second'));
    scheduler.schedule('a', async () => void ran.push('third'));
    scheduler.schedule('b', async () => void ran.push('other key'));
    await settle();
    expect(ran).toEqual(['other key']);
    release();
    await settle();
    expect(ran).toEqual(['other key', 'first', 'third']);
  });

  test('a failure superseded while running is not retried', async () => {
    const { clock, scheduler } = make();
    const ran: string[] = [];
    let fail!: () => void;
    scheduler.schedule('a', () => new Promise<void>((_, reject) => (fail = () => reject(new Error('down')))));
    scheduler.schedule('a', async () => void ran.push('newer'));
    fail();
    await settle();
    expect(ran).toEqual(['newer']);
    expect(clock.pending()).toBe(0);
  });

  test('stop() cancels waiting retries and refuses new work', async () => {
    const { clock, scheduler } = make();
    let calls = 0;
    scheduler.schedule('a', async () => {
      calls++;
      throw new Error('down');
    });
    await settle();
    scheduler.stop();
    expect(clock.pending()).toBe(0);
    scheduler.schedule('a', async () => void calls++);
    clock.fire();
    await settle();
    expect(calls).toBe(1);
    expect(scheduler.size).toBe(0);
  });
});
