/**
 * The kinds Glidepath serves, in one table: the resources it rolls out (`TemporalWorkerDeployment`, and
 * `WorkerDeployment` of temporal-worker-controller ≥ 1.7) and the connections they name (`TemporalConnection`,
 * `Connection`, the cluster-scoped `ClusterConnection`). `parseWorkerResource` turns either resource kind into the
 * one spec the workflow gets.
 */
import type { z } from 'zod';
import { describeIssues } from './common.js';
import { ClusterConnection, Connection } from './connection.js';
import { TemporalConnection, type TemporalConnectionSpec } from './temporal-connection.js';
import { TemporalWorkerDeployment, type ConnectionRefKind } from './temporal-worker-deployment.js';
import { WorkerDeployment, normalizeWorkerDeploymentSpec, type NormalizedSpec } from './worker-deployment.js';

/** The resources a RolloutWorkflow rolls out. */
export const ResourceKind = {
  TemporalWorkerDeployment: 'TemporalWorkerDeployment',
  WorkerDeployment: 'WorkerDeployment',
} as const;
export type ResourceKind = (typeof ResourceKind)[keyof typeof ResourceKind];

/** The connection kinds a `workerOptions.connectionRef.kind` names. */
export const ConnectionKind = {
  TemporalConnection: 'TemporalConnection',
  Connection: 'Connection',
  ClusterConnection: 'ClusterConnection',
} as const;
export type ConnectionKind = ConnectionRefKind;

export interface ResourceKindInfo {
  plural: string;
  /** The connection kind a connectionRef without `kind` names. */
  defaultConnectionKind: ConnectionKind;
}

export const resourceKinds: Record<ResourceKind, ResourceKindInfo> = {
  TemporalWorkerDeployment: { plural: 'temporalworkerdeployments', defaultConnectionKind: 'TemporalConnection' },
  WorkerDeployment: { plural: 'workerdeployments', defaultConnectionKind: 'Connection' },
};

export interface ConnectionKindInfo {
  plural: string;
  /** Cluster-scoped: one object for every namespace (its Secrets are read in the namespace of the resource). */
  clusterScoped: boolean;
}

export const connectionKinds: Record<ConnectionKind, ConnectionKindInfo> = {
  TemporalConnection: { plural: 'temporalconnections', clusterScoped: false },
  Connection: { plural: 'connections', clusterScoped: false },
  ClusterConnection: { plural: 'clusterconnections', clusterScoped: true },
};

/** The plural of a resource kind; a kind Glidepath does not know (an Owner from before kinds) is a TemporalWorkerDeployment. */
export function pluralOf(kind: ResourceKind | undefined): string {
  return resourceKinds[kind ?? 'TemporalWorkerDeployment'].plural;
}

/** A resource as the watcher hands it over: the normalized spec and the connection it names. */
export interface WorkerResource {
  kind: ResourceKind;
  spec: NormalizedSpec;
  connectionRef: { kind: ConnectionKind; name: string };
}

/**
 * Parses a TemporalWorkerDeployment or WorkerDeployment into the one spec the workflow gets, with its connection's
 * kind resolved (the resource kind's default when not given). The problem, naming each field, when it is invalid.
 * @example parseWorkerResource(obj, 'WorkerDeployment') // { ok: true, resource: { kind, spec, connectionRef: { kind: 'Connection', name } } }
 */
export function parseWorkerResource(
  obj: unknown,
  kind: ResourceKind,
): { ok: true; resource: WorkerResource } | { ok: false; problem: string } {
  let spec: NormalizedSpec;
  if (kind === 'WorkerDeployment') {
    const parsed = WorkerDeployment.safeParse(obj);
    if (!parsed.success) return { ok: false, problem: describeIssues(parsed.error) };
    spec = normalizeWorkerDeploymentSpec(parsed.data.spec);
  } else {
    const parsed = TemporalWorkerDeployment.safeParse(obj);
    if (!parsed.success) return { ok: false, problem: describeIssues(parsed.error) };
    spec = parsed.data.spec;
  }
  const ref = spec.workerOptions.connectionRef;
  const connectionRef = { kind: ref.kind ?? resourceKinds[kind].defaultConnectionKind, name: ref.name };
  // The workflow gets the kind spelled out, so what it holds says which object it is.
  return {
    ok: true,
    resource: { kind, connectionRef, spec: { ...spec, workerOptions: { ...spec.workerOptions, connectionRef } } },
  };
}

const connectionSchemas: Record<ConnectionKind, z.ZodType<{ spec: TemporalConnectionSpec }>> = {
  TemporalConnection,
  Connection,
  ClusterConnection,
};

/** Parses a connection of any kind: its spec, or the problem naming each field. */
export function parseConnection(
  obj: unknown,
  kind: ConnectionKind,
): { ok: true; spec: TemporalConnectionSpec } | { ok: false; problem: string } {
  const parsed = connectionSchemas[kind].safeParse(obj);
  return parsed.success ? { ok: true, spec: parsed.data.spec } : { ok: false, problem: describeIssues(parsed.error) };
}

/** How a connection is named in messages: `Connection shop/temporal`, `ClusterConnection temporal`. */
export function connectionLabel(kind: ConnectionKind, name: string, namespace: string): string {
  return connectionKinds[kind].clusterScoped ? `${kind} ${name}` : `${kind} ${namespace}/${name}`;
}
