/**
 * Where a rollout of the tests, the benchmarks and the e2e tier lives: a namespace, and the TemporalConnection its
 * resources name (`local`, as in examples/).
 */
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../../api/common.js';

/** Creates the TemporalConnection `name` to `hostPort` in `namespace`; returns it as the apiserver created it. */
export async function createTemporalConnection(
  custom: k8s.CustomObjectsApi,
  namespace: string,
  hostPort: string,
  name = 'local',
): Promise<k8s.KubernetesObject> {
  return (await custom.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'temporalconnections',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'TemporalConnection',
      metadata: { name },
      spec: { hostPort },
    },
  })) as k8s.KubernetesObject;
}

/** Creates `namespace` with the TemporalConnection `local` to `hostPort`. */
export async function createRolloutNamespace(kc: k8s.KubeConfig, namespace: string, hostPort: string): Promise<void> {
  await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  await createTemporalConnection(kc.makeApiClient(k8s.CustomObjectsApi), namespace, hostPort);
}
