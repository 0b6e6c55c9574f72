/**
 * Analysis of a version's work, read from visibility: how many of its executions closed, and how many of those
 * failed. The workflow decides what the numbers mean (a failure-rate gate); this only counts.
 */
import { Client } from '@temporalio/client';
import { PermanentError } from '../api/errors.js';
import type { TemporalConnections, TemporalTarget } from './connections.js';

/**
 * A string literal of the list filter language: `\` and `"` escaped with a backslash. (The dev server's SQLite
 * visibility accepts such a literal but never matches a stored value holding `"` or `\`; `'` is fine.)
 */
export const queryString = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** The visibility filter of a version's executions. */
export const versionFilter = (t: TemporalTarget, buildId: string) =>
  `TemporalWorkerDeploymentVersion = ${queryString(`${t.deploymentName}:${buildId}`)}`;

/** The closed statuses that count as failed: a timeout is a failure of the version's work too. */
const failedStatuses = new Set(['Failed', 'TimedOut']);

export function createAnalysisActivities(connections: TemporalConnections) {
  return {
    /**
     * Executions of the version closed after `sinceIso` (of `workflowTypes` only, when given and not empty), and
     * how many of those failed or timed out. Visibility is eventually consistent: a count lags a close by a moment.
     */
    async countOutcomes(
      t: TemporalTarget,
      buildId: string,
      opts: { sinceIso: string; workflowTypes?: string[] },
    ): Promise<{ closed: number; failed: number }> {
      const since = Date.parse(opts.sinceIso);
      if (Number.isNaN(since)) throw new PermanentError(`countOutcomes: "${opts.sinceIso}" is not a time`);
      const types = opts.workflowTypes?.length
        ? ` AND WorkflowType IN (${opts.workflowTypes.map(queryString).join(', ')})`
        : '';
      // CloseTime of a running execution is null (never after `since`); the status says it outright anyway.
      const query = `${versionFilter(t, buildId)}${types} AND CloseTime > "${new Date(since).toISOString()}" AND ExecutionStatus != "Running"`;
      const client = new Client({ connection: await connections.get(t), namespace: t.temporalNamespace });
      // One count grouped by status: closed and failed read from the same moment (failed never exceeds closed).
      const { count, groups } = await client.workflow.count(`${query} GROUP BY ExecutionStatus`);
      const failed = groups
        .filter((g) => failedStatuses.has(String(g.groupValues.flat()[0])))
        .reduce((sum, g) => sum + g.count, 0);
      return { closed: count, failed };
    },
  };
}
