/**
 * How fast the controller process talks to Temporal: one pace at `--temporal-qps`, shared by every kind of call
 * through the SDK's documented means only:
 * - the process's own calls (the watcher's signals, the activities' describes and routing writes, each retry): a
 *   gRPC interceptor inside the client's retry interceptor of every connection starts each attempt on its token;
 * - workflow tasks and activities: custom slot suppliers; a slot (asked for before each poll) costs the calls of a
 *   task (its poll and completion) and is handed out once the pace has them;
 * - heartbeats: the SDK's throttle (0.8 × the heartbeat timeout), set per kind of wait in
 *   ../workflows/activity-options.ts; history fetches follow the workflow tasks that need them.
 * Work under way goes first: a call made inside a workflow task or an activity before a slot for new work, and both
 * before the long waits' polling (docs/design/temporal-limits.md).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { InterceptingCall, Metadata, status, type Interceptor } from '@grpc/grpc-js';
import type { ActivityInboundCallsInterceptor } from '@temporalio/worker';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { CustomSlotSupplier, SlotInfo, TunerHolder, WorkerOptions } from '@temporalio/worker';

/**
 * The calls a slot stands for: a workflow task's poll and completion (a quarter more: a completion that answered a
 * signal with a new task, a task heartbeat while local activities run), an activity's poll and completion, and for
 * a long wait a heartbeat more (one that runs past a quarter of its heartbeat timeout sends it; counted for every
 * wait, it spreads the bursts of waits that start together).
 */
export const slotCalls = { workflowTask: 2.5, activity: 2, wait: 3 } as const;

/**
 * Workflow tasks at once: each holds its slot while its local activities run (a ramp takes the server seconds), and
 * their completions go out as they end, unpaced: fewer at once spreads them.
 */
export const workflowTaskSlots = 20;

/** Who goes first when tokens are short: work under way, then new work (a slot), then the long waits' polling. */
export enum Turn {
  underWay = 0,
  newWork = 1,
  waiting = 2,
}

interface Waiter {
  n: number;
  resolve: () => void;
}

/**
 * A token bucket (`ratePerSecond`, holding up to `burst`) whose tokens go to the waiters by `Turn`, first come first
 * served within one. A waiter is served once the bucket holds all it asks for (or is full).
 */
export class Pace {
  private tokens: number;
  private atMs: number;
  private readonly queues: Waiter[][] = [[], [], []];
  private timer?: NodeJS.Timeout;

  constructor(
    readonly ratePerSecond: number,
    readonly burst: number,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.atMs = clock();
  }

  /** Resolves once `n` tokens are the caller's; aborted, it leaves the queue and rejects. */
  take(n: number, turn: Turn, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.tryTake(n, turn)) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const queue = this.queues[turn]!;
      const waiter: Waiter = {
        n,
        resolve: () => (signal?.removeEventListener('abort', abort), resolve()),
      };
      const abort = () => {
        const at = queue.indexOf(waiter);
        if (at >= 0) queue.splice(at, 1);
        reject(signal!.reason as Error);
        this.serve();
      };
      signal?.addEventListener('abort', abort, { once: true });
      queue.push(waiter);
      this.serve();
    });
  }

  /** Takes `n` tokens now if they are there and no one of the same turn or before it waits. */
  tryTake(n: number, turn: Turn): boolean {
    this.refill();
    if (this.queues.slice(0, turn + 1).some((q) => q.length > 0) || this.tokens < n) return false;
    this.tokens -= n;
    return true;
  }

  /** Gives back `n` tokens taken and not used. */
  giveBack(n: number): void {
    this.refill();
    this.tokens = Math.min(this.burst, this.tokens + n);
    this.serve();
  }

  /** How many wait, by turn. */
  get waiting(): number[] {
    return this.queues.map((q) => q.length);
  }

  private serve(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.refill();
    for (;;) {
      const queue = this.queues.find((q) => q.length > 0);
      if (!queue) return;
      const head = queue[0]!;
      const need = Math.min(head.n, this.burst); // more than the bucket holds: served full, the rest owed
      if (this.tokens < need) {
        const ms = Math.ceil(((need - this.tokens) * 1000) / this.ratePerSecond);
        this.timer = setTimeout(() => this.serve(), ms);
        return;
      }
      this.tokens -= head.n;
      queue.shift();
      head.resolve();
    }
  }

  private refill(): void {
    const nowMs = this.clock();
    this.tokens = Math.min(this.burst, this.tokens + (Math.max(0, nowMs - this.atMs) * this.ratePerSecond) / 1000);
    this.atMs = Math.max(this.atMs, nowMs);
  }
}

/** The turn of the calls made in this async context (the long waits' activities run in `Turn.waiting`). */
const turnOfCalls = new AsyncLocalStorage<Turn>();

/** An activity interceptor: the activity's own calls take the `turn` given (the waits worker's: `Turn.waiting`). */
export function callsInTurn(turn: Turn): () => { inbound: ActivityInboundCallsInterceptor } {
  return () => ({ inbound: { execute: (input, next) => turnOfCalls.run(turn, () => next(input)) } });
}

/** Long polls: they wait for work, not on the server; a token each would pace the waiting. */
const longPolls = new Set([
  'GetWorkflowExecutionHistory',
  'PollWorkflowExecutionUpdate',
  'UpdateWorkflowExecution',
  'PollActivityTaskQueue',
  'PollWorkflowTaskQueue',
]);

/** The turn each call was made in, for its retries too (the SDK's retry interceptor passes the same options). */
const turnOfCall = new WeakMap<object, Turn>();

/** Longest timer Node keeps (a longer deadline is as good as none). */
const maxTimerMs = 2 ** 31 - 1;

/**
 * A gRPC interceptor that starts each call (not a long poll) when `pace` has a token for it, in the turn of the
 * context that made it (`defaultTurn` outside any). A call cancelled, or reaching its deadline, while it waits is
 * never sent: it ends then with CANCELLED or DEADLINE_EXCEEDED, told to the callers above as a unary call tells its
 * end (no message, then the status).
 */
export function pacedCalls(pace: Pace, defaultTurn = Turn.underWay): Interceptor {
  return (options, nextCall) => {
    const call = nextCall(options);
    const path = options.method_definition.path;
    if (longPolls.has(path.slice(path.lastIndexOf('/') + 1))) return new InterceptingCall(call);
    const turn = turnOfCall.get(options) ?? turnOfCalls.getStore() ?? defaultTurn;
    turnOfCall.set(options, turn);
    let giveUp: ((code: status, details: string) => void) | undefined;
    return new InterceptingCall(call, {
      start: (metadata, listener, next) => {
        if (pace.tryTake(1, turn)) return next(metadata, listener);
        const waiting = new AbortController();
        const deadline = options.deadline instanceof Date ? options.deadline.getTime() : options.deadline;
        const untilDeadlineMs = deadline === undefined || deadline === Infinity ? Infinity : deadline - Date.now();
        let timer: NodeJS.Timeout | undefined;
        const stopWaiting = () => {
          giveUp = undefined;
          clearTimeout(timer);
          waiting.abort();
        };
        giveUp = (code, details) => {
          stopWaiting();
          process.nextTick(() => {
            listener.onReceiveMessage(null);
            listener.onReceiveStatus({ code, details, metadata: new Metadata() });
          });
        };
        if (!(untilDeadlineMs >= 1)) return giveUp(status.DEADLINE_EXCEEDED, 'Deadline exceeded waiting for its turn');
        if (untilDeadlineMs <= maxTimerMs)
          timer = setTimeout(
            () => giveUp?.(status.DEADLINE_EXCEEDED, 'Deadline exceeded waiting for its turn'),
            untilDeadlineMs,
          );
        pace.take(1, turn, waiting.signal).then(
          () => {
            stopWaiting();
            next(metadata, listener);
          },
          () => {}, // given up: its end is told
        );
      },
      cancel: (next) => {
        giveUp?.(status.CANCELLED, 'Cancelled while waiting for its turn');
        next(); // the call beneath was never started: this only clears its deadline timer
      },
    });
  };
}

/**
 * At most `maxSlots` tasks at once (as the SDK's fixed-size supplier), each slot handed out once `pace` has the
 * `calls` it stands for. The SDK reserves a slot before it polls and releases one a poll did not use.
 */
export function pacedSlots<SI extends SlotInfo>(
  pace: Pace,
  maxSlots: number,
  calls: number,
  turn = Turn.newWork,
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
        const at = waiting.indexOf(granted);
        if (at >= 0) waiting.splice(at, 1);
        reject(signal.reason as Error);
      };
      waiting.push(granted);
      signal.addEventListener('abort', abort, { once: true });
    });
  return {
    type: 'custom',
    async reserveSlot(_ctx, signal) {
      await slot(signal);
      try {
        await pace.take(calls, turn, signal);
      } catch (err) {
        free();
        throw err;
      }
      return {};
    },
    tryReserveSlot() {
      if (used >= maxSlots || !pace.tryTake(calls, turn)) return null;
      used++;
      return {};
    },
    markSlotUsed() {},
    releaseSlot(ctx) {
      if (!ctx.slotInfo) pace.giveBack(calls - 1); // a poll that brought no task: only the poll was a call
      free();
    },
  };
}

export interface TemporalLimits {
  /** The activities' client connections' interceptors: the SDK's retries, each attempt paced. */
  interceptors: Interceptor[];
  /** The watcher's connection's: its signals are new work (they start or wake rollouts), after work under way. */
  watcherInterceptors: Interceptor[];
  /** The main worker's (RolloutWorkflow and its activities) and the waits worker's options. */
  main: Pick<WorkerOptions, 'tuner'>;
  waits: Pick<WorkerOptions, 'tuner'>;
  /** The waits worker's activity interceptor: their calls go after everything else. */
  waitsCalls: ReturnType<typeof callsInTurn>;
}

/**
 * The limits for `qps` Temporal calls a second: a pace filling at nine tenths of it, holding a tenth, so no second
 * counts more than `qps`; the rest is room for what it does not count (heartbeats, history fetches).
 */
export function temporalLimits(qps: number): TemporalLimits {
  const pace = new Pace(qps * 0.9, Math.max(slotCalls.wait, qps * 0.1));
  const fixed = (numSlots: number) => ({ type: 'fixed-size' as const, numSlots });
  const tuner = (workflowTasks: TunerHolder['workflowTaskSlotSupplier'], activities: number, turn: Turn) => ({
    workflowTaskSlotSupplier: workflowTasks,
    activityTaskSlotSupplier: pacedSlots(
      pace,
      activities,
      turn === Turn.waiting ? slotCalls.wait : slotCalls.activity,
      turn,
    ),
    localActivityTaskSlotSupplier: fixed(100),
    nexusTaskSlotSupplier: fixed(1),
  });
  return {
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), pacedCalls(pace)],
    watcherInterceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), pacedCalls(pace, Turn.newWork)],
    main: { tuner: tuner(pacedSlots(pace, workflowTaskSlots, slotCalls.workflowTask), 100, Turn.newWork) },
    // No workflows on the waits' task queue: it never polls for workflow tasks. Its waits start once per rollout
    // phase and last (slots for a thousand); their polling reads go after everything else.
    waits: { tuner: tuner(fixed(1), 1000, Turn.waiting) },
    waitsCalls: callsInTurn(Turn.waiting),
  };
}
