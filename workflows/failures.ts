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

/** The activity failed because someone else holds the worker deployment's manager identity: who, or undefined. */
export function managerHeldBy(err: unknown): string | undefined {
  if (
    !(err instanceof ActivityFailure) ||
    !(err.cause instanceof ApplicationFailure) ||
    err.cause.type !== 'ManagerIdentityHeld'
  )
    return undefined;
  const holder = err.cause.details?.[0];
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
  if (!(err instanceof ActivityFailure)) return undefined;
  const cause = err.cause;
  if (cause instanceof ApplicationFailure && cause.nonRetryable) return cause.message;
  return undefined;
}

/** The activity ran out of its start-to-close budget (as opposed to failing). */
export function timedOut(err: unknown): err is ActivityFailure & { cause: TimeoutFailure } {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure;
}
