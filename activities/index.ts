/** Every activity RolloutWorkflow calls, created with the clients they adapt. */
import type { Interceptor } from '@grpc/grpc-js';
import type * as k8s from '@kubernetes/client-node';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { createAuthority } from './authority.js';
import { createGuardedKubeActivities } from './guarded-kube.js';
import { createGuardedTemporalActivities } from './guarded-temporal.js';
import { withFailureClassification } from './errors.js';
import type { Timings } from '../api/timings.js';
import { ignoreNotFound } from '../kube/client.js';
import { createKubernetesActivities } from './kubernetes.js';
import { gateInputReader } from '../kube/gate-input.js';
import { createResourceReads } from '../kube/read-resource.js';
import { createTemporalActivities } from './temporal.js';
import { createDrainageActivities } from '../temporal/drainage.js';
import { createAnalysisActivities } from '../temporal/analysis.js';
import { createPinnedActivities } from '../temporal/pinned.js';
import { TemporalConnections, type TemporalTarget } from '../temporal/connections.js';

export type { TemporalRef, TemporalTarget } from '../temporal/connections.js';
export type { GateRequest } from './guarded-temporal.js';
export type { DeploymentRequest } from './guarded-kube.js';
export { refusedFailureType } from './authority.js';
export type { RegistrationCheck, VersionRegistration } from './registration.js';
export type { Routing, RoutingCallOptions, RoutingCallResult } from './routing.js';
export type { ForeignVersion } from './adoption.js';
export type { KubeEvent, Report } from './resource-writes.js';
export type { ResourceRead } from '../kube/read-resource.js';
export type { PinnedAction } from '../temporal/pinned.js';
export { managerIdentityHeldType, permanentFailureType } from './errors.js';

/**
 * The activities (their Temporal connections with `temporalInterceptors`: the controller's pace of calls), each wrapped so that a permanent failure is a non-retryable
 * ApplicationFailure of type `Permanent` and an expected, transient one a one-line error (see ./errors.ts).
 */
export function createActivities(
  kc: k8s.KubeConfig,
  identity: string,
  options: {
    temporalInterceptors?: Interceptor[];
    timings?: Partial<Timings>;
    installation: string;
    /** The controller's own Temporal namespace: a resource whose workers use it too is warned of. */
    ownTemporal?: { hostPort: string; namespace: string };
  },
) {
  const core = kc.makeApiClient(CoreV1Api);
  const readSecret = async (namespace: string, name: string) => {
    const secret = await ignoreNotFound(core.readNamespacedSecret({ name, namespace }));
    if (!secret) return undefined;
    return Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
    );
  };
  const connections = new TemporalConnections(readSecret, { interceptors: options.temporalInterceptors });
  const reads = createResourceReads(kc, { timings: options.timings, installation: options.installation });
  const authority = createAuthority(reads, options.installation, kc.makeApiClient(AppsV1Api), options.ownTemporal);
  const temporal = createTemporalActivities(connections, identity, gateInputReader(core));
  const versionStatus = (t: TemporalTarget, buildId: string) => temporal.versionStatus(t, buildId);
  const adapters = {
    ...temporal,
    ...createDrainageActivities(connections, versionStatus),
    ...createAnalysisActivities(connections),
    ...createPinnedActivities(connections, identity),
  };
  const activities = withFailureClassification({
    ...createGuardedKubeActivities(
      { ...createKubernetesActivities(kc), ...reads },
      authority,
      options.installation,
      versionStatus,
    ),
    ...createGuardedTemporalActivities(adapters, authority, connections, options.installation),
  });
  return { activities, close: () => connections.closeAll() };
}

export type Activities = ReturnType<typeof createActivities>['activities'];
