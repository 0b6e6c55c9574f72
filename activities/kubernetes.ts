/**
 * Kubernetes activities: thin adapters over the API, no decisions. Each is idempotent, so the retry policy
 * of the workflow is the only retry mechanism.
 */
import * as k8s from '@kubernetes/client-node';
import { gateInputReader, type GateInputSource } from '../kube/gate-input.js';
import { createAdoptionActivities } from './adoption.js';
import { createDeploymentActivities } from './deployments.js';
import { createResourceWriteActivities } from './resource-writes.js';

export function createKubernetesActivities(kc: k8s.KubeConfig) {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const readGateInput = gateInputReader(core);
  const deployments = createDeploymentActivities(apps);
  return {
    ...deployments,
    ...createAdoptionActivities(custom, deployments.ensureVersionedDeployment),
    ...createResourceWriteActivities(core, custom),

    /**
     * Reads a gate's JSON input from a ConfigMap or Secret key. RolloutWorkflow no longer calls it (runGate reads
     * the input itself, so a Secret stays out of the history); registered for histories that still schedule it.
     */
    async readGateInput(namespace: string, source: GateInputSource): Promise<unknown> {
      return readGateInput(namespace, source);
    },
  };
}

export type KubernetesActivities = ReturnType<typeof createKubernetesActivities>;
