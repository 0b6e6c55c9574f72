/**
 * Which failures of an activity are worth retrying. The workflow's retry policies retry forever, so a refusal
 * that no retry can change (an invalid object, a missing Secret key, a permission the controller lacks) must
 * reach the workflow as a non-retryable failure; an expected, passing one (a conflict, a restart of the server)
 * must retry quietly. Errors of unknown shape are left as they are.
 */
import * as k8s from '@kubernetes/client-node';
import { isGrpcServiceError } from '@temporalio/client';
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';

/** The `type` of the non-retryable ApplicationFailure an activity throws for a permanent failure. */
export const permanentFailureType = 'Permanent';

/**
 * The `type` of the non-retryable ApplicationFailure a routing change throws when another client holds the worker
 * deployment's manager identity (its `details` are `[heldBy]`): no retry helps until it is handed back.
 */
export const managerIdentityHeldType = 'ManagerIdentityHeld';

/** What an activity call was doing, for the one line that reports its failure. */
export interface CallContext {
  /** The activity and its target, e.g. `setRamping ns/default/orders v2`. */
  call?: string;
  /** The Kubernetes namespace it worked in (a Kubernetes Status names an object without it). */
  namespace?: string;
}

/** A classified failure. */
export interface Classified {
  kind: 'permanent' | 'transient';
  /** One line: who refused what and why, without the activity's name. */
  message: string;
}

/**
 * A refusal Glidepath itself finds in the user's input (a missing Secret key, a gate input that is not JSON):
 * no retry can change it.
 */
export class PermanentError extends Error {
  static {
    this.prototype.name = 'PermanentError'; // on the prototype: an own `name` would print as an extra field
  }
}

/** A failure that is expected and retried: its one-line message is its whole log line. */
export class TransientError extends Error {
  static {
    this.prototype.name = 'TransientError';
  }
  constructor(message: string) {
    super(message);
    // The stack of a conflict or a restarting server says nothing; 40 lines of it per retry hide what does.
    this.stack = `${this.name}: ${message}`;
  }
}

/** The fields of a metav1.Status that say why kube-apiserver refused a call. */
interface KubeStatus {
  message?: string;
  reason?: string;
  details?: { name?: string; kind?: string; causes?: { reason?: string; message?: string; field?: string }[] };
}

const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim();

/** The Status object client-node 1.4 keeps, as text, in `ApiException.body`. */
function kubeStatus(err: k8s.ApiException<unknown>): KubeStatus {
  const body = err.body;
  if (typeof body === 'object' && body !== null) return body as KubeStatus;
  if (typeof body !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null ? (parsed as KubeStatus) : {};
  } catch {
    return { message: body };
  }
}

/** Whether kube-apiserver refused a create because the namespace is being deleted. */
export function isNamespaceTerminating(err: unknown): boolean {
  if (!(err instanceof k8s.ApiException) || err.code !== 403) return false;
  const status = kubeStatus(err);
  return (
    (status.details?.causes ?? []).some((c) => c.reason === 'NamespaceTerminating') ||
    /because it is being terminated/.test(status.message ?? '')
  );
}

/**
 * Classifies a Kubernetes API failure (client-node 1.4's `ApiException`, or a network error of its fetch).
 * Permanent: 400, 422, 403 (RBAC, or a namespace being deleted: creates there never succeed), and 404 of a
 * ConfigMap or Secret (every one Glidepath reads is named by the user). Transient: 401 (credentials refresh),
 * 409, 429, 5xx, network errors. Anything else: `undefined`.
 */
export function classifyKubernetesError(err: unknown, context: CallContext = {}): Classified | undefined {
  if (isNetworkError(err)) return { kind: 'transient', message: `kube-apiserver unreachable: ${oneLine(err.message)}` };
  if (!(err instanceof k8s.ApiException)) return undefined;
  const code = err.code;
  const status = kubeStatus(err);
  const why = oneLine(
    (status.details?.causes ?? [])
      .filter((c) => c.field)
      .map((c) => `${c.field}: ${c.message}`)
      .join('; ') ||
      status.message ||
      (code === 401 ? 'Unauthorized' : `HTTP ${code}`),
  );
  const objectKind = status.details?.kind ?? '';
  const userNamed = /^(configmaps?|secrets?)$/i.test(objectKind);
  const permanent = code === 400 || code === 422 || code === 403 || (code === 404 && userNamed);
  if (permanent) {
    const name = status.details?.name;
    const what = name
      ? `${objectKind} ${context.namespace ? `${context.namespace}/` : ''}${name}`
      : (context.call ?? 'the call');
    const terminating =
      isNamespaceTerminating(err) && !/being terminated/.test(why) ? ' (the namespace is being terminated)' : '';
    return { kind: 'permanent', message: `kube-apiserver refused ${what} (${code}): ${why}${terminating}` };
  }
  if (code === 401 || code === 409 || code === 429 || code >= 500) {
    return { kind: 'transient', message: `kube-apiserver ${code}${status.reason ? ` ${status.reason}` : ''}: ${why}` };
  }
  return undefined;
}

/** node-fetch's FetchError of a failed connection, or a bare Node socket error. */
function isNetworkError(err: unknown): err is Error & { code?: string } {
  if (!(err instanceof Error)) return false;
  const { name, type, code } = err as Error & { type?: string; code?: unknown };
  if (name === 'FetchError' && type === 'system') return true;
  return (
    typeof code === 'string' &&
    /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/.test(code)
  );
}

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

/** The gRPC error of WorkflowService in a failure, itself or a `cause` of it (the client wraps it). */
function grpcErrorOf(err: unknown) {
  let grpc: unknown = err;
  for (let depth = 0; depth < 5 && !isGrpcServiceError(grpc); depth++) {
    grpc = grpc instanceof Error ? grpc.cause : undefined;
  }
  return isGrpcServiceError(grpc) ? grpc : undefined;
}

/**
 * Who holds the manager identity, when the server refused a call for it: FAILED_PRECONDITION "ManagerIdentity
 * 'ops' is set and does not match user identity '…'" (server 1.29).
 */
function managerIdentityRefusal(err: unknown): string | undefined {
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

/** Classifies any failure of an activity; `undefined` when its shape is unknown. */
export function classifyFailure(err: unknown, context: CallContext = {}): Classified | undefined {
  // Cancellation and failures an activity threw on purpose are the SDK's to handle.
  if (err instanceof TemporalFailure) return undefined;
  if (err instanceof PermanentError) return { kind: 'permanent', message: oneLine(err.message) };
  return classifyKubernetesError(err, context) ?? classifyTemporalError(err, context);
}

/**
 * The non-retryable failure an activity throws for a permanent refusal.
 *
 * @example
 * throw permanentFailure('kube-apiserver refused Deployment shop/orders-abc (422): spec.template.spec.containers[0].image: Required value');
 */
export function permanentFailure(message: string): ApplicationFailure {
  const failure = ApplicationFailure.create({
    nonRetryable: true,
    type: permanentFailureType,
    message: oneLine(message),
  });
  // The message says everything; the stack of this helper does not.
  failure.stack = `ApplicationFailure: ${failure.message}`;
  return failure;
}

/**
 * The non-retryable failure of a change refused because `heldBy` holds the worker deployment's manager identity.
 *
 * @example
 * throw managerIdentityHeld('ops@laptop'); // type 'ManagerIdentityHeld', details ['ops@laptop']
 */
export function managerIdentityHeld(heldBy: string): ApplicationFailure {
  const failure = ApplicationFailure.create({
    type: managerIdentityHeldType,
    message: `the worker deployment's manager identity is held by ${heldBy}`,
    nonRetryable: true,
    details: [heldBy],
  });
  failure.stack = `ApplicationFailure: ${failure.message}`;
  return failure;
}

/**
 * What an activity throws for a failure: a non-retryable ApplicationFailure when it is permanent (of type
 * `ManagerIdentityHeld` when the server refused for the manager identity, so the workflow can tell it apart), a
 * one-line TransientError when it is expected to pass, the error itself when its shape is unknown.
 */
export function toActivityError(err: unknown, context: CallContext = {}): unknown {
  const heldBy = managerIdentityRefusal(err);
  if (heldBy !== undefined) return managerIdentityHeld(heldBy);
  const classified = classifyFailure(err, context);
  if (!classified) return err;
  if (classified.kind === 'permanent') return permanentFailure(classified.message);
  return new TransientError(`${context.call ?? 'activity'}: ${classified.message} (will retry)`);
}

/** A one-line summary of any failure, for logs of failures that are dropped. */
export function describeFailure(err: unknown, context: CallContext = {}): string {
  const classified = classifyFailure(err, context);
  if (classified) return classified.message;
  return oneLine(err instanceof Error ? (err.message.split('\n')[0] ?? err.name) : String(err));
}

/** Names an activity call by its target: the resource, the Temporal worker deployment, the build. */
export function describeCall(activity: string, args: readonly unknown[]): CallContext {
  const parts: string[] = [activity];
  let namespace: string | undefined;
  for (const arg of args) {
    if (typeof arg === 'string' || typeof arg === 'number') {
      parts.push(String(arg));
      continue;
    }
    if (typeof arg !== 'object' || arg === null || Array.isArray(arg)) continue;
    const a = arg as Record<string, unknown>;
    const owner = (typeof a.owner === 'object' && a.owner !== null ? a.owner : a) as Record<string, unknown>;
    if (typeof a.deploymentName === 'string' && typeof a.temporalNamespace === 'string') {
      parts.push(`${a.temporalNamespace}/${a.deploymentName}`);
      if (typeof a.k8sNamespace === 'string') namespace ??= a.k8sNamespace;
    } else if (typeof owner.namespace === 'string' && typeof owner.name === 'string') {
      parts.push(`${owner.namespace}/${owner.name}`);
      namespace ??= owner.namespace;
    }
    if (typeof a.buildId === 'string') parts.push(a.buildId);
  }
  // A bare namespace argument (readGateInput's) is where it works.
  if (!namespace && typeof args[0] === 'string') namespace = args[0];
  return { call: parts.join(' '), namespace };
}

type AsyncFunction = (...args: never[]) => Promise<unknown>;

/**
 * Wraps every activity so that its failures are classified once, here, instead of in each function.
 *
 * @example
 * const activities = withFailureClassification({ ...createKubernetesActivities(kc), ...temporal });
 */
export function withFailureClassification<T extends Record<string, AsyncFunction>>(activities: T): T {
  const wrapped: Record<string, AsyncFunction> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: never[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        throw toActivityError(err, describeCall(name, args));
      }
    };
  }
  return wrapped as T;
}
