/**
 * Which failures of an activity are worth retrying. The workflow's retry policies retry forever, so a refusal
 * that no retry can change (an invalid object, a missing Secret key, a permission the controller lacks) must
 * reach the workflow as a non-retryable failure; an expected, passing one (a conflict, a restart of the server)
 * must retry quietly. Errors of unknown shape are left as they are. Each client's errors are classified in its
 * room (kube/errors.ts, temporal/errors.ts).
 */
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { PermanentError, oneLine, type CallContext, type Classified } from '../api/errors.js';
import { classifyKubernetesError } from '../kube/errors.js';
import { classifyTemporalError, managerIdentityRefusal } from '../temporal/errors.js';

/** The `type` of the non-retryable ApplicationFailure an activity throws for a permanent failure. */
export const permanentFailureType = 'Permanent';

/**
 * The `type` of the non-retryable ApplicationFailure a routing change throws when another client holds the worker
 * deployment's manager identity (its `details` are `[heldBy]`): no retry helps until it is handed back.
 */
export const managerIdentityHeldType = 'ManagerIdentityHeld';

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
