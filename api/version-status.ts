// How the controller reads a version's status (no zod here: the workflows import it; the schema is in rollout-status.ts).

/** Drainage as the server reports it, reduced to what sunset needs: an unknown status is never drained. */
export function isDrained(status: string | undefined): boolean {
  return status === 'Drained' || status === 'Inactive' || status === 'NotRegistered';
}
