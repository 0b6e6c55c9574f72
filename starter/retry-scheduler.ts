/**
 * Retrying the watcher's work: a failed signal is tried again with backoff instead of waiting for an informer
 * event that may never come. Per key (one resource, one Deployment) only the latest work is kept: a newer event
 * supersedes a retry of an older one, and work for one key never runs twice at once, so signals keep their order.
 */

/** Exponential backoff with jitter. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
  /** Share of each delay (0–1) taken off at random, so watchers that failed together do not retry together. */
  jitter: number;
}

/** 200 ms doubling to 30 s: quick while Temporal blips, a few calls a minute while it is down. */
export const signalBackoff: Backoff = { initialMs: 200, maxMs: 30_000, jitter: 0.2 };

/**
 * The delay before retry number `attempt` (0 for the first retry).
 *
 * @example
 * backoffMs(0, signalBackoff, () => 0); // 200
 * backoffMs(3, signalBackoff, () => 0); // 1600
 * backoffMs(20, signalBackoff, () => 0); // 30000
 */
export function backoffMs(
  attempt: number,
  backoff: Backoff = signalBackoff,
  random: () => number = Math.random,
): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(attempt, 52));
  return Math.round(base * (1 - backoff.jitter * random()));
}

/** The timer functions the scheduler uses (injected in tests). */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface RetrySchedulerOptions {
  backoff?: Backoff;
  random?: () => number;
  timers?: Timers;
  /** Told of every failure that will be retried. */
  onRetry?: (key: string, err: unknown, delayMs: number, attempt: number) => void;
}

type Work = () => Promise<void>;

interface Slot {
  /** The latest work not yet started (a new one replaces it). */
  pending?: Work;
  running: boolean;
  attempt: number;
  timer?: unknown;
}

/** Runs work per key, retrying failures with backoff; only the latest work per key is kept. */
export class RetryScheduler {
  private readonly slots = new Map<string, Slot>();
  private stopped = false;
  private readonly backoff: Backoff;
  private readonly random: () => number;
  private readonly timers: Timers;
  private readonly onRetry: NonNullable<RetrySchedulerOptions['onRetry']>;

  constructor(options: RetrySchedulerOptions = {}) {
    this.backoff = options.backoff ?? signalBackoff;
    this.random = options.random ?? Math.random;
    this.timers = options.timers ?? realTimers;
    this.onRetry = options.onRetry ?? (() => {});
  }

  /**
   * Runs `work` for `key` now, or as soon as the key's running work has finished; replaces (and so cancels)
   * any work of the key still waiting, including a retry.
   */
  schedule(key: string, work: Work): void {
    if (this.stopped) return;
    let slot = this.slots.get(key);
    if (!slot) this.slots.set(key, (slot = { running: false, attempt: 0 }));
    slot.pending = work;
    slot.attempt = 0;
    if (slot.timer !== undefined) {
      this.timers.clearTimeout(slot.timer);
      slot.timer = undefined;
    }
    if (!slot.running) void this.run(key, slot);
  }

  /** Keys with work running or waiting. */
  get size(): number {
    return this.slots.size;
  }

  /** Drops every waiting work and retry; work already running finishes but is not retried. */
  stop(): void {
    this.stopped = true;
    for (const slot of this.slots.values()) if (slot.timer !== undefined) this.timers.clearTimeout(slot.timer);
    this.slots.clear();
  }

  private async run(key: string, slot: Slot): Promise<void> {
    const work = slot.pending!;
    slot.pending = undefined;
    slot.running = true;
    try {
      await work();
    } catch (err) {
      // Retried only if nothing newer came meanwhile: the newer work supersedes it.
      if (!slot.pending && !this.stopped) {
        const delay = backoffMs(slot.attempt, this.backoff, this.random);
        this.onRetry(key, err, delay, slot.attempt);
        slot.attempt++;
        slot.pending = work;
        slot.timer = this.timers.setTimeout(() => {
          slot.timer = undefined;
          if (!slot.running && slot.pending) void this.run(key, slot);
        }, delay);
      }
    }
    slot.running = false;
    if (this.stopped || slot.timer !== undefined) return;
    if (slot.pending) void this.run(key, slot);
    else if (this.slots.get(key) === slot) this.slots.delete(key);
  }
}
