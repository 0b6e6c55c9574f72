/**
 * How long each kind of call a rollout makes may take. Every call is made once: `RolloutContext.call` alone tries
 * again, with a durable backoff, and says in the status what is retried and why. Reports are the exception: the
 * status cannot report on its own write, so a report's activity retries itself until it lands (and the deletion's
 * Temporal steps, each retried for a bounded while by its activity, then skipped and reported: deletion.ts).
 */
import { ActivityCancellationType, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';

/** One attempt: the retries are `RolloutContext.call`'s. */
const once = { maximumAttempts: 1 };

/** Kubernetes writes: a cancelled one is waited for, so nothing is applied after a deletion deleted it. */
export const kubeOptions: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: once,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
};

/** Temporal API calls: a server nothing listens on makes the attempt wait for its connection, within 30 s. */
export const temporalOptions: ActivityOptions = {
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '30s',
  retry: once,
};

/**
 * Writes to a worker deployment made as activities (a set-current, a ramp, a version's deletion): the server retries
 * such a write of its own for up to a minute while its system workflow is busy (1.30+), so an attempt that gave up
 * sooner would leave the write being made and queue another behind it.
 */
export const deploymentWriteOptions: ActivityOptions = {
  startToCloseTimeout: '70s',
  scheduleToCloseTimeout: '70s',
  retry: once,
};

/** Acting on every execution pinned to a version (thousands of calls): bounded by its heartbeat, not a budget. */
export const bulkOptions: ActivityOptions = {
  startToCloseTimeout: '30m',
  heartbeatTimeout: '30s',
  retry: once,
};

/**
 * Inside a workflow task, so bounded: the task holds its commands and its worker slot meanwhile. One that failed is
 * made again at once as an activity (`RolloutContext.call`), whose bound is longer.
 */
export const localOptions: LocalActivityOptions = {
  scheduleToCloseTimeout: '5s',
  startToCloseTimeout: '5s',
  retry: once,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
};

/** A report inside the workflow task: one attempt within 2 s, then it goes as an activity. */
export const localReportingOptions: LocalActivityOptions = {
  scheduleToCloseTimeout: '2s',
  startToCloseTimeout: '2s',
  retry: once,
};

/**
 * A routing write inside the workflow task: one attempt within 20 s, as long as a busy server takes to change the
 * routing (1.32 with 100 rollouts at once: 11.5 s p50). One given up sooner is made again as an activity, queued
 * behind the first at the server. The SDK keeps the task alive meanwhile (a task heartbeat past 8 s).
 */
export const localRoutingWriteOptions: LocalActivityOptions = {
  scheduleToCloseTimeout: '20s',
  startToCloseTimeout: '20s',
  retry: once,
};

/** Status writes and Events: retried by their activity until they land (Events never fail: they are best effort). */
export const reportingOptions: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '200ms', maximumInterval: '30s' },
};

/**
 * The long waits' heartbeat timeout: a dead controller's wait is taken over within it. Each waiting rollout sends
 * one heartbeat per 0.8 × it (the SDK's pace), a write on the server: a minute keeps a thousand waits cheap.
 */
const waitHeartbeatTimeout = '60s';

/** Long-waiting activities (registration, gates, drainage) on the waits' task queue, heartbeating, up to a day. */
export const waitOptions = (taskQueue: string): ActivityOptions => ({
  taskQueue,
  startToCloseTimeout: '24h',
  heartbeatTimeout: waitHeartbeatTimeout,
  retry: once,
});

/**
 * The wait on a gate workflow, with a short heartbeat timeout: a controller that died during a gate is replaced
 * within seconds, and the call made again waits on the same gate run (gates are few: their heartbeats cost little).
 */
export const gateWaitOptions = (taskQueue: string): ActivityOptions => ({
  taskQueue,
  startToCloseTimeout: '24h',
  heartbeatTimeout: '10s',
  retry: once,
});

/** A long-waiting activity that must be done within `leftMs` (else a TimeoutFailure, `deadlinePassed`). */
export const waitWithinOptions = (taskQueue: string, leftMs: number): ActivityOptions => ({
  taskQueue,
  scheduleToCloseTimeout: Math.max(1, leftMs),
  startToCloseTimeout: Math.max(1, leftMs),
  heartbeatTimeout: waitHeartbeatTimeout,
  retry: once,
});
