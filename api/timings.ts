/** Tunables that are fixed per workflow run (passed in, so they are replay-safe). */
export interface Timings {
  /** How often live Deployments are checked to exist when nothing else happens. */
  resyncIntervalMs: number;
  /** Longest wait between two drainage checks (they back off from 1s). */
  drainPollMaxMs: number;
  /** Versions per worker deployment the server allows (its default is 100). */
  maxVersions: number;
  /** History length past which the workflow continues as new at its next idle point (or when the server suggests it). */
  historyLimit?: number;
  /** Longest wait between two backstop reads of what a wait depends on (the watcher's signals are faster). */
  recheckMaxMs?: number;
  /** How long a call fails before the status says what is retried and why (the log says it at once). */
  retryShownAfterMs?: number;
  /** false: the search attributes are not registered, and upserting them would fail every workflow task. */
  searchAttributes?: boolean;
}

export const defaultTimings: Timings = {
  resyncIntervalMs: 60 * 60_000,
  drainPollMaxMs: 60_000,
  maxVersions: 100,
  historyLimit: 10_000,
  recheckMaxMs: 30_000,
};

/**
 * How long a version may stay unregistered before the registration wait asks the server whether a limit is why: an
 * attempt that ran longer without failing found the server under its limits.
 */
export const limitCheckAfterMs = 10_000;
