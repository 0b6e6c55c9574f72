/**
 * The controller's budget of Temporal calls per second, shared by everything the process asks Temporal (the
 * watcher's signals and updates, the activities' describes, routing calls and heartbeats, and through
 * ./task-slots.ts the workers' task polls and completions), so a thousand rollouts at once queue here instead of
 * flooding the server. Two limits: a token bucket (the rate, up to a burst at once) and a sliding window (starts
 * planned so that no second holds more than the rate), so the rate holds second by second, not only on average.
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
const longPolls = new Set(['GetWorkflowExecutionHistory', 'PollWorkflowExecutionUpdate', 'UpdateWorkflowExecution', 'PollActivityTaskQueue', 'PollWorkflowTaskQueue']);

/** Whether a call goes through the budget: not a long poll, and no deadline (it would run out while queued). */
export function budgeted(path: string, deadline: unknown): boolean {
  return deadline === undefined && !longPolls.has(path.slice(path.lastIndexOf('/') + 1));
}

/**
 * Takes `n` tokens (default one) at `nowMs` from a bucket refilled at `ratePerSecond` up to `burst`. A call that
 * finds too few reserves the next ones and waits `waitMs` for them, so calls go out in the order they asked (no
 * starvation).
 */
export function takeToken(bucket: Bucket, nowMs: number, ratePerSecond: number, burst: number, n = 1): { bucket: Bucket; waitMs: number } {
  const refilled = Math.min(burst, bucket.tokens + (Math.max(0, nowMs - bucket.atMs) * ratePerSecond) / 1000);
  const tokens = refilled - n;
  return { bucket: { tokens, atMs: nowMs }, waitMs: tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / ratePerSecond) };
}

/** The sliding window: at most `limit` call starts within any `ms`. */
export interface Window {
  limit: number;
  ms: number;
}

/**
 * The window for a rate: a second's worth of calls within any second, and for a rate below 2 two calls (a task's
 * poll and completion, taken together) within as long as the rate takes for them.
 */
export function windowOf(ratePerSecond: number): Window {
  const limit = Math.max(2, Math.ceil(ratePerSecond));
  return { limit, ms: (1000 * limit) / ratePerSecond };
}

/**
 * The earliest time at or after `atMs` when `n` more calls may start, given `sent`, the start times of the calls
 * before them (ascending; later ones are reserved), with at most `window.limit` starts within any `window.ms`.
 * Returns the start times with the new ones appended (the last `2 × limit` kept) and when the last of the `n`
 * starts.
 */
export function windowTurn(sent: readonly number[], atMs: number, window: Window, n = 1): { sent: number[]; atMs: number } {
  const times = [...sent];
  let at = Math.max(atMs, times.at(-1) ?? atMs);
  for (let i = 0; i < n; i++) {
    if (times.length >= window.limit) at = Math.max(at, times.at(-window.limit)! + window.ms);
    times.push(at);
  }
  return { sent: times.slice(-2 * window.limit), atMs: at };
}

export class RateBudget {
  private bucket: Bucket;
  /** Start times of the latest calls, reservations included: the sliding window's record. */
  private sent: number[] = [];
  private readonly window: Window;

  /**
   * `ratePerSecond` calls a second, up to `burst` at once after a quiet while (default, and at most in effect: a
   * second's worth), their starts planned so that no second holds more than `ratePerSecond` (`windowOf`). A call
   * that would wait more than `maxWaitMs` for its turn is refused at once instead (RESOURCE_EXHAUSTED): the queue
   * stays short, so no activity spends its timeout in it. The clock is monotonic: a wall clock set back would
   * hold every call back as long.
   */
  constructor(
    readonly ratePerSecond: number,
    readonly burst = Math.max(1, Math.ceil(ratePerSecond)),
    readonly maxWaitMs = 5_000,
    private readonly clock: () => number = () => performance.now(),
  ) {
    if (!(ratePerSecond > 0)) throw new Error(`a rate budget needs a rate above 0, not ${ratePerSecond}`);
    if (!(burst >= 1)) throw new Error(`a rate budget needs a burst of at least 1, not ${burst}`);
    this.bucket = { tokens: this.burst, atMs: clock() };
    this.window = windowOf(ratePerSecond);
  }

  /** When `n` calls asked for now may start, by both limits, and the state that reserves them (not yet kept). */
  private turn(n: number) {
    const now = this.clock();
    const { bucket, waitMs } = takeToken(this.bucket, now, this.ratePerSecond, this.burst, n);
    const { sent, atMs } = windowTurn(this.sent, now + waitMs, this.window, n);
    return { bucket, sent, waitMs: atMs - now, keep: () => ((this.bucket = bucket), (this.sent = sent)) };
  }

  /** Resolves when this call may go out; rejects at once (taking nothing) when that is more than `maxWaitMs` away. */
  take(): Promise<void> {
    const { waitMs, keep } = this.turn(1);
    if (waitMs > this.maxWaitMs) return Promise.reject(new BudgetSpent(waitMs));
    keep();
    return waitMs === 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, waitMs));
  }

  /**
   * Resolves once `n` calls may go out, however long that takes (a worker's poll and the completion it leads to:
   * they must wait their turn, not fail). Aborted, it gives its tokens back and rejects with `signal.reason`.
   */
  takeWaiting(n: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    const { sent, waitMs, keep } = this.turn(n);
    keep();
    if (waitMs === 0) return Promise.resolve();
    const reserved = sent.slice(-n);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (signal.removeEventListener('abort', abort), resolve()), waitMs);
      const abort = () => {
        clearTimeout(timer);
        this.bucket = { ...this.bucket, tokens: this.bucket.tokens + n };
        // Its starts leave the window's record; the calls reserved after them keep their (later) turns.
        for (const at of reserved) {
          const i = this.sent.lastIndexOf(at);
          if (i >= 0) this.sent.splice(i, 1);
        }
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', abort, { once: true });
    });
  }

  /** Takes `n` tokens if they are there now (an eager task: no waiting). */
  tryTake(n: number): boolean {
    return this.takeWithin(n, 0);
  }

  /**
   * Counts a call that went out without asking (an activity's heartbeat: the SDK sends it on its own connection,
   * and a late one would time the activity out) if its turn is at most `maxDelayMs` away: the calls after it wait
   * for the turn it took. One beyond that is not counted, so calls the process cannot hold back never starve the
   * ones it can (a thousand waits heartbeat about 60 times a second).
   */
  charge(maxDelayMs = 1_000): boolean {
    return this.takeWithin(1, maxDelayMs);
  }

  /**
   * Resolves at a call's turn if that is at most `maxWaitMs` away: for a call that must go out (a task's
   * completion) but may wait a little, so the calls it would have bunched with spread out instead. One whose turn
   * is further goes out at once, counted as `charge` counts (the calls after it wait for the turn it took) when
   * that turn is within the wait a call of the process's own accepts, and uncounted beyond.
   */
  async turnWithin(maxWaitMs: number): Promise<void> {
    const { waitMs, keep } = this.turn(1);
    if (waitMs > this.maxWaitMs) return;
    keep();
    if (waitMs > 0 && waitMs <= maxWaitMs) await new Promise((resolve) => setTimeout(resolve, waitMs));
  }

  /** Reserves `n` turns if the last is at most `maxWaitMs` away; otherwise reserves nothing. */
  private takeWithin(n: number, maxWaitMs: number): boolean {
    const { waitMs, keep } = this.turn(n);
    if (waitMs > maxWaitMs) return false;
    keep();
    return true;
  }

  /**
   * A Temporal connection's interceptors: the budget, then the SDK's retries. A call the budget refuses fails to
   * its caller at once (the activity's retry policy or the watcher's backoff tries again later), not in the SDK's
   * retry loop, which expects every first attempt to reach the server.
   */
  interceptors(): Interceptor[] {
    return [this.interceptor(), makeGrpcRetryInterceptor(defaultGrpcRetryOptions())];
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
              listener.onReceiveStatus({ code: status.RESOURCE_EXHAUSTED, details: err.message, metadata: new Metadata() });
            },
          );
        },
      });
    };
  }
}

export class BudgetSpent extends Error {
  constructor(waitMs: number) {
    super(`the controller's Temporal budget (--temporal-qps) is spent for the next ${Math.round(waitMs / 1000)} s: try again later`);
  }
}
