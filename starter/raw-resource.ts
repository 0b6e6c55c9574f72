/**
 * What the watcher reads off a resource object as the caches hold it, before any parse: its kind, the connection it
 * names, and which of two namesakes came first.
 */
import { group, version } from '../api/common.js';
import { pluralOf, resourceKinds, type ConnectionKind, type ResourceKind } from '../api/kinds.js';
import type { Resource } from './informers.js';

/** The kind of a resource object (every object in the caches says it: ./informers.ts). */
export const kindOf = (obj: Resource): ResourceKind =>
  obj.kind === 'WorkerDeployment' ? 'WorkerDeployment' : 'TemporalWorkerDeployment';
export const resourceKindList = Object.keys(resourceKinds) as ResourceKind[];

/** The connection a resource names, read off the raw object (its kind defaulted as for the resource's kind). */
export function connectionRefOf(obj: Resource): { kind: ConnectionKind; name?: string } {
  const ref = (obj.spec as { workerOptions?: { connectionRef?: { name?: string; kind?: ConnectionKind } } } | undefined)
    ?.workerOptions?.connectionRef;
  return { kind: ref?.kind ?? resourceKinds[kindOf(obj)].defaultConnectionKind, name: ref?.name };
}

/** Of two namesakes of different kinds, the one created first (on a tie the TemporalWorkerDeployment, then by uid). */
export function firstCreated(a: Resource, b: Resource): Resource {
  const at = (o: Resource) => Date.parse(String(o.metadata?.creationTimestamp ?? '')) || 0;
  if (at(a) !== at(b)) return at(a) < at(b) ? a : b;
  if (kindOf(a) !== kindOf(b)) return kindOf(a) === 'TemporalWorkerDeployment' ? a : b;
  return String(a.metadata?.uid) < String(b.metadata?.uid) ? a : b;
}

/** Where a resource object is in the apiserver, for a write to it by `fieldManager`. */
export function addressOf(obj: Resource, fieldManager: string) {
  const meta = obj.metadata!;
  return { group, version, plural: pluralOf(kindOf(obj)), namespace: meta.namespace!, name: meta.name!, fieldManager };
}
