/**
 * The controller's budget of Temporal calls per second, shared by everything the process asks Temporal (the
 * watcher's signals and updates, the activities' describes, routing calls and heartbeats, and through
 * ./task-slots.ts the workers' task polls and completions), so a thousand rollouts at once queue here instead of
 * flooding the server. Every call is counted when it goes out; two limits decide when a waiting one may: a token
 * bucket (the rate, up to a burst at once) and a sliding window (no second holds more than the rate, counting the
 * calls that went out without waiting too), so the rate holds second by second, not only on average. The calls it
 * cannot hold back (heartbeats, history fetches, completions past their wait) get room kept for them: the calls
 * that wait leave as many free in each second as the most that came within one second lately, and a spare (`reserve`).
 */
import { InterceptingCall, Metadata, status, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

export interface Bucket {
  /** Tokens left (negative: calls already promised the next ones). */
  tokens: number;
  /** When `tokens` was counted, in ms. */
  atMs: number;
}

/** Long polls (a round can last the server's long-poll interval): a token each would spend the budget on waiting. */
const longPolls = new Set([
  'GetWorkflowExecutionHistory',
  'PollWorkflowExecutionUpdate',
  'UpdateWorkflowExecution',
  'PollActivityTaskQueue',
  'PollWorkflowTaskQueue',
]);

/** Whether a call goes through the budget: not a long poll, and no deadline (it would run out while queued). */
export function budgeted(path: string, deadline: unknown): boolean {
  return deadline === undefined && !longPolls.has(path.slice(path.lastIndexOf('/') + 1));
}

/**
 * Takes `n` tokens (default one) at `nowMs` from a bucket refilled at `ratePerSecond` up to `burst`. A call that
 * finds too few reserves the next ones and waits `waitMs` for them, so calls go out in the order they asked (no
 * starvation).
 */
export function takeToken(
  bucket: Bucket,
  nowMs: number,
  ratePerSecond: number,
  burst: number,
  n = 1,
): { bucket: Bucket; waitMs: number } {
  const refilled = Math.min(burst, bucket.tokens + (Math.max(0, nowMs - bucket.atMs) * ratePerSecond) / 1000);
  const tokens = refilled - n;
  return { bucket: { tokens, atMs: nowMs }, waitMs: tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / ratePerSecond) };
}

/** The sliding window: at most `limit` call starts within any `ms`. */
export interface Window {
  limit: number;
  ms: number;
}

/** The window for a rate: a second's worth of calls within any second; below one a second, one call within as long as it takes. */
export function windowOf(ratePerSecond: number): Window {
  const limit = Math.ceil(ratePerSecond);
  return { limit, ms: (1000 * limit) / ratePerSecond };
}

/**
 * The earliest time at or after `atMs` when the last of `n` more calls may start, given `sent`, the start times of
 * the calls before them (ascending), with at most `window.limit` starts within any `window.ms`.
 */
export function windowTurn(sent: readonly number[], atMs: number, window: Window, n = 1): number {
  const times = [...sent];
  let at = Math.max(atMs, times.at(-1) ?? atMs);
  for (let i = 0; i < n; i++) {
    if (times.length >= window.limit) at = Math.max(at, times.at(-window.limit)! + window.ms);
    times.push(at);
  }
  return at;
}

/** A call waiting for room in the budget. */
interface Waiter {
  go(): void;
}

/** The longest window the budget's peaks are read over. */
const peakWindowMs = 5_000;
/** How long the budget remembers the calls it could not hold back, to keep room for them (`RateBudget.reserve`). */
const reserveMemoryMs = 60_000;
/** The share of the window the reserve keeps beyond what came lately (`RateBudget.reserve`). */
const spareShare = 0.02;

export class RateBudget {
  private bucket: Bucket;
  /** Start times of the calls counted (ascending), for the last `peakWindowMs` or the window, whichever is longer. */
  private starts: number[] = [];
  private readonly keepMs: number;
  /** Calls waiting for room, first come, first served: those that finish work (completions, retries) before the rest. */
  private readonly finishing: Waiter[] = [];
  private readonly starting: Waiter[] = [];
  private timer?: ReturnType<typeof setTimeout>;
  private readonly window: Window;
  /** The most calls counted within one second and within five, by the second they ended in (the last ten). */
  private readonly peaks = new Map<number, { second: number; fiveSeconds: number }>();
  /** Start times of the calls that went without waiting (ascending), for the last second. */
  private unheldStarts: number[] = [];
  /** The most such calls within one second, by the second it ended in (for `reserveMemoryMs`). */
  private readonly unheldPeaks = new Map<number, number>();

  /**
   * `ratePerSecond` calls a second, up to `burst` at once after a quiet while (default, and at most in effect: a
   * second's worth), no window of `windowOf(ratePerSecond)` holding more. A call of the process's own that would
   * wait more than `maxWaitMs` is refused at once instead (RESOURCE_EXHAUSTED): the queue stays short, so no
   * activity spends its timeout in it. The clock is monotonic: a wall clock set back would hold every call back as
   * long. `onCount` hears of every call counted: whether it waited for room or went without (`charge`, and a
   * completion past its wait).
   */
  constructor(
    readonly ratePerSecond: number,
    readonly burst = Math.max(1, Math.ceil(ratePerSecond)),
    readonly maxWaitMs = 5_000,
    private readonly clock: () => number = () => performance.now(),
    private readonly onCount: (how: 'paid' | 'unheld') => void = () => {},
  ) {
    if (!(ratePerSecond > 0)) throw new Error(`a rate budget needs a rate above 0, not ${ratePerSecond}`);
    if (!(burst >= 1)) throw new Error(`a rate budget needs a burst of at least 1, not ${burst}`);
    this.bucket = { tokens: this.burst, atMs: clock() };
    this.window = windowOf(ratePerSecond);
    this.keepMs = Math.max(peakWindowMs, this.window.ms);
  }

  /** Resolves when this call may go out; rejects at once (counting nothing) when that is more than `maxWaitMs` away. */
  take(): Promise<void> {
    if (this.tryTake()) return Promise.resolve();
    const waitMs = this.expectedWaitMs(this.clock());
    if (waitMs > this.maxWaitMs) return Promise.reject(new BudgetSpent(waitMs));
    return new Promise((resolve) => this.enqueue(this.starting, { go: resolve }));
  }

  /**
   * Resolves once a call may go out, however long that takes (a worker's poll: it must wait its turn, not fail).
   * Aborted, it leaves the queue and rejects with `signal.reason`.
   */
  takeWaiting(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    if (this.tryTake()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { go: () => (signal.removeEventListener('abort', abort), resolve()) };
      const abort = () => {
        this.starting.splice(this.starting.indexOf(waiter), 1);
        this.pump();
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', abort, { once: true });
      this.enqueue(this.starting, waiter);
    });
  }

  /** Counts a call if it may go out now, with nobody waiting (an eager task: no waiting). */
  tryTake(): boolean {
    const now = this.clock();
    if (!this.idle() || !this.fits(now)) return false;
    this.count(now, 'paid');
    return true;
  }

  /**
   * Counts a call that went out without asking (an activity's heartbeat: the SDK sends it on its own connection,
   * and a late one would time the activity out; a history fetch), when it went: the calls waiting get room only
   * once the window has it again.
   */
  charge(): void {
    this.count(this.clock(), 'unheld');
  }

  /**
   * Resolves when a call that finishes work (a task's completion, a retry) may go out, ahead of those that start
   * work, waiting at most `maxWaitMs`: it must go out, but may wait a little so the calls it would have bunched
   * with spread out instead. Past its wait it goes, counted when it goes.
   */
  turnWithin(maxWaitMs: number): Promise<void> {
    const now = this.clock();
    if (!this.finishing.length && this.fits(now)) return (this.count(now, 'paid'), Promise.resolve());
    if (maxWaitMs <= 0) return (this.count(now, 'unheld'), Promise.resolve());
    return new Promise((resolve) => {
      const waiter: Waiter = { go: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        this.finishing.splice(this.finishing.indexOf(waiter), 1);
        this.count(this.clock(), 'unheld');
        resolve();
      }, maxWaitMs);
      this.enqueue(this.finishing, waiter);
    });
  }

  /** How long a call asking now would wait for its turn (0: it would go at once). */
  waitNowMs(): number {
    const now = this.clock();
    return this.idle() && this.fits(now) ? 0 : this.expectedWaitMs(now);
  }

  /** The most calls counted within any second and any five seconds that ended in the last ten seconds. */
  recentPeaks(): { second: number; fiveSeconds: number } {
    const now = this.clock();
    this.forgetPeaks(now);
    let second = 0;
    let fiveSeconds = 0;
    for (const p of this.peaks.values()) {
      second = Math.max(second, p.second);
      fiveSeconds = Math.max(fiveSeconds, p.fiveSeconds);
    }
    return { second, fiveSeconds };
  }

  private idle(): boolean {
    return !this.finishing.length && !this.starting.length;
  }

  /** The calls counted within `ms` before `now` (those that started after `now - ms`). */
  private countSince(now: number, ms: number): number {
    let i = this.starts.length;
    while (i > 0 && this.starts[i - 1]! > now - ms) i--;
    return this.starts.length - i;
  }

  /**
   * The calls a window keeps free for those the budget cannot hold back: as many as came within one second at
   * most over the last minute, plus a spare of 2 % of the window (one at the default 50), and at most half the
   * window. A waiting call fills a second only up to the rest, so the unheld ones, at the pace they came lately,
   * still find the second under the rate, and the spare covers one that comes first or beyond that pace (at 1,000
   * rollouts a ten-second memory and no spare let them top a second by one or two).
   */
  reserve(now = this.clock()): number {
    this.forgetPeaks(now);
    let most = 0;
    for (const n of this.unheldPeaks.values()) most = Math.max(most, n);
    return Math.min(most + Math.floor(this.window.limit * spareShare), Math.floor(this.window.limit / 2));
  }

  /** The window for the calls that wait: the rate's, less the reserve. */
  private heldWindow(now: number): Window {
    return { limit: this.window.limit - this.reserve(now), ms: this.window.ms };
  }

  /** Whether a call may start at `now`: the bucket has a token and the window room (beyond the reserve). */
  private fits(now: number): boolean {
    return (
      takeToken(this.bucket, now, this.ratePerSecond, this.burst).waitMs === 0 &&
      this.countSince(now, this.window.ms) < this.heldWindow(now).limit
    );
  }

  private count(now: number, how: 'paid' | 'unheld'): void {
    this.bucket = takeToken(this.bucket, now, this.ratePerSecond, this.burst).bucket;
    this.starts.push(now);
    let old = 0;
    while (this.starts[old]! <= now - this.keepMs) old++;
    if (old) this.starts.splice(0, old);
    const second = Math.floor(now / 1000);
    const p = this.peaks.get(second) ?? { second: 0, fiveSeconds: 0 };
    this.peaks.set(second, {
      second: Math.max(p.second, this.countSince(now, 1000)),
      fiveSeconds: Math.max(p.fiveSeconds, this.countSince(now, peakWindowMs)),
    });
    if (how === 'unheld') {
      this.unheldStarts = this.unheldStarts.filter((t) => t > now - 1000);
      this.unheldStarts.push(now);
      this.unheldPeaks.set(second, Math.max(this.unheldPeaks.get(second) ?? 0, this.unheldStarts.length));
    }
    this.forgetPeaks(now);
    this.onCount(how);
  }

  private forgetPeaks(now: number): void {
    const thisSecond = Math.floor(now / 1000);
    for (const second of this.peaks.keys()) if (second < thisSecond - 10) this.peaks.delete(second);
    for (const second of this.unheldPeaks.keys())
      if (second <= thisSecond - reserveMemoryMs / 1000) this.unheldPeaks.delete(second);
  }

  /** How long one more call would wait now: every call queued goes first, as fast as the budget lets them. */
  private expectedWaitMs(now: number): number {
    const calls = this.finishing.length + this.starting.length + 1;
    const bucketWait = takeToken(this.bucket, now, this.ratePerSecond, this.burst, calls).waitMs;
    return Math.max(bucketWait, windowTurn(this.starts, now, this.heldWindow(now), calls) - now);
  }

  private enqueue(queue: Waiter[], waiter: Waiter): void {
    queue.push(waiter);
    if (!this.timer) this.pump();
  }

  /** Lets the waiting calls go while they fit, those finishing work first; then waits for the next to fit. */
  private pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const now = this.clock();
    for (;;) {
      const queue = this.finishing.length ? this.finishing : this.starting;
      if (!queue.length) return;
      if (!this.fits(now)) break;
      this.count(now, 'paid');
      queue.shift()!.go();
    }
    this.timer = setTimeout(() => this.pump(), Math.max(1, this.whenFits(now) - now));
  }

  /** When the next call fits if no other is counted meanwhile: the bucket has refilled and the window moved on. */
  private whenFits(now: number): number {
    const bucketAt = now + takeToken(this.bucket, now, this.ratePerSecond, this.burst).waitMs;
    const inWindow = this.countSince(now, this.window.ms);
    const leaving = inWindow - this.heldWindow(now).limit; // how many starts must leave the window before one more fits
    const windowAt = leaving >= 0 ? this.starts[this.starts.length - inWindow + leaving]! + this.window.ms : now;
    return Math.max(bucketAt, windowAt);
  }

  /**
   * A Temporal connection's interceptors: the budget, then the SDK's retries, then each retry paid. A call the
   * budget refuses fails to its caller at once (the activity's retry policy or the watcher's backoff tries again
   * later), not in the SDK's retry loop, which expects every first attempt to reach the server.
   */
  interceptors(): Interceptor[] {
    return [this.interceptor(), makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), this.retriesPaid()];
  }

  /**
   * A gRPC interceptor that starts each budgeted call once it has its token, and ends one refused by the budget
   * with RESOURCE_EXHAUSTED.
   */
  interceptor(): Interceptor {
    return (options, nextCall) => {
      const call = nextCall(options);
      if (!budgeted(options.method_definition.path, options.deadline)) return new InterceptingCall(call);
      return new InterceptingCall(call, {
        start: (metadata, listener, next) => {
          this.take().then(
            () => next(metadata, listener),
            (err: Error) => {
              call.cancelWithStatus(status.RESOURCE_EXHAUSTED, err.message);
              listener.onReceiveStatus({
                code: status.RESOURCE_EXHAUSTED,
                details: err.message,
                metadata: new Metadata(),
              });
            },
          );
        },
      });
    };
  }

  /**
   * Inside the SDK's retry interceptor, which starts every attempt of a call with the same options: the first
   * attempt was paid outside it, each further one is a call that finishes work (`turnWithin`, at most `maxWaitMs`).
   */
  retriesPaid(): Interceptor {
    const attempted = new WeakSet<object>();
    return (options, nextCall) => {
      const call = nextCall(options);
      if (!budgeted(options.method_definition.path, options.deadline)) return new InterceptingCall(call);
      if (!attempted.has(options)) return (attempted.add(options), new InterceptingCall(call));
      return new InterceptingCall(call, {
        start: (metadata, listener, next) => void this.turnWithin(this.maxWaitMs).then(() => next(metadata, listener)),
      });
    };
  }
}

export class BudgetSpent extends Error {
  constructor(waitMs: number) {
    super(
      `the controller's Temporal budget (--temporal-qps) is spent for the next ${Math.round(waitMs / 1000)} s: try again later`,
    );
  }
}
