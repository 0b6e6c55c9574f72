/**
 * The controller's budget of Temporal calls per second: a token bucket shared by everything the process asks
 * Temporal (the watcher's signals and updates, the activities' describes and routing calls, and through
 * ./task-slots.ts the workers' task polls and completions), so a thousand rollouts at once queue here instead of
 * flooding the server.
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

export class RateBudget {
  private bucket: Bucket;

  /**
   * `ratePerSecond` calls a second, up to `burst` at once after a quiet while (default: a second's worth). A call
   * that would wait more than `maxWaitMs` for its token is refused at once instead (RESOURCE_EXHAUSTED): the queue
   * stays short, so no activity spends its timeout in it.
   */
  constructor(
    readonly ratePerSecond: number,
    readonly burst = Math.max(1, Math.ceil(ratePerSecond)),
    readonly maxWaitMs = 5_000,
    private readonly clock: () => number = Date.now,
  ) {
    if (!(ratePerSecond > 0)) throw new Error(`a rate budget needs a rate above 0, not ${ratePerSecond}`);
    if (!(burst >= 1)) throw new Error(`a rate budget needs a burst of at least 1, not ${burst}`);
    this.bucket = { tokens: this.burst, atMs: clock() };
  }

  /** Resolves when this call may go out; rejects at once (taking nothing) when that is more than `maxWaitMs` away. */
  take(): Promise<void> {
    const { bucket, waitMs } = takeToken(this.bucket, this.clock(), this.ratePerSecond, this.burst);
    if (waitMs > this.maxWaitMs) return Promise.reject(new BudgetSpent(waitMs));
    this.bucket = bucket;
    return waitMs === 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, waitMs));
  }

  /**
   * Resolves once `n` calls may go out, however long that takes (a worker's poll and the completion it leads to:
   * they must wait their turn, not fail). Aborted, it gives its tokens back and rejects with `signal.reason`.
   */
  takeWaiting(n: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    const { bucket, waitMs } = takeToken(this.bucket, this.clock(), this.ratePerSecond, this.burst, n);
    this.bucket = bucket;
    if (waitMs === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => (signal.removeEventListener('abort', abort), resolve()), waitMs);
      const abort = () => {
        clearTimeout(timer);
        this.bucket = { ...this.bucket, tokens: this.bucket.tokens + n };
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', abort, { once: true });
    });
  }

  /** Takes `n` tokens if they are there now (an eager task: no waiting). */
  tryTake(n: number): boolean {
    const { bucket, waitMs } = takeToken(this.bucket, this.clock(), this.ratePerSecond, this.burst, n);
    if (waitMs > 0) return false;
    this.bucket = bucket;
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
