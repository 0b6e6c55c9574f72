/**
 * What a resource object asks for, as the one `Desired` a RolloutWorkflow acts on: the watcher derives it from its
 * cache (starter/watcher.ts), the workflow's `readResource` activity from the apiserver
 * (kube/read-resource.ts), with the same code, so both say the same of the same object.
 */
import { computeBuildId } from './build-id.js';
import {
  connectionLabel,
  parseConnection,
  parseWorkerResource,
  type ConnectionKind,
  type ResourceKind,
} from './kinds.js';
import type { TemporalConnectionSpec } from './temporal-connection.js';
import type { Desired } from './resource.js';

/** A connection a resource names, parsed; or why it cannot be used. */
export type ConnectionLookupResult =
  { ok: true; spec: TemporalConnectionSpec; resourceVersion: string } | { ok: false; problem: string };

/** Finds a resource's connection (`namespace` is the resource's: a ClusterConnection ignores it but for messages). */
export type ConnectionLookup = (
  ref: { kind: ConnectionKind; name: string },
  namespace: string,
) => Promise<ConnectionLookupResult> | ConnectionLookupResult;

export type DesiredResult =
  | { ok: true; desired: Desired }
  | { ok: false; phase: 'InvalidSpec' | 'Pending'; reason: 'InvalidSpec' | 'ConnectionNotFound'; problem: string };

/**
 * The `Desired` of a TemporalWorkerDeployment or WorkerDeployment object (its generation and uid, the normalized
 * spec, its build ID and its connection), or why it cannot be rolled out: an invalid spec or custom build ID
 * (InvalidSpec), a connection missing, invalid or unreadable (Pending/ConnectionNotFound). `connection` is called
 * at most once, only when the spec parses and before the build ID is computed.
 * @example await desiredOf(obj, 'TemporalWorkerDeployment', lookup) // { ok: true, desired: { generation: 1, buildId: '1.0.0-…', … } }
 */
export async function desiredOf(
  obj: unknown,
  kind: ResourceKind,
  connection: ConnectionLookup,
): Promise<DesiredResult> {
  const parsed = parseWorkerResource(obj, kind);
  if (!parsed.ok) return { ok: false, phase: 'InvalidSpec', reason: 'InvalidSpec', problem: parsed.problem };
  const meta = (obj as { metadata?: { namespace?: string; uid?: string; generation?: number } }).metadata ?? {};
  const found = await connection(parsed.resource.connectionRef, meta.namespace ?? '');
  if (!found.ok) return { ok: false, phase: 'Pending', reason: 'ConnectionNotFound', problem: found.problem };
  const { spec } = parsed.resource;
  let buildId: string;
  try {
    buildId = computeBuildId(spec.template, spec.workerOptions.unsafeCustomBuildID);
  } catch (err) {
    return {
      ok: false,
      phase: 'InvalidSpec',
      reason: 'InvalidSpec',
      problem: `spec.workerOptions.unsafeCustomBuildID: ${(err as Error).message}`,
    };
  }
  // `uid` tells the workflow a spec of a namesake (another object under the same name) from its own.
  return {
    ok: true,
    desired: {
      generation: meta.generation ?? 0,
      spec,
      kind,
      buildId,
      connection: found.spec,
      connectionVersion: found.resourceVersion,
      uid: meta.uid,
    },
  };
}

/**
 * A connection object as a lookup answers it: `undefined` is one not found. Shared by the watcher (its caches) and
 * the activity (a GET), so both word a missing or invalid connection the same.
 */
export function connectionFromObject(
  obj: unknown,
  ref: { kind: ConnectionKind; name: string },
  namespace: string,
): ConnectionLookupResult {
  const label = connectionLabel(ref.kind, ref.name, namespace);
  if (obj === undefined || obj === null) return { ok: false, problem: `${label} not found` };
  const parsed = parseConnection(obj, ref.kind);
  if (!parsed.ok) return { ok: false, problem: `${label} is invalid: ${parsed.problem}` };
  return {
    ok: true,
    spec: parsed.spec,
    resourceVersion: (obj as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion ?? '',
  };
}

/** Why a resource cannot use a ClusterConnection where the controller may not read them (a namespaced install). */
export function clusterConnectionsUnreadable(name: string, namespace: string): ConnectionLookupResult {
  const label = connectionLabel('ClusterConnection', name, namespace);
  return {
    ok: false,
    problem: `${label}: this controller may not read ClusterConnections (a namespaced install: its Role grants nothing cluster-scoped); use a Connection in ${namespace}, or grant it get, list and watch on clusterconnections`,
  };
}
