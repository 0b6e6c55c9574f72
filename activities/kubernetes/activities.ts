/**
 * Kubernetes activities: thin adapters over the API, no decisions. Each is idempotent, so the retry policy
 * of the workflow is the only retry mechanism.
 */
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, version } from '../../api/common.js';
import { versionedDeploymentName } from '../../api/names.js';
import type { PodTemplate, TemporalWorkerDeploymentStatus } from '../../api/temporal-worker-deployment.js';
import type { DeploymentObservation, Desired, Owner } from '../../workflows/state.js';
import { asApply, asMergePatch, ignoreNotFound, statusCode } from './client.js';
import { Labels, managerName, renderVersionedDeployment } from './versioned-deployment.js';

export const plural = 'temporalworkerdeployments';
/** Guards deletion until RolloutWorkflow has cleaned up Temporal and Kubernetes. */
export const finalizer = 'glidepath.dev/cleanup';

/** What the watcher and the workflow read off a Deployment. */
export function observeDeployment(d: k8s.V1Deployment): DeploymentObservation {
  return {
    buildId: d.metadata?.labels?.[Labels.buildId] ?? '',
    name: d.metadata?.name ?? '',
    exists: !d.metadata?.deletionTimestamp,
    generation: d.metadata?.generation,
    observedGeneration: d.status?.observedGeneration,
    replicas: d.spec?.replicas,
    availableReplicas: d.status?.availableReplicas ?? 0,
    progressDeadlineExceeded: d.status?.conditions?.some((c) => c.type === 'Progressing' && c.reason === 'ProgressDeadlineExceeded'),
  };
}

export interface EnsureDeploymentInput {
  owner: Owner;
  desired: Desired;
  buildId: string;
  /** The build's own pod template (the desired spec's is another build's unless this is the desired build). */
  template: PodTemplate;
  replicas?: number;
}

export interface KubeEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export function createKubernetesActivities(kc: k8s.KubeConfig) {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const selectorOf = (owner: Owner) => `${Labels.workerDeployment}=${owner.name},${Labels.managedBy}=${managerName}`;

  async function apply(input: EnsureDeploymentInput): Promise<k8s.V1Deployment> {
    const body = renderVersionedDeployment({
      owner: input.owner,
      spec: { ...input.desired.spec, template: input.template },
      connection: input.desired.connection,
      buildId: input.buildId,
      replicas: input.replicas,
    });
    return apps.patchNamespacedDeployment(
      { name: body.metadata!.name!, namespace: input.owner.namespace, body, fieldManager: managerName, force: true },
      asApply,
    );
  }

  return {
    /** Server-side applies the versioned Deployment of a build; returns what it looks like now. */
    async ensureVersionedDeployment(input: EnsureDeploymentInput): Promise<DeploymentObservation> {
      return observeDeployment(await apply(input));
    },

    /** Recreates live Deployments that are missing (deleted by hand); returns the names recreated. */
    async ensureDeploymentsExist(input: { owner: Owner; desired: Desired; versions: { buildId: string; replicas: number; template: PodTemplate }[] }): Promise<string[]> {
      const recreated: string[] = [];
      for (const v of input.versions) {
        const name = versionedDeploymentName(input.owner.name, v.buildId);
        const existing = await ignoreNotFound(apps.readNamespacedDeployment({ name, namespace: input.owner.namespace }));
        if (existing && !existing.metadata?.deletionTimestamp) continue;
        await apply({ owner: input.owner, desired: input.desired, buildId: v.buildId, template: v.template, replicas: v.replicas });
        recreated.push(name);
      }
      return recreated;
    },

    async scaleDeployment(owner: Owner, buildId: string, replicas: number): Promise<void> {
      const name = versionedDeploymentName(owner.name, buildId);
      await ignoreNotFound(apps.patchNamespacedDeploymentScale({ name, namespace: owner.namespace, body: { spec: { replicas } } }, asMergePatch));
    },

    async deleteDeployment(owner: Owner, buildId: string): Promise<void> {
      const name = versionedDeploymentName(owner.name, buildId);
      await ignoreNotFound(apps.deleteNamespacedDeployment({ name, namespace: owner.namespace }));
    },

    async scaleOwnedDeployments(owner: Owner, replicas: number): Promise<void> {
      const list = await apps.listNamespacedDeployment({ namespace: owner.namespace, labelSelector: selectorOf(owner) });
      for (const d of list.items) {
        await ignoreNotFound(apps.patchNamespacedDeploymentScale({ name: d.metadata!.name!, namespace: owner.namespace, body: { spec: { replicas } } }, asMergePatch));
      }
    },

    /** Deletes the resource's Deployments of builds not in `liveBuildIds` that are scaled to 0; returns their names. */
    async deleteStrayDeployments(owner: Owner, liveBuildIds: string[]): Promise<string[]> {
      const list = await apps.listNamespacedDeployment({ namespace: owner.namespace, labelSelector: selectorOf(owner) });
      const strays = list.items.filter((d) => !liveBuildIds.includes(d.metadata?.labels?.[Labels.buildId] ?? '') && (d.spec?.replicas ?? 0) === 0);
      for (const d of strays) await ignoreNotFound(apps.deleteNamespacedDeployment({ name: d.metadata!.name!, namespace: owner.namespace }));
      return strays.map((d) => d.metadata!.name!);
    },

    /** Deletes every Deployment of the resource (no garbage collector is assumed). */
    async deleteOwnedDeployments(owner: Owner): Promise<void> {
      const list = await apps.listNamespacedDeployment({ namespace: owner.namespace, labelSelector: selectorOf(owner) });
      for (const d of list.items) await ignoreNotFound(apps.deleteNamespacedDeployment({ name: d.metadata!.name!, namespace: owner.namespace }));
    },

    /** Writes the whole status with server-side apply, so fields no longer set are removed. */
    async writeStatus(owner: Owner, status: TemporalWorkerDeploymentStatus): Promise<void> {
      const body = { apiVersion, kind: 'TemporalWorkerDeployment', metadata: { name: owner.name, namespace: owner.namespace }, status };
      try {
        await custom.patchNamespacedCustomObjectStatus(
          { group, version, namespace: owner.namespace, plural, name: owner.name, body, fieldManager: managerName, force: true },
          asApply,
        );
      } catch (err) {
        if (statusCode(err) !== 404) throw err; // the resource is gone: nothing to report on
      }
    },

    /** Records a core/v1 Event on the resource (what `kubectl describe twd` shows). */
    async recordEvent(owner: Owner, event: KubeEvent): Promise<void> {
      const at = new Date();
      await ignoreNotFound(
        core.createNamespacedEvent({
          namespace: owner.namespace,
          body: {
            metadata: { generateName: `${owner.name}.`, namespace: owner.namespace },
            involvedObject: { apiVersion, kind: 'TemporalWorkerDeployment', name: owner.name, namespace: owner.namespace, uid: owner.uid },
            type: event.type,
            reason: event.reason,
            message: event.message,
            source: { component: managerName },
            reportingComponent: managerName,
            firstTimestamp: at,
            lastTimestamp: at,
            count: 1,
          },
        }),
      );
    },

    /** Reads a gate's JSON input from a ConfigMap or Secret key. */
    async readGateInput(namespace: string, source: { configMapKeyRef?: { name: string; key: string }; secretKeyRef?: { name: string; key: string } }): Promise<unknown> {
      let text: string | undefined;
      if (source.configMapKeyRef) {
        const { name, key } = source.configMapKeyRef;
        text = (await core.readNamespacedConfigMap({ name, namespace })).data?.[key];
        if (text === undefined) throw new Error(`ConfigMap ${namespace}/${name} has no key "${key}"`);
      } else if (source.secretKeyRef) {
        const { name, key } = source.secretKeyRef;
        const data = (await core.readNamespacedSecret({ name, namespace })).data?.[key];
        if (data === undefined) throw new Error(`Secret ${namespace}/${name} has no key "${key}"`);
        text = Buffer.from(data, 'base64').toString('utf8');
      }
      try {
        return JSON.parse(text ?? 'null');
      } catch {
        throw new Error(`gate input in ${source.configMapKeyRef ? 'ConfigMap' : 'Secret'} is not JSON`);
      }
    },

    /** Drops our finalizer, so Kubernetes can delete the resource. */
    async removeFinalizer(owner: Owner): Promise<void> {
      const current = (await ignoreNotFound(
        custom.getNamespacedCustomObject({ group, version, namespace: owner.namespace, plural, name: owner.name }),
      )) as k8s.KubernetesObject | undefined;
      if (!current?.metadata?.finalizers?.includes(finalizer)) return;
      const finalizers = current.metadata.finalizers.filter((f) => f !== finalizer);
      await ignoreNotFound(
        custom.patchNamespacedCustomObject(
          { group, version, namespace: owner.namespace, plural, name: owner.name, body: { metadata: { finalizers, resourceVersion: current.metadata.resourceVersion } } },
          asMergePatch,
        ),
      );
    },
  };
}

export type KubernetesActivities = ReturnType<typeof createKubernetesActivities>;
