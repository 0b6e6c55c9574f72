/**
 * Which failures of WorkflowService calls are worth retrying: a refusal no retry can change is permanent, an
 * expected, passing one (a conflict token, a server restarting) transient. Errors of unknown shape are not
 * classified.
 */
import { isGrpcServiceError } from '@temporalio/client';
import { oneLine, type CallContext, type Classified } from '../api/errors.js';

/** gRPC status codes by number (grpc-js is not a direct dependency). */
export const GrpcStatus = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
const grpcName = (code: number) => Object.entries(GrpcStatus).find(([, c]) => c === code)?.[0] ?? `gRPC ${code}`;

const permanentGrpc: number[] = [
  GrpcStatus.INVALID_ARGUMENT,
  GrpcStatus.FAILED_PRECONDITION,
  GrpcStatus.PERMISSION_DENIED,
  GrpcStatus.UNAUTHENTICATED,
];
const transientGrpc: number[] = [
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.RESOURCE_EXHAUSTED,
  GrpcStatus.ABORTED,
  GrpcStatus.INTERNAL,
];
/**
 * Refusals the server makes while a rollout goes as planned: another writer moved the routing since our
 * describe (conflict token), a version to delete still has pollers or is draining, or a describe landed while
 * the server's worker deployment workflow continued-as-new (its new run's task not scheduled yet).
 */
const expectedRefusal = /conflict token|poller|drain|workflow task is not scheduled yet/i;

/**
 * The server refused a start pinned to a version because the version is not in the task queue: FAILED_PRECONDITION
 * "Pinned version 'D:B' is not present in task queue 'Q' of type 'Workflow'" (server 1.32). A moment after the
 * version registered, its queues may not have it yet; for good, the queue is not one of the version's (permanent).
 */
export function versionNotInQueueYet(err: unknown): boolean {
  const grpc = grpcErrorOf(err);
  return (
    grpc?.code === GrpcStatus.FAILED_PRECONDITION && /is not present in task queue/i.test(grpc.details ?? grpc.message)
  );
}

/** The server refused to delete a version because it still remembers the version's pollers. */
export function pollersRemembered(err: unknown): boolean {
  const grpc = grpcErrorOf(err);
  return grpc?.code === GrpcStatus.FAILED_PRECONDITION && /active pollers/i.test(grpc.details ?? grpc.message);
}

/** The gRPC error of WorkflowService in a failure, itself or a `cause` of it (the client wraps it). */
function grpcErrorOf(err: unknown) {
  let grpc: unknown = err;
  for (let depth = 0; depth < 5 && !isGrpcServiceError(grpc); depth++) {
    grpc = grpc instanceof Error ? grpc.cause : undefined;
  }
  return isGrpcServiceError(grpc) ? grpc : undefined;
}

/**
 * What a worker deployment limit the server named means, and what to delete (RESOURCE_EXHAUSTED "reached maximum
 * deployments in namespace (N)" or "... maximum number of versions (N) have been registered ...": server 1.32);
 * `undefined` for any other error.
 */
export function workerDeploymentLimit(err: unknown): string | undefined {
  const grpc = grpcErrorOf(err);
  if (grpc?.code !== GrpcStatus.RESOURCE_EXHAUSTED) return undefined;
  const details = oneLine(grpc.details || grpc.message);
  const n = /\((\d+)\)/.exec(details)?.[1] ?? 'its';
  // Short: a status message keeps 300 characters.
  if (/maximum deployments in namespace/i.test(details))
    return `the Temporal namespace is at the server's limit of ${n} worker deployments (matching.maxDeployments): delete worker deployments no longer used (temporal worker deployment delete), or raise the limit`;
  if (/maximum number of versions/i.test(details))
    return `the worker deployment is at the server's limit of ${n} versions (matching.maxVersionsInDeployment): delete drained versions (temporal worker deployment delete-version), shorten sunset.deleteDelay, or raise the limit`;
  return undefined;
}

/**
 * Who holds the manager identity, when the server refused a call for it: FAILED_PRECONDITION "ManagerIdentity
 * 'ops' is set and does not match user identity '…'" (server 1.29).
 */
export function managerIdentityRefusal(err: unknown): string | undefined {
  const grpc = grpcErrorOf(err);
  if (grpc?.code !== GrpcStatus.FAILED_PRECONDITION) return undefined;
  return /ManagerIdentity '(.*?)' is set and does not match/.exec(grpc.details || grpc.message)?.[1];
}

/**
 * Classifies a Temporal failure: a gRPC error of WorkflowService, or the client's error wrapping one
 * (`ServiceError`, whose `cause` it is). Permanent: INVALID_ARGUMENT, FAILED_PRECONDITION, PERMISSION_DENIED,
 * UNAUTHENTICATED, except the expected refusals (a conflict token mismatch; a version still polled or
 * draining), which are transient like UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED and
 * INTERNAL. Anything else (NOT_FOUND, CANCELLED, …): `undefined`.
 */
export function classifyTemporalError(err: unknown, context: CallContext = {}): Classified | undefined {
  const grpc = grpcErrorOf(err);
  if (!grpc) return undefined;
  const code = grpc.code;
  const details = oneLine(grpc.details || grpc.message);
  const cause = `${grpcName(code)} ${details}`;
  // A missing namespace is retried and shown: creating it (or fixing the spec) lets the rollout go on by itself.
  const namespaceMissing = code === GrpcStatus.NOT_FOUND && /^Namespace .* is not found/i.test(details);
  if (
    namespaceMissing ||
    transientGrpc.includes(code) ||
    (code === GrpcStatus.FAILED_PRECONDITION && expectedRefusal.test(details))
  ) {
    return { kind: 'transient', message: cause };
  }
  if (permanentGrpc.includes(code)) {
    return {
      kind: 'permanent',
      message: `Temporal refused ${context.call ?? 'the call'} (${grpcName(code)}): ${details}`,
    };
  }
  return undefined;
}
