/**
 * How each kind of call a rollout makes is bounded and retried. A call past its retries says in the status what is
 * retried and why (RolloutContext.call).
 */
import { ActivityCancellationType, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';

/** Retries within one call; past them the status says what is being retried. */
const attempts = (maximumInterval: string) => ({
  initialInterval: '200ms',
  backoffCoefficient: 2,
  maximumInterval,
  maximumAttempts: 8,
});

/** Kubernetes writes: a cancelled one is waited for, so nothing is applied after a deletion deleted it. */
export const kubeOptions: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: attempts('10s'),
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
};

/**
 * Temporal API calls: within half a minute, retries included, then the status says what is retried and why (a
 * server nothing listens on makes each attempt wait for its connection).
 */
export const temporalOptions: ActivityOptions = {
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '30s',
  retry: attempts('5s'),
};

/** Acting on every execution pinned to a version (thousands of calls): bounded by its heartbeat, not a budget. */
export const bulkOptions: ActivityOptions = {
  startToCloseTimeout: '30m',
  heartbeatTimeout: '30s',
  retry: attempts('10s'),
};

/** Inside a workflow task, so bounded: an apiserver brownout must not hold the task (calls.ts then uses an activity). */
export const localOptions: LocalActivityOptions = {
  scheduleToCloseTimeout: '10s',
  startToCloseTimeout: '5s',
  retry: { initialInterval: '200ms', maximumAttempts: 3 },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
};

/**
 * A report inside the workflow task: two quick attempts within 3 s, then it goes as an activity. The task holds its
 * commands and its worker slot meanwhile: an apiserver outage must not hold them long.
 */
export const localReportingOptions: LocalActivityOptions = {
  scheduleToCloseTimeout: '3s',
  startToCloseTimeout: '2s',
  retry: { initialInterval: '200ms', maximumAttempts: 2 },
};

/**
 * A routing write inside the workflow task: one attempt within 10 s, then it goes as an activity. The task holds
 * its worker slot meanwhile, as long as the server takes to change the routing.
 */
export const localRoutingWriteOptions: LocalActivityOptions = {
  scheduleToCloseTimeout: '10s',
  startToCloseTimeout: '10s',
  retry: { maximumAttempts: 1 },
};

/** Status writes and Events: retried until they land (Events never fail: they are best effort). */
export const reportingOptions: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', maximumInterval: '30s' },
};

/**
 * The long waits' heartbeat timeout: a dead controller's wait is taken over within it. Each waiting rollout sends
 * one heartbeat per 0.8 × it (the SDK's pace), a write on the server: a minute keeps a thousand waits cheap.
 */
const waitHeartbeatTimeout = '60s';

/** Long-waiting activities (registration, gates, drainage) on the waits' task queue, heartbeating, up to a day per attempt. */
export const waitOptions = (taskQueue: string): ActivityOptions => ({
  taskQueue,
  startToCloseTimeout: '24h',
  heartbeatTimeout: waitHeartbeatTimeout,
  retry: attempts('10s'),
});

/**
 * The wait on a gate workflow, with a short heartbeat timeout: a controller that died during a gate is replaced
 * within seconds, and the retry waits on the same gate run (gates are few: their heartbeats cost little).
 */
export const gateWaitOptions = (taskQueue: string): ActivityOptions => ({
  taskQueue,
  startToCloseTimeout: '24h',
  heartbeatTimeout: '10s',
  retry: attempts('10s'),
});

/** A long-waiting activity that must be done within `budgetMs`, retries included (else a TimeoutFailure). */
export const waitWithinOptions = (taskQueue: string, budgetMs: number): ActivityOptions => ({
  taskQueue,
  scheduleToCloseTimeout: budgetMs,
  startToCloseTimeout: budgetMs,
  heartbeatTimeout: waitHeartbeatTimeout,
  retry: { initialInterval: '1s', maximumInterval: '10s' },
});
