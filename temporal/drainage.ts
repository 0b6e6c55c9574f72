/**
 * Drainage, read from Temporal: a long wait inside one heartbeating activity (so days of draining add no
 * workflow history), and the open executions of versions (said before a deletion strands them).
 */
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import type { VersionStatus } from '../api/rollout-status.js';
import { isDrained } from '../api/version-status.js';
import { firstHeartbeatAt, sdkHeartbeat, type HeartbeatOf } from './activity-context.js';
import type { TemporalConnections, TemporalTarget } from './connections.js';
import { pinnedRunningOn } from './pinned.js';

export function createDrainageActivities(
  connections: TemporalConnections,
  versionStatus: (t: TemporalTarget, buildId: string) => Promise<VersionStatus>,
  heartbeatOf: HeartbeatOf = sdkHeartbeat,
) {
  return {
    /**
     * Polls the version's drainage with backoff (1s doubling up to `maxDelayMs`), heartbeating; returns once drained.
     * `readJustNow`: the status the caller has just read (the first describe waits out the first delay).
     */
    async awaitDrained(
      t: TemporalTarget,
      buildId: string,
      maxDelayMs = 60_000,
      readJustNow?: VersionStatus,
    ): Promise<VersionStatus> {
      const ctx = Context.current();
      const heartbeat = heartbeatOf(ctx);
      const heartbeatsFrom = firstHeartbeatAt(ctx, Date.now());
      let status = readJustNow;
      for (let delay = 1000, read = status === undefined; ; delay = Math.min(delay * 2, maxDelayMs), read = true) {
        if (read || status === undefined) status = await versionStatus(t, buildId);
        if (isDrained(status)) return status;
        // Heartbeat through the sleep: a dead controller is noticed within the heartbeat timeout.
        for (let waited = 0; waited < delay; waited += 5000) {
          if (Date.now() >= heartbeatsFrom) heartbeat(status);
          await ctx.sleep(Math.min(5000, delay - waited));
        }
      }
    },

    /** Running executions pinned to each version (visibility), by build ID. */
    async countOpenExecutions(t: TemporalTarget, buildIds: string[]): Promise<Record<string, number>> {
      const client = new Client({ connection: await connections.get(t), namespace: t.temporalNamespace });
      const open: Record<string, number> = {};
      for (const buildId of buildIds) {
        const { count } = await client.workflow.count(pinnedRunningOn(t, buildId));
        open[buildId] = count;
      }
      return open;
    },
  };
}
