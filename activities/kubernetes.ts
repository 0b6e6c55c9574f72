/**
 * Kubernetes adapters: thin, no decisions, trusting their arguments (the watcher calls some directly, on what it
 * read). The activities wrap them with the apiserver's authority (./guarded-kube.ts). Each is idempotent, so the
 * retry policy of the workflow is the only retry mechanism.
 */
import * as k8s from '@kubernetes/client-node';
import { createAdoptionActivities } from './adoption.js';
import { createDeploymentActivities } from './deployments.js';
import { createResourceWriteActivities } from './resource-writes.js';

export function createKubernetesActivities(kc: k8s.KubeConfig) {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const deployments = createDeploymentActivities(apps);
  return {
    ...deployments,
    ...createAdoptionActivities(custom, deployments.ensureVersionedDeployment),
    ...createResourceWriteActivities(core, custom),
  };
}

export type KubernetesActivities = ReturnType<typeof createKubernetesActivities>;
