/**
 * The controller's budget of Temporal calls per second: a token bucket shared by everything the process asks
 * Temporal itself (the watcher's signals and updates, the activities' describes and routing calls), so a
 * thousand rollouts at once queue here instead of flooding the server. The SDK worker's own polls and task
 * completions are not counted here: `--max-activities-per-second` bounds those (see the README's "Scale").
 */
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

export interface Bucket {
  /** Tokens left (negative: calls already promised the next ones). */
  tokens: number;
  /** When `tokens` was counted, in ms. */
  atMs: number;
}

/**
 * Takes one token at `nowMs` from a bucket refilled at `ratePerSecond` up to `burst`. A call that finds none
 * reserves the next one and waits `waitMs` for it, so calls go out in the order they asked (no starvation).
 */
export function takeToken(bucket: Bucket, nowMs: number, ratePerSecond: number, burst: number): { bucket: Bucket; waitMs: number } {
  const refilled = Math.min(burst, bucket.tokens + (Math.max(0, nowMs - bucket.atMs) * ratePerSecond) / 1000);
  const tokens = refilled - 1;
  return { bucket: { tokens, atMs: nowMs }, waitMs: tokens >= 0 ? 0 : Math.ceil((-tokens * 1000) / ratePerSecond) };
}

export class RateBudget {
  private bucket: Bucket;

  /** `ratePerSecond` calls a second, up to `burst` at once after a quiet while (default: a second's worth). */
  constructor(
    readonly ratePerSecond: number,
    readonly burst = Math.max(1, Math.ceil(ratePerSecond)),
    private readonly clock: () => number = Date.now,
  ) {
    if (!(ratePerSecond > 0)) throw new Error(`a rate budget needs a rate above 0, not ${ratePerSecond}`);
    this.bucket = { tokens: this.burst, atMs: clock() };
  }

  /** Resolves when this call may go out. */
  take(): Promise<void> {
    const { bucket, waitMs } = takeToken(this.bucket, this.clock(), this.ratePerSecond, this.burst);
    this.bucket = bucket;
    return waitMs === 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, waitMs));
  }

  /** A Temporal connection's interceptors: the SDK's retries, each attempt started once it has its token. */
  interceptors(): Interceptor[] {
    return [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), this.interceptor()];
  }

  /** A gRPC interceptor that starts each call once it has its token. */
  interceptor(): Interceptor {
    return (options, nextCall) =>
      new InterceptingCall(nextCall(options), {
        start: (metadata, listener, next) => {
          void this.take().then(() => next(metadata, listener));
        },
      });
  }
}
