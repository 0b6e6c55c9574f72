/**
 * Version activities through WorkflowService: a version's drainage status, and the deletion of versions and of the
 * worker deployment.
 */
import { Context } from '@temporalio/activity';
import { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { VersionStatus } from '../api/rollout-status.js';
import type { TemporalConnections, TemporalTarget } from '../temporal/connections.js';
import { describeVersionSettled, isNamespaceNotFound, isNotFound } from '../temporal/describe.js';
import { pollersRemembered } from '../temporal/errors.js';
import { pinnedRunningOn } from '../temporal/pinned.js';
import { describeWorkerDeployment, routingOf, versionStatusName } from './routing.js';

const { temporal } = proto; // a CommonJS module: no named exports under ESM

export function createVersionActivities(connections: TemporalConnections, identity: string) {
  async function service(t: TemporalTarget) {
    return (await connections.get(t)).workflowService;
  }

  const describe = (t: TemporalTarget) => describeWorkerDeployment(connections, t);

  return {
    /**
     * Drainage of a version. Inactive (never routed to) and unknown-to-the-server versions can still have pinned
     * executions (a gate is started with a versioning override): for those, visibility decides.
     */
    async versionStatus(t: TemporalTarget, buildId: string): Promise<VersionStatus> {
      // Not found: never registered, or deleted and registered anew (seen when a build ID comes back after its
      // worker deployment was deleted).
      const res = await describeVersionSettled(await service(t), t.temporalNamespace, t.deploymentName, buildId);
      const info = res?.workerDeploymentVersionInfo;
      // CREATED: added by the registration wait's limit check (server 1.32) and never polled since. No worker ever
      // took work as this version: as for one the server does not know, visibility decides.
      const created =
        info?.status === temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CREATED;
      const status: VersionStatus = !res || created ? 'NotRegistered' : versionStatusName(info?.status);
      if (status !== 'Inactive' && status !== 'NotRegistered') return status;
      const client = new Client({ connection: await connections.get(t), namespace: t.temporalNamespace });
      const open = await client.workflow.count(pinnedRunningOn(t, buildId));
      return open.count > 0 ? 'Draining' : status;
    },

    /**
     * Deletes a version. The server refuses while it still remembers the version's pollers
     * (`matching.PollerHistoryTTL`), moments after its pods went: as an activity, that is waited out within the
     * attempt, asking again at 0.5 s doubling to 4 s, until too little of its time is left (then the refusal is the
     * answer); inside a workflow task (a local activity), the refusal is the answer at once.
     */
    async deleteVersion(t: TemporalTarget, buildId: string): Promise<void> {
      const { info, sleep } = Context.current();
      // On this process's clock from now: the attempt's time, and what is left of the whole call's.
      const scheduleToCloseLeftMs = info.scheduleToCloseTimeoutMs
        ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs - Date.now()
        : Infinity;
      const deadline = info.isLocal ? 0 : Date.now() + Math.min(info.startToCloseTimeoutMs, scheduleToCloseLeftMs);
      for (let delayMs = 500; ; delayMs = Math.min(delayMs * 2, 4_000)) {
        try {
          await (
            await service(t)
          ).deleteWorkerDeploymentVersion({
            namespace: t.temporalNamespace,
            deploymentVersion: { deploymentName: t.deploymentName, buildId },
            skipDrainage: true,
            identity,
          });
          return;
        } catch (err) {
          if (isNotFound(err) || isNamespaceNotFound(err)) return;
          if (!pollersRemembered(err) || Date.now() + delayMs + 2_000 > deadline) throw err;
        }
        await sleep(delayMs);
      }
    },

    /** Deletes every version, then the worker deployment; fails (and is retried) while pollers linger. */
    async deleteWorkerDeployment(t: TemporalTarget): Promise<void> {
      const svc = await service(t);
      const described = await describe(t).catch((err: unknown) => {
        if (isNamespaceNotFound(err)) return null; // no namespace: nothing of ours there
        throw err;
      });
      if (described === null) return;
      const routing = routingOf(described);
      for (const v of routing.versions) {
        try {
          await svc.deleteWorkerDeploymentVersion({
            namespace: t.temporalNamespace,
            deploymentVersion: { deploymentName: t.deploymentName, buildId: v.buildId },
            skipDrainage: true,
            identity,
          });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
      try {
        await svc.deleteWorkerDeployment({
          namespace: t.temporalNamespace,
          deploymentName: t.deploymentName,
          identity,
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },
  };
}
