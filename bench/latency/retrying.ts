/**
 * The floor's calls through transient refusals. Right after a write the worker deployment exists whatever a
 * describe says, so a NOT_FOUND that holds (past the settled read's window), like a busy server's refusal, is
 * tried again for a while before the call gives up.
 */
import { status as GrpcCode } from '@grpc/grpc-js';
import { isGrpcServiceError } from '@temporalio/client';
import { isNotFound, isQueryBetweenRuns } from '../../temporal/describe.js';

/** The worker deployment is not there yet: a settled describe found nothing right after a write. */
export class NotYet extends Error {}

const transientCodes: number[] = [
  GrpcCode.UNAVAILABLE,
  GrpcCode.DEADLINE_EXCEEDED,
  GrpcCode.RESOURCE_EXHAUSTED,
  GrpcCode.ABORTED,
];

export const isTransient = (err: unknown) =>
  err instanceof NotYet ||
  isNotFound(err) ||
  isQueryBetweenRuns(err) ||
  (isGrpcServiceError(err) && transientCodes.includes(err.code));

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Runs `call` until it answers, trying again after a transient refusal (50 ms doubling to 2 s) for `withinMs`;
 * then, or on any other error, throws it with `what`.
 */
export async function retrying<T>(
  what: string,
  call: () => Promise<T>,
  o: { withinMs?: number; sleep?: (ms: number) => Promise<void>; now?: () => number } = {},
): Promise<T> {
  const now = o.now ?? Date.now;
  const deadline = now() + (o.withinMs ?? 30_000);
  for (let wait = 50; ; wait = Math.min(wait * 2, 2000)) {
    try {
      return await call();
    } catch (err) {
      if (!isTransient(err) || now() + wait > deadline)
        throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
      await (o.sleep ?? defaultSleep)(wait);
    }
  }
}
