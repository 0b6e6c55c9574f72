/** How a rollout's calls end other than with an answer: what the workflow catches, and what an activity's failure says. */
import { ActivityFailure, ApplicationFailure, TemporalFailure, TimeoutFailure } from '@temporalio/workflow';

/** Thrown at a checkpoint when the history is long enough to continue as new; the state holds the progress. */
export class ContinueAsNewDue extends Error {
  constructor() {
    super('continue as new');
  }
}

/** A permanent error: Kubernetes or Temporal refused the call; retrying the same call cannot help. */
export class Blocked extends Error {
  constructor(
    readonly what: string,
    readonly detail: string,
  ) {
    super(`${what}: ${detail}`);
  }
}

/**
 * What an activity's failure says: the cause under an `ActivityFailure`, or a local activity's failure as it came
 * (unwrapped at times) under `NotMadeInTask`.
 */
function causeOf(err: unknown): unknown {
  if (err instanceof ActivityFailure) return err.cause;
  if (err instanceof NotMadeInTask) return err.failure instanceof ActivityFailure ? err.failure.cause : err.failure;
  return undefined;
}

/** The activity failed because someone else holds the worker deployment's manager identity: who, or undefined. */
export function managerHeldBy(err: unknown): string | undefined {
  const cause = causeOf(err);
  if (!(cause instanceof ApplicationFailure) || cause.type !== 'ManagerIdentityHeld') return undefined;
  const holder = cause.details?.[0];
  return typeof holder === 'string' && holder ? holder : 'someone else';
}

/** Why an activity failed in the end: its last attempt's error, under a timeout's (which says only that it timed out). */
export function rootCause(err: ActivityFailure): string {
  let failure: Error = err;
  while (failure.cause instanceof Error) failure = failure.cause;
  let message = failure === err ? err.message : failure.message;
  // The SDK's TimeoutFailure carries no cause; the failure as the server sent it (`failure`) keeps the last attempt's.
  for (let sent = failure instanceof TemporalFailure ? failure.failure?.cause : undefined; sent; sent = sent.cause)
    if (sent.message) message = sent.message;
  return message;
}

/** The message of a permanent (non-retryable) activity failure, or undefined. */
export function permanentCause(err: unknown): string | undefined {
  const cause = causeOf(err);
  return cause instanceof ApplicationFailure && cause.nonRetryable ? cause.message : undefined;
}

/** A wait ran out of the time it was given (as opposed to failing, or losing its worker). */
export function deadlinePassed(err: unknown): err is ActivityFailure & { cause: TimeoutFailure } {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    (err.cause.timeoutType === 'SCHEDULE_TO_CLOSE' || err.cause.timeoutType === 'START_TO_CLOSE')
  );
}

/** The activity's worker stopped heartbeating (a controller died): made again at once, on a live one. */
export function workerLost(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === 'HEARTBEAT';
}

/** A call inside the workflow task failed (`failure`): it is made again at once, as an activity. */
export class NotMadeInTask extends Error {
  constructor(readonly failure: unknown) {
    super(failure instanceof Error ? failure.message : String(failure));
  }
}
