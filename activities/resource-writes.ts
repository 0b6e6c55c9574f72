/**
 * Writes to the resource itself: its status, its Events (what `kubectl describe` shows), its finalizer. No decisions;
 * each is idempotent.
 */
import type * as k8s from '@kubernetes/client-node';
import { apiVersion, group, version } from '../api/common.js';
import { pluralOf } from '../api/kinds.js';
import { finalizer } from '../api/names.js';
import type { TemporalWorkerDeploymentStatus } from '../api/rollout-status.js';
import type { Owner } from '../api/resource.js';
import { describeFailure } from './errors.js';
import { classifyKubernetesError } from '../kube/errors.js';
import { logWarning } from '../temporal/activity-context.js';
import { asApply, asMergePatch, ignoreNotFound, statusCode, withinAttempt } from '../kube/client.js';
import { managerName } from '../kube/versioned-deployment.js';

export interface KubeEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** Unique to this Event (the workflow's run ID and a count): its name, so recording it again is a no-op. */
  id?: string;
}

/** A status write and the Events recorded with it (`report`); the status is absent when it did not change. */
export interface Report {
  status?: TemporalWorkerDeploymentStatus;
  events: KubeEvent[];
}

export function createResourceWriteActivities(core: k8s.CoreV1Api, custom: k8s.CustomObjectsApi) {
  const resourceApi = (owner: Owner) => ({
    group,
    version,
    namespace: owner.namespace,
    plural: pluralOf(owner.kind),
    name: owner.name,
  });
  /** Writes the whole status with server-side apply (see writeStatus); says whether the resource is there, gone or replaced. */
  async function applyStatus(
    owner: Owner,
    status: TemporalWorkerDeploymentStatus,
  ): Promise<'written' | 'gone' | 'replaced'> {
    const metadata = { name: owner.name, namespace: owner.namespace, uid: owner.uid };
    const body = { apiVersion, kind: owner.kind ?? 'TemporalWorkerDeployment', metadata, status };
    try {
      await custom.patchNamespacedCustomObjectStatus(
        { ...resourceApi(owner), body, fieldManager: managerName, force: true },
        withinAttempt(asApply),
      );
      return 'written';
    } catch (err) {
      const code = statusCode(err);
      if (code === 409) {
        logWarning(
          `writeStatus ${owner.namespace}/${owner.name}: not written, the object is another one now (uid ${owner.uid} is gone)`,
        );
        return 'replaced';
      }
      if (code === 404) return 'gone';
      throw err;
    }
  }

  const activities = {
    /**
     * Writes the whole status with server-side apply, so fields no longer set are removed. The body's uid is a
     * precondition: a new object under the same name refuses it (409), and like a deleted one (404) it is not ours
     * to report on. Returns false when the resource is gone (404, or another object under its name).
     */
    async writeStatus(owner: Owner, status: TemporalWorkerDeploymentStatus): Promise<boolean> {
      return (await applyStatus(owner, status)) === 'written';
    },

    /**
     * Records a core/v1 Event on the resource (what `kubectl describe twd` shows). Best effort and never
     * throws: Events are advisory (client-go's recorder drops them too), and a terminating namespace or an
     * Events quota must not hold up a rollout or a deletion. An Event with an `id` has a name of its own, so one
     * recorded already (a retried report) is not recorded twice.
     */
    async recordEvent(owner: Owner, event: KubeEvent): Promise<void> {
      const at = new Date();
      try {
        await core.createNamespacedEvent({
          namespace: owner.namespace,
          body: {
            metadata: {
              ...(event.id ? { name: `${owner.name}.${event.id}` } : { generateName: `${owner.name}.` }),
              namespace: owner.namespace,
            },
            involvedObject: {
              apiVersion,
              kind: owner.kind ?? 'TemporalWorkerDeployment',
              name: owner.name,
              namespace: owner.namespace,
              uid: owner.uid,
            },
            type: event.type,
            reason: event.reason,
            message: event.message,
            source: { component: managerName },
            reportingComponent: managerName,
            firstTimestamp: at,
            lastTimestamp: at,
            count: 1,
          },
        });
      } catch (err) {
        if (event.id && statusCode(err) === 409) return; // recorded by an earlier attempt
        logWarning(
          `recordEvent ${owner.namespace}/${owner.name} ${event.reason}: dropped (${describeFailure(err, { namespace: owner.namespace })})`,
        );
      }
    },

    /**
     * What a transition reports, in one activity (one task instead of one per write): the status if it changed,
     * then the Events (after, so a status write that is retried does not record them twice). A status refused for
     * good (RBAC, validation) does not hold the Events back: they go out, then the refusal is thrown. Events name
     * the object by uid, so those of a deleted resource are still recorded (as `CleanupIncomplete` must be), but not
     * onto another object under its name. Returns false when the resource is gone, as writeStatus does.
     */
    async report(owner: Owner, report: Report): Promise<boolean> {
      const recordAll = async () => {
        for (const event of report.events) await activities.recordEvent(owner, event);
      };
      let outcome: Awaited<ReturnType<typeof applyStatus>> = 'written';
      if (report.status) {
        try {
          outcome = await applyStatus(owner, report.status);
        } catch (err) {
          if (classifyKubernetesError(err)?.kind === 'permanent') await recordAll();
          throw err;
        }
      }
      if (outcome === 'replaced') {
        if (report.events.length)
          logWarning(
            `report ${owner.namespace}/${owner.name}: ${report.events.length} Events not recorded, the object is another one now`,
          );
      } else await recordAll();
      return outcome === 'written';
    },

    /** Drops our finalizer, so Kubernetes can delete the resource (not from a new object under the same name). */
    async removeFinalizer(owner: Owner): Promise<void> {
      const current = (await ignoreNotFound(custom.getNamespacedCustomObject(resourceApi(owner)))) as
        k8s.KubernetesObject | undefined;
      if (current?.metadata?.uid !== owner.uid) return;
      if (!current.metadata.finalizers?.includes(finalizer)) return;
      const finalizers = current.metadata.finalizers.filter((f) => f !== finalizer);
      await ignoreNotFound(
        custom.patchNamespacedCustomObject(
          {
            ...resourceApi(owner),
            body: { metadata: { finalizers, resourceVersion: current.metadata.resourceVersion } },
          },
          asMergePatch,
        ),
      );
    },
  };
  return activities;
}
