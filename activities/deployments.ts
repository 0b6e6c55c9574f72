/**
 * Deployment activities: server-side applies, scales and deletes of a resource's versioned Deployments, no
 * decisions. Each is idempotent, so the retry policy of the workflow is the only retry mechanism.
 */
import type * as k8s from '@kubernetes/client-node';
import { versionedDeploymentName } from '../api/names.js';
import type { PodTemplate } from '../api/temporal-worker-deployment.js';
import type { DeploymentObservation, Desired, Owner } from '../api/resource.js';
import { logWarning } from '../temporal/activity-context.js';
import { asApply, asMergePatch, ignoreNotFound, withinAttempt } from '../kube/client.js';
import {
  Labels,
  isOwnedBy,
  managerName,
  observeDeployment,
  renderVersionedDeployment,
} from '../kube/versioned-deployment.js';

/** What a stray sweep did: Deployments deleted and scaled down (names), and strays with pods seen (uids). */
export interface StraySweep {
  deleted: string[];
  scaledDown: string[];
  withPods: string[];
}

export interface EnsureDeploymentInput {
  owner: Owner;
  desired: Desired;
  buildId: string;
  /** The build's own pod template (the desired spec's is another build's unless this is the desired build). */
  template: PodTemplate;
  replicas?: number;
}

export function createDeploymentActivities(apps: k8s.AppsV1Api) {
  const selectorOf = (owner: Owner) => `${Labels.workerDeployment}=${owner.name},${Labels.managedBy}=${managerName}`;
  /** The resource's Deployments: of this incarnation only (the name may have had an owner before). */
  const ownedDeployments = async (owner: Owner) =>
    (
      await apps.listNamespacedDeployment({ namespace: owner.namespace, labelSelector: selectorOf(owner) })
    ).items.filter((d) => isOwnedBy(d, owner));
  /**
   * A build's Deployments of this incarnation, by their labels (one adopted from temporal-worker-controller keeps
   * that controller's name). Only these are scaled, updated or deleted: never one found by name alone.
   */
  const deploymentsOfBuild = async (
    owner: Owner,
    buildId: string,
  ): Promise<{ name: string; found: k8s.V1Deployment }[]> => {
    const labelSelector = `${Labels.workerDeployment}=${owner.name},${Labels.buildId}=${buildId}`;
    const found = (await apps.listNamespacedDeployment({ namespace: owner.namespace, labelSelector })).items.filter(
      (d) => isOwnedBy(d, owner),
    );
    return found.map((d) => ({ name: d.metadata!.name!, found: d }));
  };
  /** Server-side applies a build's Deployment; `leaveReplicas`: without them (another manager holds them); `dryRun`: only says what it would be. */
  async function apply(
    input: EnsureDeploymentInput,
    opts: { leaveReplicas?: boolean; dryRun?: boolean } = {},
  ): Promise<k8s.V1Deployment> {
    const body = renderVersionedDeployment({
      owner: input.owner,
      spec: { ...input.desired.spec, template: input.template },
      connection: input.desired.connection,
      buildId: input.buildId,
      replicas: input.replicas,
    });
    if (opts.leaveReplicas) delete body.spec!.replicas;
    return apps.patchNamespacedDeployment(
      {
        name: body.metadata!.name!,
        namespace: input.owner.namespace,
        body,
        fieldManager: managerName,
        force: true,
        ...(opts.dryRun ? { dryRun: 'All' } : {}),
      },
      withinAttempt(asApply),
    );
  }

  return {
    /** Server-side applies the versioned Deployment of a build; returns what it looks like now. */
    async ensureVersionedDeployment(input: EnsureDeploymentInput): Promise<DeploymentObservation> {
      return observeDeployment(await apply(input));
    },

    /** Reads the versioned Deployment of a build (read-only). */
    async readDeployment(owner: Owner, buildId: string): Promise<DeploymentObservation> {
      const name = versionedDeploymentName(owner.name, buildId);
      const d = await ignoreNotFound(apps.readNamespacedDeployment({ name, namespace: owner.namespace }));
      if (d) return observeDeployment(d);
      // Not under our name: adopted from temporal-worker-controller, under its name.
      const adopted = (await deploymentsOfBuild(owner, buildId))[0]?.found;
      return adopted ? observeDeployment(adopted) : { buildId, name, exists: false };
    },

    /**
     * Brings the live versions' Deployments back to what they should be: recreates a missing one, and re-applies one
     * marked `heal` (the current and target: a draining version keeps the spec it had) whose fields Glidepath sets
     * were changed by hand, found by a server-side dry run (no write when nothing drifted).
     * Fields another manager holds are left to it (a scaler's replicas); so is a Deployment of the same name that
     * another incarnation of the resource owns (its garbage collection is due). Returns the names recreated and healed.
     */
    async reconcileDeployments(input: {
      owner: Owner;
      desired: Desired;
      versions: { buildId: string; replicas: number; template: PodTemplate; heal?: boolean }[];
    }): Promise<{ recreated: string[]; healed: string[] }> {
      const recreated: string[] = [];
      const healed: string[] = [];
      for (const v of input.versions) {
        const name = versionedDeploymentName(input.owner.name, v.buildId);
        const existing = await ignoreNotFound(
          apps.readNamespacedDeployment({ name, namespace: input.owner.namespace }),
        );
        const wanted = {
          owner: input.owner,
          desired: input.desired,
          buildId: v.buildId,
          template: v.template,
          replicas: v.replicas,
        };
        if (existing && !isOwnedBy(existing, input.owner)) continue;
        if (!existing || existing.metadata?.deletionTimestamp) {
          await apply(wanted);
          recreated.push(name);
          continue;
        }
        if (!v.heal) continue;
        const leaveReplicas = replicasHeldByAnother(existing);
        // A dry run an admission webhook refuses (or a quota) leaves this one as it is: the others are still reconciled.
        const would = await apply(wanted, { leaveReplicas, dryRun: true }).catch((err: unknown) => {
          logWarning(`reconcile ${name}: the dry run was refused, not healed: ${(err as Error).message}`);
          return undefined;
        });
        if (
          !would ||
          JSON.stringify([would.spec, would.metadata?.labels]) ===
            JSON.stringify([existing.spec, existing.metadata?.labels])
        )
          continue;
        await apply(wanted, { leaveReplicas });
        healed.push(name);
      }
      return { recreated, healed };
    },

    async scaleDeployment(owner: Owner, buildId: string, replicas: number): Promise<void> {
      for (const { name } of await deploymentsOfBuild(owner, buildId)) {
        await ignoreNotFound(
          apps.patchNamespacedDeploymentScale(
            { name, namespace: owner.namespace, body: { spec: { replicas } }, fieldManager: managerName },
            withinAttempt(asMergePatch),
          ),
        );
      }
    },

    async deleteDeployment(owner: Owner, buildId: string): Promise<void> {
      for (const { name } of await deploymentsOfBuild(owner, buildId))
        await ignoreNotFound(apps.deleteNamespacedDeployment({ name, namespace: owner.namespace }));
    },

    /**
     * The spec's Deployment settings on an adopted Deployment (its template stays the other controller's rendering:
     * a new template is a new build). Returns what it looks like now.
     */
    async updateAdoptedDeployment(input: {
      owner: Owner;
      desired: Desired;
      buildId: string;
      replicas?: number;
    }): Promise<DeploymentObservation> {
      const { owner, desired, buildId } = input;
      const { spec } = desired;
      const body = {
        spec: {
          replicas: input.replicas ?? spec.replicas,
          minReadySeconds: spec.minReadySeconds,
          progressDeadlineSeconds: spec.progressDeadlineSeconds,
          ...(spec.revisionHistoryLimit !== undefined ? { revisionHistoryLimit: spec.revisionHistoryLimit } : {}),
          ...(spec.strategy !== undefined ? { strategy: spec.strategy } : {}),
        },
      };
      for (const { name } of await deploymentsOfBuild(owner, buildId)) {
        const d = await ignoreNotFound(
          apps.patchNamespacedDeployment({ name, namespace: owner.namespace, body }, withinAttempt(asMergePatch)),
        );
        if (d) return observeDeployment(d);
      }
      return { buildId, name: versionedDeploymentName(owner.name, buildId), exists: false };
    },

    async scaleOwnedDeployments(owner: Owner, replicas: number): Promise<void> {
      for (const d of await ownedDeployments(owner)) {
        await ignoreNotFound(
          apps.patchNamespacedDeploymentScale(
            {
              name: d.metadata!.name!,
              namespace: owner.namespace,
              body: { spec: { replicas } },
              fieldManager: managerName,
            },
            withinAttempt(asMergePatch),
          ),
        );
      }
    },

    /**
     * The resource's Deployments of builds not in `liveBuildIds` (strays): one scaled to 0 is deleted; one with pods
     * is scaled to 0 when it was a stray with pods the round before too (its uid in `seenWithPods`: an apply whose
     * workflow task was lost, then decided otherwise). Returns the names deleted and scaled down, and the uids of
     * the strays with pods left for the next round.
     */
    async removeStrayDeployments(owner: Owner, liveBuildIds: string[], seenWithPods: string[]): Promise<StraySweep> {
      const strays = (await ownedDeployments(owner)).filter(
        (d) => !liveBuildIds.includes(d.metadata?.labels?.[Labels.buildId] ?? ''),
      );
      const sweep: StraySweep = { deleted: [], scaledDown: [], withPods: [] };
      for (const d of strays) {
        const name = d.metadata!.name!;
        const uid = d.metadata?.uid ?? '';
        if ((d.spec?.replicas ?? 1) === 0) {
          await ignoreNotFound(apps.deleteNamespacedDeployment({ name, namespace: owner.namespace }));
          sweep.deleted.push(name);
        } else if (seenWithPods.includes(uid)) {
          await ignoreNotFound(
            apps.patchNamespacedDeploymentScale(
              { name, namespace: owner.namespace, body: { spec: { replicas: 0 } }, fieldManager: managerName },
              withinAttempt(asMergePatch),
            ),
          );
          sweep.scaledDown.push(name);
        } else sweep.withPods.push(uid);
      }
      return sweep;
    },

    /** Deletes every Deployment of the resource (no garbage collector is assumed). */
    async deleteOwnedDeployments(owner: Owner): Promise<void> {
      for (const d of await ownedDeployments(owner))
        await ignoreNotFound(apps.deleteNamespacedDeployment({ name: d.metadata!.name!, namespace: owner.namespace }));
    },
  };
}

/** Whether a manager other than Glidepath holds `spec.replicas` (a scaler, `kubectl scale`): then it is theirs. */
function replicasHeldByAnother(d: k8s.V1Deployment): boolean {
  return (d.metadata?.managedFields ?? []).some((m) => {
    const spec = (m.fieldsV1 as Record<string, Record<string, unknown> | undefined> | undefined)?.['f:spec'];
    return m.manager !== managerName && spec !== undefined && 'f:replicas' in spec;
  });
}
