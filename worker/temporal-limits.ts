/**
 * How fast the controller process talks to Temporal, from one rate (`--temporal-qps`), by the SDK's documented
 * means only:
 * - workflow tasks: a custom slot supplier hands out at most `workflowTaskSlots` slots at once, and a new one at
 *   most at its share of the rate (a task needs a slot; its poll, completion and any history fetch follow it);
 * - activities: `maxActivitiesPerSecond` on the main worker (the waits' worker is bounded by its slots);
 * - the process's own calls (the watcher's signals, the activities' describes and routing writes, each retry):
 *   a token bucket inside the client's retry interceptor of every connection;
 * - heartbeats: the SDK's throttle (0.8 × the heartbeat timeout), set per kind of wait in
 *   ../workflows/activity-options.ts.
 * The shares follow the calls a rollout makes of each kind (docs/design/temporal-limits.md).
 */
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { CustomSlotSupplier, SlotInfo, TunerHolder, WorkerOptions } from '@temporalio/worker';

/** The shares of the rate: workflow tasks (each about three calls), activities (each about two), own calls. */
export const rateShares = { workflowTasks: 0.14, activities: 0.08, ownCalls: 0.28 } as const;

/** A token bucket: `ratePerSecond`, up to `burst` at once; tokens are promised in the order they are asked for. */
export class TokenBucket {
  private tokens: number;
  private atMs: number;

  constructor(
    readonly ratePerSecond: number,
    readonly burst = 1,
    nowMs = 0,
  ) {
    this.tokens = burst;
    this.atMs = nowMs;
  }

  /** Takes a token at `nowMs`: how long until it is the taker's (0: now). */
  take(nowMs: number): number {
    this.refill(nowMs);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.ratePerSecond);
  }

  /** Takes a token at `nowMs` only if one is there now. */
  tryTake(nowMs: number): boolean {
    this.refill(nowMs);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Gives back a token taken and not used (a wait given up). */
  giveBack(): void {
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  private refill(nowMs: number): void {
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, nowMs - this.atMs) * this.ratePerSecond) / 1000);
    this.atMs = Math.max(this.atMs, nowMs);
  }
}

/** Long polls: they wait for work, not on the server; a token each would pace the waiting. */
const longPolls = new Set([
  'GetWorkflowExecutionHistory',
  'PollWorkflowExecutionUpdate',
  'UpdateWorkflowExecution',
  'PollActivityTaskQueue',
  'PollWorkflowTaskQueue',
]);

/** A gRPC interceptor that starts each call (not a long poll) when `bucket` has a token for it. */
export function pacedCalls(bucket: TokenBucket, clock: () => number = Date.now): Interceptor {
  return (options, nextCall) => {
    const call = nextCall(options);
    const path = options.method_definition.path;
    if (longPolls.has(path.slice(path.lastIndexOf('/') + 1))) return new InterceptingCall(call);
    return new InterceptingCall(call, {
      start: (metadata, listener, next) => {
        const waitMs = bucket.take(clock());
        if (waitMs === 0) next(metadata, listener);
        else setTimeout(() => next(metadata, listener), waitMs);
      },
    });
  };
}

/**
 * At most `maxSlots` tasks at once (as the SDK's fixed-size supplier), a new slot at most at `bucket`'s rate. The
 * SDK reserves a slot before it polls and releases one a poll did not use.
 */
export function pacedSlots<SI extends SlotInfo>(
  bucket: TokenBucket,
  maxSlots: number,
  clock: () => number = Date.now,
): CustomSlotSupplier<SI> {
  let used = 0;
  const waiting: Array<() => void> = [];
  const free = () => {
    used--;
    waiting.shift()?.();
  };
  /** Resolves once a slot is ours (first come, first served); aborted, it leaves the queue. */
  const slot = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason as Error);
      if (used < maxSlots) return void (used++, resolve());
      const granted = () => (signal.removeEventListener('abort', abort), used++, resolve());
      const abort = () => {
        waiting.splice(waiting.indexOf(granted), 1);
        reject(signal.reason as Error);
      };
      waiting.push(granted);
      signal.addEventListener('abort', abort, { once: true });
    });
  /** Resolves when a token is ours; aborted, the token is given back. */
  const token = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason as Error);
      const waitMs = bucket.take(clock());
      if (waitMs === 0) return resolve();
      const timer = setTimeout(() => (signal.removeEventListener('abort', abort), resolve()), waitMs);
      const abort = () => {
        clearTimeout(timer);
        bucket.giveBack();
        reject(signal.reason as Error);
      };
      signal.addEventListener('abort', abort, { once: true });
    });
  return {
    type: 'custom',
    async reserveSlot(_ctx, signal) {
      await slot(signal);
      try {
        await token(signal);
      } catch (err) {
        free();
        throw err;
      }
      return {};
    },
    tryReserveSlot() {
      if (used >= maxSlots || !bucket.tryTake(clock())) return null;
      used++;
      return {};
    },
    markSlotUsed() {},
    releaseSlot: free,
  };
}

export interface TemporalLimits {
  /** Every client connection's interceptors: the SDK's retries, each attempt paced. */
  interceptors: Interceptor[];
  /** The main worker's (RolloutWorkflow and its activities) and the waits worker's options. */
  main: Pick<WorkerOptions, 'tuner' | 'maxActivitiesPerSecond'>;
  waits: Pick<WorkerOptions, 'tuner'>;
}

/** The limits for `qps` Temporal calls a second (the shares: `rateShares`). */
export function temporalLimits(qps: number): TemporalLimits {
  const fixed = (numSlots: number) => ({ type: 'fixed-size' as const, numSlots });
  const tuner = (workflowTasks: TunerHolder['workflowTaskSlotSupplier'], activities: number): TunerHolder => ({
    workflowTaskSlotSupplier: workflowTasks,
    activityTaskSlotSupplier: fixed(activities),
    localActivityTaskSlotSupplier: fixed(100),
    nexusTaskSlotSupplier: fixed(1),
  });
  const activities = qps * rateShares.activities;
  return {
    interceptors: [
      makeGrpcRetryInterceptor(defaultGrpcRetryOptions()),
      pacedCalls(new TokenBucket(qps * rateShares.ownCalls, 1, Date.now())),
    ],
    main: {
      tuner: tuner(pacedSlots(new TokenBucket(qps * rateShares.workflowTasks, 1, Date.now()), 40), 100),
      maxActivitiesPerSecond: activities,
    },
    // No workflows on the waits' task queue: it never polls for workflow tasks. Its waits start once per rollout
    // phase and last: their slots bound them, and their cost is their heartbeats (./activity-options.ts).
    waits: { tuner: tuner(fixed(1), 1000) },
  };
}
