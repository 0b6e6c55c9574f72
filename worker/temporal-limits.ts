/**
 * How fast the controller process talks to Temporal: one token bucket at `--temporal-qps`, shared by every kind of
 * call through the SDK's documented means only:
 * - workflow tasks and activities: custom slot suppliers; a slot (asked for before each poll) costs the calls of a
 *   task (its poll and completion) and is handed out once the bucket has them;
 * - the process's own calls (the watcher's signals, the activities' describes and routing writes, each retry): a
 *   gRPC interceptor inside the client's retry interceptor of every connection starts each attempt on its token;
 * - heartbeats: the SDK's throttle (0.8 × the heartbeat timeout), set per kind of wait in
 *   ../workflows/activity-options.ts; history fetches follow the workflow tasks that need them.
 * One bucket, first come first served: a hundred step timers firing together take what the reads left.
 */
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { CustomSlotSupplier, SlotInfo, TunerHolder, WorkerOptions } from '@temporalio/worker';

/**
 * The calls a slot stands for: a workflow task's poll and completion (a quarter more: a completion that answered a
 * signal with a new task, a task heartbeat while local activities run), an activity's poll and completion.
 */
export const slotCalls = { workflowTask: 2.5, activity: 2 } as const;

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

  /** Takes `n` tokens at `nowMs`: how long until they are the taker's (0: now). */
  take(nowMs: number, n = 1): number {
    this.refill(nowMs);
    this.tokens -= n;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens * 1000) / this.ratePerSecond);
  }

  /** Takes `n` tokens at `nowMs` only if they are there now. */
  tryTake(nowMs: number, n = 1): boolean {
    this.refill(nowMs);
    if (this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }

  /** Gives back `n` tokens taken and not used (a wait given up). */
  giveBack(n = 1): void {
    this.tokens = Math.min(this.burst, this.tokens + n);
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

/**
 * A gRPC interceptor that starts each call (not a long poll) when `bucket` has a token for it. A call cancelled while
 * it waits starts then, to be cancelled at once, and one whose deadline comes first starts just before it: either way
 * its end reaches the callers above through the call itself (the call beneath reports to no one before it started).
 */
export function pacedCalls(bucket: TokenBucket, clock: () => number = Date.now): Interceptor {
  return (options, nextCall) => {
    const call = nextCall(options);
    const path = options.method_definition.path;
    if (longPolls.has(path.slice(path.lastIndexOf('/') + 1))) return new InterceptingCall(call);
    let startNow: (() => void) | undefined;
    return new InterceptingCall(call, {
      start: (metadata, listener, next) => {
        const nowMs = clock();
        const waitMs = bucket.take(nowMs);
        if (waitMs === 0) return next(metadata, listener);
        const deadline = options.deadline instanceof Date ? options.deadline.getTime() : options.deadline;
        const untilDeadlineMs = deadline === undefined || !isFinite(deadline) ? Infinity : deadline - nowMs - 10;
        const timer = setTimeout(() => startNow?.(), Math.max(0, Math.min(waitMs, untilDeadlineMs)));
        startNow = () => {
          startNow = undefined;
          clearTimeout(timer);
          next(metadata, listener);
        };
      },
      cancel: (next) => {
        if (startNow) {
          bucket.giveBack();
          startNow();
        }
        next();
      },
    });
  };
}

/**
 * At most `maxSlots` tasks at once (as the SDK's fixed-size supplier), each slot handed out once `bucket` has the
 * `calls` it stands for. The SDK reserves a slot before it polls and releases one a poll did not use.
 */
export function pacedSlots<SI extends SlotInfo>(
  bucket: TokenBucket,
  maxSlots: number,
  calls: number,
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
  /** Resolves when the tokens are ours; aborted, they are given back. */
  const token = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason as Error);
      const waitMs = bucket.take(clock(), calls);
      if (waitMs === 0) return resolve();
      const timer = setTimeout(() => (signal.removeEventListener('abort', abort), resolve()), waitMs);
      const abort = () => {
        clearTimeout(timer);
        bucket.giveBack(calls);
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
      if (used >= maxSlots || !bucket.tryTake(clock(), calls)) return null;
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
  main: Pick<WorkerOptions, 'tuner'>;
  waits: Pick<WorkerOptions, 'tuner'>;
}

/**
 * The limits for `qps` Temporal calls a second: a bucket filling at nine tenths of it, holding a tenth, so no second
 * counts more than `qps`; the rest is room for what it does not count (heartbeats, history fetches).
 */
export function temporalLimits(qps: number): TemporalLimits {
  const bucket = new TokenBucket(qps * 0.9, Math.max(slotCalls.workflowTask, qps * 0.1), Date.now());
  const fixed = (numSlots: number) => ({ type: 'fixed-size' as const, numSlots });
  const activitySlots = (n: number) => pacedSlots(bucket, n, slotCalls.activity);
  const tuner = (workflowTasks: TunerHolder['workflowTaskSlotSupplier'], activities: number): TunerHolder => ({
    workflowTaskSlotSupplier: workflowTasks,
    activityTaskSlotSupplier: activitySlots(activities),
    localActivityTaskSlotSupplier: fixed(100),
    nexusTaskSlotSupplier: fixed(1),
  });
  return {
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), pacedCalls(bucket)],
    main: { tuner: tuner(pacedSlots(bucket, 40, slotCalls.workflowTask), 100) },
    // No workflows on the waits' task queue: it never polls for workflow tasks. Its waits start once per rollout
    // phase and last (slots for a thousand); their cost beyond that is their heartbeats (./activity-options.ts).
    waits: { tuner: tuner(fixed(1), 1000) },
  };
}
