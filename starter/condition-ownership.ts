/**
 * Which status fields a field manager still holds, read off `metadata.managedFields`. The watcher writes a
 * condition (InvalidSpec, ConnectionNotFound) with server-side apply under its own manager; once the problem is
 * gone it applies again without those fields, and server-side apply removes what no other manager holds.
 * `status.conditions` is an atomic list in the CRD, so whoever applied it last owns all of it.
 */
import type * as k8s from '@kubernetes/client-node';

/** The status fields the watcher writes when it reports a problem (observedGeneration it keeps). */
export const problemFields = ['f:phase', 'f:message', 'f:conditions'] as const;

/**
 * True when `manager` still owns a problem field of the status subresource, i.e. its condition may linger.
 *
 * @example
 * holdsProblemStatus(obj.metadata?.managedFields, 'glidepath-watcher'); // after the watcher wrote InvalidSpec: true
 */
export function holdsProblemStatus(managedFields: k8s.V1ManagedFieldsEntry[] | undefined, manager: string): boolean {
  return (managedFields ?? []).some((entry) => {
    if (entry.manager !== manager || entry.subresource !== 'status') return false;
    const status = (entry.fieldsV1 as Record<string, Record<string, unknown> | undefined> | undefined)?.['f:status'];
    return !!status && problemFields.some((f) => f in status);
  });
}
