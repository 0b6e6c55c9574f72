/**
 * Where every activity takes its authority: the apiserver, never its arguments. Anyone who can write to the
 * controller's Temporal namespace can schedule these activities, and complete them, with arguments of their
 * choosing; so an activity takes a reference (the resource's namespace, name and UID), reads the resource, and acts
 * only for the object it finds there: with its UID, claimed by this installation, in its own namespace, on its
 * own connection (whose Secrets are read in that namespace). A refusal is a failure of type `Refused` that names the
 * reason, logged at warn and counted by the worker (`glidepath_activity_refusals_total`).
 */
import type * as k8s from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { z } from 'zod';
import { oneLine } from '../api/errors.js';
import { resourceKinds, type ResourceKind } from '../api/kinds.js';
import { workerDeploymentName } from '../api/names.js';
import type { VersionStatus } from '../api/rollout-status.js';
import { isDrained } from '../api/version-status.js';
import type { Desired, Owner } from '../api/resource.js';
import type { ResourceReads } from '../kube/read-resource.js';
import { Labels, isOwnedBy } from '../kube/versioned-deployment.js';
import type { Routing } from './routing.js';
import type { TemporalRef, TemporalTarget } from '../temporal/connections.js';
import { logWarning } from '../temporal/activity-context.js';

/** The `type` of the failure an activity throws when what it read does not support what it was asked to do. */
export const refusedFailureType = 'Refused';

/** Why an activity refused: the metric's `reason` label. */
export type RefusalReason =
  | 'malformed'
  | 'not-found'
  | 'uid'
  | 'claim'
  | 'spec'
  | 'place'
  | 'not-deleting'
  | 'undeclared-build'
  | 'live-version'
  | 'not-polled'
  | 'not-current'
  | 'policy'
  | 'gate';

/**
 * A refusal. `retryable`: what was read may still change to support it (a version still draining), so the
 * workflow's own retries wait for it; otherwise no retry can help and the failure is non-retryable.
 */
export function refused(reason: RefusalReason, message: string, o: { retryable?: boolean } = {}): ApplicationFailure {
  const failure = ApplicationFailure.create({
    type: refusedFailureType,
    message: `refused: ${oneLine(message)}`,
    nonRetryable: !o.retryable,
    details: [reason],
  });
  failure.stack = `ApplicationFailure: ${failure.message}`;
  logWarning(failure.message);
  return failure;
}

/** The reason of a `Refused` failure (its first detail), or undefined for any other error. */
export function refusalReason(err: unknown): string | undefined {
  if (!(err instanceof ApplicationFailure) || err.type !== refusedFailureType) return undefined;
  const reason: unknown = err.details?.[0];
  return typeof reason === 'string' ? reason : 'unknown';
}

/** What an activity may act on: the resource as the apiserver has it, and its worker deployment in Temporal. */
export interface Authorized extends TemporalTarget {
  owner: Owner & { kind: ResourceKind };
  desired: Desired;
  /** metadata.deletionTimestamp is set: only a deletion's steps are allowed. */
  deleting: boolean;
}

const OwnerRef = z.object({
  namespace: z.string().min(1),
  name: z.string().min(1),
  uid: z.string().min(1),
  kind: z.enum(Object.keys(resourceKinds) as [ResourceKind, ...ResourceKind[]]).optional(),
});
const TemporalRefSchema = z.object({ owner: OwnerRef, temporalNamespace: z.string(), hostPort: z.string() });

/** Parses an argument as a reference, or refuses it as malformed. */
function parsed<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (!result.success)
    throw refused('malformed', `${what} is not a reference to a resource: ${result.error.issues[0]?.message}`);
  return result.data;
}

export function createAuthority(
  reads: ResourceReads,
  installation: string,
  apps: k8s.AppsV1Api,
  ownTemporal?: { hostPort: string; namespace: string },
) {
  /** Resources already warned of sharing the controller's Temporal namespace (once per resource and process). */
  const sharing = new Set<string>();
  /**
   * Warns (once) of a resource whose workers use the controller's own Temporal namespace: its workers' credential,
   * in every worker pod, then holds every control over every rollout there.
   */
  function warnIfShared(a: Authorized): void {
    if (!ownTemporal || a.temporalNamespace !== ownTemporal.namespace || a.connection.hostPort !== ownTemporal.hostPort)
      return;
    const key = `${a.owner.namespace}/${a.owner.name}`;
    if (sharing.has(key)) return;
    sharing.add(key);
    logWarning(
      `${key}: its workers use the controller's own Temporal namespace ${ownTemporal.namespace}: whoever holds their credential can control every rollout there (docs/concepts.md, "One Temporal namespace, one trust domain")`,
    );
  }

  /** The resource's Deployments of a build (its owner-UID label), none being deleted. */
  async function deploymentsOf(a: Pick<Authorized, 'owner'>, buildId?: string): Promise<k8s.V1Deployment[]> {
    const labelSelector = `${Labels.ownerUid}=${a.owner.uid}${buildId === undefined ? '' : `,${Labels.buildId}=${buildId}`}`;
    const list = await apps.listNamespacedDeployment({ namespace: a.owner.namespace, labelSelector });
    return list.items.filter((d) => isOwnedBy(d, a.owner) && !d.metadata?.deletionTimestamp);
  }

  /** The referenced resource as the apiserver has it, claimed by this installation; or that it is gone. */
  async function read(ref: Owner, o: { spec?: boolean } = {}) {
    const owner = parsed(OwnerRef, ref, 'the owner');
    const read = await reads.readResource(owner, o);
    const at = `${owner.namespace}/${owner.name}`;
    if (!read.found || read.uid !== owner.uid)
      return {
        gone: true as const,
        owner,
        why: refused(read.found ? 'uid' : 'not-found', `${at} with uid ${owner.uid} is not in the cluster`),
      };
    if (read.claimedBy !== installation)
      throw refused(
        'claim',
        `${at} is not claimed by installation ${installation} (it says ${read.claimedBy ?? 'none'})`,
      );
    return {
      gone: false as const,
      read,
      owner: { namespace: owner.namespace, name: owner.name, uid: read.uid, kind: read.kind },
    };
  }

  /** The resource with a spec to act on. */
  async function resource(ref: Owner): Promise<Authorized> {
    const r = await read(ref);
    if (r.gone) throw r.why;
    const desired = r.read.desired;
    if (!desired)
      throw refused(
        'spec',
        `${r.owner.namespace}/${r.owner.name} cannot be acted on: ${r.read.problem ?? 'its spec is unusable'}`,
      );
    return {
      owner: r.owner,
      desired,
      deleting: r.read.deleting,
      connection: desired.connection,
      k8sNamespace: r.owner.namespace,
      temporalNamespace: desired.spec.workerOptions.temporalNamespace,
      deploymentName: workerDeploymentName(r.owner.namespace, r.owner.name),
    };
  }

  return {
    deploymentsOf,

    /**
     * Refuses routing to a build the resource neither declares (its spec's) nor runs (a Deployment of its own with
     * available pods, as a rollback's build has) nor has routed to already (current or ramping in Temporal, read by
     * `routing` only when the others do not say).
     */
    async mayRouteTo(a: Authorized, buildId: string, routing: () => Promise<Routing>): Promise<void> {
      if (buildId === a.desired.buildId) return;
      const own = await deploymentsOf(a, buildId);
      if (own.some((d) => (d.status?.availableReplicas ?? 0) > 0)) return;
      const r = await routing();
      if (r.current === buildId || r.ramping === buildId) return;
      throw refused(
        'undeclared-build',
        own.length
          ? `${buildId} is not the build ${a.owner.namespace}/${a.owner.name} declares, and its Deployment has no available pods: new work would have no workers`
          : `${buildId} is neither the build ${a.owner.namespace}/${a.owner.name} declares nor one it runs`,
      );
    },

    /** The resource an owner reference names, as the apiserver has it, claimed by this installation. */
    resource,

    /** A resource's owner for a write to it that needs no spec: undefined when it is gone (nothing to write to). */
    async present(ref: Owner): Promise<Authorized['owner'] | undefined> {
      const r = await read(ref, { spec: false });
      return r.gone ? undefined : r.owner;
    },

    /**
     * A resource being deleted (its spec need not be usable), or gone: a deletion's Kubernetes steps, which touch
     * only what carries its UID.
     */
    async deletion(ref: Owner, what: string): Promise<Owner> {
      const r = await read(ref, { spec: false });
      if (!r.gone && !r.read.deleting)
        throw refused('not-deleting', `${what}: ${r.owner.namespace}/${r.owner.name} is not being deleted`);
      return r.owner;
    },

    /**
     * The resource of a Temporal reference: its worker deployment on the connection the resource names now. The
     * place the workflow believes (a version retired on another Temporal) must be that one: a connection is never
     * taken from an argument.
     */
    async temporal(ref: TemporalRef): Promise<Authorized> {
      const r = parsed(TemporalRefSchema, ref, 'the Temporal reference');
      const a = await resource(r.owner);
      warnIfShared(a);
      if (r.temporalNamespace !== a.temporalNamespace || r.hostPort !== a.connection.hostPort)
        throw refused(
          'place',
          `${r.temporalNamespace} at ${r.hostPort} is not where ${a.owner.namespace}/${a.owner.name}'s connection points now (${a.temporalNamespace} at ${a.connection.hostPort}): a version left there is not reached`,
        );
      return a;
    },
  };
}

export type Authority = ReturnType<typeof createAuthority>;

/** Refuses unless the resource is being deleted (a deletion's Temporal steps: routing away, deleting everything). */
export function mustBeDeleting(a: Authorized, what: string): void {
  if (!a.deleting) throw refused('not-deleting', `${what}: ${a.owner.namespace}/${a.owner.name} is not being deleted`);
}

/**
 * Refuses taking a version's pods, or the version itself, unless Temporal (`status`, read just now) says it is
 * retired. Retryable: draining ends by itself.
 */
export function mustBeDrained(status: VersionStatus, buildId: string, what: string): void {
  if (!isDrained(status))
    throw refused('live-version', `${what}: Temporal says ${buildId} is ${status}`, { retryable: true });
}
