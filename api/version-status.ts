/** A worker deployment version's status in Temporal, as the controller reads it (no zod: the workflows import it). */
/** Drainage as the server reports it, reduced to what sunset needs: an unknown status is never drained. */
export function isDrained(status: string | undefined): boolean {
  return status === 'Drained' || status === 'Inactive' || status === 'NotRegistered';
}
