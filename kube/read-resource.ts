/**
 * The workflow's reads of its resource: what the apiserver says of it now (a signal only wakes the workflow), and
 * whether another object took its name. The spec is derived as the watcher derives it (api/desired.ts); the
 * connection is read here too, never its Secrets.
 */
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../api/common.js';
import {
  clusterConnectionsUnreadable,
  connectionFromObject,
  desiredOf,
  type ConnectionLookup,
  type ConnectionLookupResult,
} from '../api/desired.js';
import { connectionKinds, pluralOf, resourceKinds, type ResourceKind } from '../api/kinds.js';
import { connectionAnnotation, installationAnnotation } from '../api/names.js';
import { TemporalConnectionSpec } from '../api/temporal-connection.js';
import type { Desired, Owner } from '../api/resource.js';
import type { Timings } from '../api/timings.js';
import { statusCode } from './client.js';

/**
 * What the apiserver says of a workflow's resource (by namespace, name and kind): the truth the workflow acts on;
 * with the controller's own timings, so that they too come from the controller and not from a start request.
 */
/** What the controller says with every read: its timings and its installation ID. */
export interface ControllerFacts {
  timings?: Partial<Timings>;
  installation?: string;
}

export type ResourceRead = ControllerFacts &
  (
    | { found: false }
    | {
        found: true;
        uid: string;
        kind: ResourceKind;
        resourceVersion: string;
        generation: number;
        /** metadata.deletionTimestamp is set. */
        deleting: boolean;
        /** The installation its annotation names (`glidepath.dev/installation`), if any. */
        claimedBy?: string;
        /** When the spec (and its connection) can be used; `desired.uid` is the object's uid. */
        desired?: Desired;
        /** Why not, when `desired` is absent, as the watcher says it (its phase and reason too). */
        problem?: string;
        problemPhase?: 'InvalidSpec' | 'Pending';
        problemReason?: 'InvalidSpec' | 'ConnectionNotFound';
      }
  );

type RawObject = k8s.KubernetesObject & { spec?: unknown };

const resourceKindList = Object.keys(resourceKinds) as ResourceKind[];

export function createResourceReads(kc: k8s.KubeConfig, controller: ControllerFacts = {}) {
  const configured: ControllerFacts = {
    ...(controller.timings ? { timings: controller.timings } : {}),
    ...(controller.installation ? { installation: controller.installation } : {}),
  };
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  /**
   * The object, or undefined when the apiserver says that object is not found. A 404 that does not name it (the
   * kind not served: a CRD missing or being reinstalled) is an error, never "gone": it must not start a teardown.
   */
  const getResource = async (kind: ResourceKind, namespace: string, name: string): Promise<RawObject | undefined> => {
    try {
      return (await custom.getNamespacedCustomObject({
        group,
        version,
        namespace,
        plural: pluralOf(kind),
        name,
      })) as RawObject;
    } catch (err) {
      if (statusCode(err) === 404 && notFoundName(err) === name) return undefined;
      throw err;
    }
  };

  /** The connection, read from the apiserver (ClusterConnections cluster-wide). */
  const connection: ConnectionLookup = async (ref, namespace) => {
    const { plural, clusterScoped } = connectionKinds[ref.kind];
    let obj: unknown;
    try {
      obj = await (clusterScoped
        ? custom.getClusterCustomObject({ group, version, plural, name: ref.name })
        : custom.getNamespacedCustomObject({ group, version, namespace, plural, name: ref.name }));
    } catch (err) {
      // Missing only when the 404 names it (a kind not served is a failure of the read, as for the resource).
      if (statusCode(err) === 404 && notFoundName(err) === ref.name) obj = undefined;
      // A namespaced install's Role grants nothing cluster-scoped: the resource is told why, as the watcher tells it.
      else if (clusterScoped && statusCode(err) === 403) return clusterConnectionsUnreadable(ref.name, namespace);
      else throw err;
    }
    return connectionFromObject(obj, ref, namespace);
  };

  return {
    /**
     * The resource at owner's namespace/name of owner's kind, whatever its uid (the caller compares it with its own);
     * `spec: false`: only who it is (uid, claim, deletion), without its spec and connection.
     */
    async readResource(owner: Owner, o: { spec?: boolean } = {}): Promise<ResourceRead> {
      const kind = owner.kind ?? 'TemporalWorkerDeployment';
      const obj = await getResource(kind, owner.namespace, owner.name);
      if (!obj) return { found: false, ...configured };
      const meta = obj.metadata ?? {};
      const read = {
        found: true as const,
        uid: meta.uid ?? '',
        kind,
        resourceVersion: meta.resourceVersion ?? '',
        generation: meta.generation ?? 0,
        deleting: !!meta.deletionTimestamp,
        ...(meta.annotations?.[installationAnnotation] !== undefined
          ? { claimedBy: meta.annotations[installationAnnotation] }
          : {}),
        ...configured,
      };
      if (o.spec === false) return read; // who it is, not what it asks for: no connection read
      let result = await desiredOf({ ...obj, kind }, kind, connection);
      // Being deleted after its connection (a namespace's deletion takes both): the one it last rolled out with.
      const recorded = read.deleting && !result.ok ? recordedConnection(meta.annotations) : undefined;
      if (recorded) result = await desiredOf({ ...obj, kind }, kind, () => recorded);
      return result.ok
        ? { ...read, desired: result.desired }
        : { ...read, problem: result.problem, problemPhase: result.phase, problemReason: result.reason };
    },

    /**
     * A live object (no deletionTimestamp) of either resource kind at owner.namespace/owner.name whose uid is not
     * owner.uid, or undefined. Of two, the one created first (as the watcher hands over the first of two namesakes).
     */
    async findSuccessor(owner: Owner): Promise<Owner | undefined> {
      const found = await Promise.all(
        resourceKindList.map(async (kind) => ({ kind, obj: await getResource(kind, owner.namespace, owner.name) })),
      );
      const live = found.filter(
        (f): f is { kind: ResourceKind; obj: RawObject } =>
          !!f.obj?.metadata?.uid && f.obj.metadata.uid !== owner.uid && !f.obj.metadata.deletionTimestamp,
      );
      const createdAt = (o: RawObject) => Date.parse(String(o.metadata?.creationTimestamp ?? '')) || 0;
      // resourceKindList lists TemporalWorkerDeployment first: a stable sort keeps it first on a tie.
      const [first] = live.sort((a, b) => createdAt(a.obj) - createdAt(b.obj));
      return first && { namespace: owner.namespace, name: owner.name, uid: first.obj.metadata!.uid!, kind: first.kind };
    },
  };
}

export type ResourceReads = ReturnType<typeof createResourceReads>;

/** The connection a resource's annotation records (`connectionAnnotation`), if it parses. */
function recordedConnection(annotations: Record<string, string> | undefined): ConnectionLookupResult | undefined {
  const text = annotations?.[connectionAnnotation];
  if (text === undefined) return undefined;
  try {
    const spec = TemporalConnectionSpec.safeParse(JSON.parse(text));
    return spec.success ? { ok: true, spec: spec.data, resourceVersion: 'recorded' } : undefined;
  } catch {
    return undefined;
  }
}

/** The name a 404's Status says is not found (`details.name`), if it is a Status. */
function notFoundName(err: unknown): string | undefined {
  const body = (err as { body?: unknown }).body;
  try {
    const status = (typeof body === 'string' ? JSON.parse(body) : body) as { details?: { name?: unknown } } | undefined;
    return typeof status?.details?.name === 'string' ? status.details.name : undefined;
  } catch {
    return undefined;
  }
}
