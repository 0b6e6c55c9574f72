/** Every activity RolloutWorkflow calls, created with the clients they adapt. */
import type * as k8s from '@kubernetes/client-node';
import { CoreV1Api } from '@kubernetes/client-node';
import { ignoreNotFound } from './kubernetes/client.js';
import { createKubernetesActivities } from './kubernetes/activities.js';
import { createTemporalActivities } from './temporal/activities.js';
import { TemporalConnections } from './temporal/connections.js';

export type { TemporalTarget } from './temporal/connections.js';
export type { VersionRegistration, Routing, GateRun } from './temporal/activities.js';

export function createActivities(kc: k8s.KubeConfig, identity: string) {
  const core = kc.makeApiClient(CoreV1Api);
  const connections = new TemporalConnections(async (namespace, name, key) => {
    const secret = await ignoreNotFound(core.readNamespacedSecret({ name, namespace }));
    const data = secret?.data?.[key];
    return data === undefined ? undefined : Buffer.from(data, 'base64');
  });
  return {
    activities: { ...createKubernetesActivities(kc), ...createTemporalActivities(connections, identity) },
    close: () => connections.closeAll(),
  };
}

export type Activities = ReturnType<typeof createActivities>['activities'];
