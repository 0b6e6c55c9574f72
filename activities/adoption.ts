/**
 * Adoption activities: temporal-worker-controller's versioned Deployments taken over as the resource's, and a new
 * resource's first round (adopt, or else apply).
 */
import type * as k8s from '@kubernetes/client-node';
import type { PodTemplate } from '../api/temporal-worker-deployment.js';
import type { DeploymentObservation, Owner } from '../api/resource.js';
import { describeFailure } from './errors.js';
import type { EnsureDeploymentInput } from './deployments.js';
import { logWarning } from '../temporal/activity-context.js';
import { asMergePatch, ignoreNotFound, statusCode } from '../kube/client.js';
import {
  ForeignLabels,
  adoptionPatch,
  isForeignVersionOf,
  sameUserTemplate,
  templateCheckDeployment,
  type RawDeployment,
} from '../kube/foreign-deployments.js';

/** A version temporal-worker-controller made, now the resource's (adoptForeignDeployments). */
export interface ForeignVersion {
  buildId: string;
  /** Its Deployment's name, the other controller's naming (not necessarily `versionedDeploymentName`). */
  deploymentName: string;
  /** Its pod template is the spec's template unchanged (defaults and injected env aside). */
  matchesTemplate: boolean;
  /**
   * Why the template could not be judged (the dry run that gives the apiserver's defaults was refused): every
   * version is then taken as changed. Absent when it was judged.
   */
  templateUnchecked?: string;
  replicas: number;
  availableReplicas: number;
}

/** `ensureVersionedDeployment`: the Deployment activities' apply, for a resource with nothing to adopt. */
export function createAdoptionActivities(
  custom: k8s.CustomObjectsApi,
  ensureVersionedDeployment: (input: EnsureDeploymentInput) => Promise<DeploymentObservation>,
) {
  /** apps/v1 Deployments as raw JSON (CustomObjectsApi takes any group): a typed client would drop fields it does not know. */
  const deploymentsApi = (namespace: string) => ({ group: 'apps', version: 'v1', namespace, plural: 'deployments' });

  const activities = {
    /**
     * Takes over the versioned Deployments temporal-worker-controller made for this resource's worker deployment
     * (its labels, its names, pods polling as `<namespace>/<name>`): Glidepath's labels and owner reference instead
     * of the other controller's, nothing else touched (the pods keep running). Says of each whether its pod
     * template is `template` unchanged, judged against a server-side dry run of `template` (see
     * foreign-deployments.ts). Idempotent: a Deployment adopted already is reported again, not patched again.
     */
    async adoptForeignDeployments(input: { owner: Owner; template: PodTemplate }): Promise<ForeignVersion[]> {
      const { owner } = input;
      const labelSelector = `${ForeignLabels.deploymentName}=${owner.name},${ForeignLabels.buildId}`;
      const list = (await custom.listNamespacedCustomObject({ ...deploymentsApi(owner.namespace), labelSelector })) as {
        items: RawDeployment[];
      };
      const foreign = list.items.filter((d) => isForeignVersionOf(d, owner));
      if (!foreign.length) return [];
      let defaulted: unknown;
      let unchecked: string | undefined;
      try {
        const dryRun = (await custom.createNamespacedCustomObject({
          ...deploymentsApi(owner.namespace),
          body: templateCheckDeployment(owner, input.template),
          dryRun: 'All',
        })) as RawDeployment;
        defaulted = dryRun.spec?.template;
      } catch (err) {
        const code = statusCode(err);
        if (code === undefined || code >= 500 || code === 429) throw err;
        // Refused (no right to create Deployments, a webhook, a quota): no template can be judged unchanged.
        unchecked = describeFailure(err, { namespace: owner.namespace });
        logWarning(
          `adopt ${owner.namespace}/${owner.name}: the template could not be checked (${unchecked}); its versions are adopted as changed`,
        );
      }
      const versions: ForeignVersion[] = [];
      for (const d of foreign) {
        const buildId = d.metadata!.labels![ForeignLabels.buildId]!;
        const name = d.metadata!.name!;
        const patch = adoptionPatch(d, owner, buildId);
        if (patch)
          await ignoreNotFound(
            custom.patchNamespacedCustomObject({ ...deploymentsApi(owner.namespace), name, body: patch }, asMergePatch),
          );
        versions.push({
          buildId,
          deploymentName: name,
          matchesTemplate: defaulted !== undefined && sameUserTemplate(d.spec?.template, defaulted),
          ...(unchecked !== undefined ? { templateUnchecked: unchecked } : {}),
          replicas: d.spec?.replicas ?? 1,
          availableReplicas: d.status?.availableReplicas ?? 0,
        });
      }
      return versions;
    },

    /**
     * A new resource's first round: adopts temporal-worker-controller's Deployments of its worker
     * deployment (adoptForeignDeployments); only when there are none, applies the build's Deployment
     * (ensureVersionedDeployment). One activity instead of two in a row: the Deployment someone just applied the
     * resource for comes a workflow task sooner.
     */
    async adoptOrApplyDeployment(
      input: EnsureDeploymentInput,
    ): Promise<{ adopted: ForeignVersion[]; applied?: DeploymentObservation }> {
      const adopted = await activities.adoptForeignDeployments({ owner: input.owner, template: input.template });
      return adopted.length ? { adopted } : { adopted, applied: await ensureVersionedDeployment(input) };
    },
  };
  return activities;
}
