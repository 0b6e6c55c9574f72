/**
 * The versioned Deployment of one build, rendered purely from the resource, its connection and the build ID.
 * Applied with server-side apply, so rendering the same inputs twice changes nothing.
 */
import type * as k8s from '@kubernetes/client-node';
import { canonicalJson } from '../api/build-id.js';
import { apiVersion } from '../api/common.js';
import type { ResourceKind } from '../api/kinds.js';
import { versionedDeploymentName, workerDeploymentName } from '../api/names.js';
import type { TemporalConnectionSpec } from '../api/temporal-connection.js';
import type { NormalizedSpec } from '../api/worker-deployment.js';
import type { DeploymentObservation } from '../api/resource.js';

/** Labels Glidepath puts on what it owns; the pod simulator and the watcher select on them. */
export const Labels = {
  managedBy: 'app.kubernetes.io/managed-by',
  workerDeployment: 'glidepath.dev/worker-deployment',
  buildId: 'glidepath.dev/build-id',
  /** The UID of the owning resource: a new resource under an old name does not adopt the old one's Deployments. */
  ownerUid: 'glidepath.dev/owner-uid',
} as const;
export const managerName = 'glidepath';
/**
 * The build's pod template as the spec declared it (canonical JSON), kept on its own Deployment: once the spec
 * declares another build, the cluster still says what this one runs, and nothing else is believed for it.
 */
export const podTemplateAnnotation = 'glidepath.dev/pod-template';

/** Where the mTLS Secret is mounted in every container. */
export const tlsMountPath = '/etc/temporal/tls';
const tlsVolume = 'temporal-tls';
/** Where the CA of `tls.caCertSecretRef` is mounted (its `ca.crt` only). */
export const caMountPath = '/etc/temporal/tls-ca';
const caVolume = 'temporal-tls-ca';

/** The identity of the owning resource, for the owner reference and names. */
export interface Owner {
  namespace: string;
  name: string;
  uid: string;
  /** Its kind (absent: a TemporalWorkerDeployment, as every Owner from before WorkerDeployments). */
  kind?: ResourceKind;
}

export interface VersionedDeploymentInput {
  owner: Owner;
  spec: Pick<
    NormalizedSpec,
    | 'template'
    | 'replicas'
    | 'minReadySeconds'
    | 'progressDeadlineSeconds'
    | 'workerOptions'
    | 'revisionHistoryLimit'
    | 'strategy'
  >;
  connection: TemporalConnectionSpec;
  buildId: string;
  /** Replicas to ask for (defaults to `spec.replicas`; sunset scales to 0). */
  replicas?: number;
}

/** The owner reference every Deployment of a resource carries: its controller, of the resource's own kind. */
export function ownerReference(owner: Owner): k8s.V1OwnerReference {
  return {
    apiVersion,
    kind: owner.kind ?? 'TemporalWorkerDeployment',
    name: owner.name,
    uid: owner.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** Whether a Deployment belongs to this incarnation of the resource: its owner-uid label, and nothing else, says so. */
export function isOwnedBy(d: k8s.V1Deployment, owner: Owner): boolean {
  return d.metadata?.labels?.[Labels.ownerUid] === owner.uid;
}

/** The env every worker container gets: where Temporal is and which version it is. */
export function workerEnv(input: VersionedDeploymentInput): k8s.V1EnvVar[] {
  const { owner, spec, connection, buildId } = input;
  const env: k8s.V1EnvVar[] = [
    { name: 'TEMPORAL_ADDRESS', value: connection.hostPort },
    { name: 'TEMPORAL_NAMESPACE', value: spec.workerOptions.temporalNamespace },
    { name: 'TEMPORAL_DEPLOYMENT_NAME', value: workerDeploymentName(owner.namespace, owner.name) },
    { name: 'TEMPORAL_WORKER_BUILD_ID', value: buildId },
  ];
  if (connection.mutualTLSSecretRef || connection.apiKeySecretRef || connection.tls?.caCertSecretRef)
    env.push({ name: 'TEMPORAL_TLS', value: 'true' });
  if (connection.tls?.serverName) env.push({ name: 'TEMPORAL_TLS_SERVER_NAME', value: connection.tls.serverName });
  // Temporal's envconfig name: the SDKs' env-based config trusts this CA for the server's certificate.
  if (connection.tls?.caCertSecretRef)
    env.push({ name: 'TEMPORAL_TLS_SERVER_CA_CERT_PATH', value: `${caMountPath}/ca.crt` });
  if (connection.mutualTLSSecretRef) {
    env.push(
      { name: 'TEMPORAL_TLS_CLIENT_CERT_PATH', value: `${tlsMountPath}/tls.crt` },
      { name: 'TEMPORAL_TLS_CLIENT_KEY_PATH', value: `${tlsMountPath}/tls.key` },
    );
  }
  if (connection.apiKeySecretRef) {
    const { name, key } = connection.apiKeySecretRef;
    env.push({ name: 'TEMPORAL_API_KEY', valueFrom: { secretKeyRef: { name, key } } });
  }
  return env;
}

/**
 * Renders the versioned Deployment: selector and labels per build, the owner's UID as a label and an owner
 * reference, injected env and TLS volume. The selector leaves the UID out: it is immutable.
 */
export function renderVersionedDeployment(input: VersionedDeploymentInput): k8s.V1Deployment {
  const { owner, spec, connection, buildId } = input;
  const selector = { [Labels.workerDeployment]: owner.name, [Labels.buildId]: buildId };
  const injected = workerEnv(input);
  const injectedNames = new Set(injected.map((e) => e.name));
  const template = spec.template as unknown as k8s.V1PodTemplateSpec;
  const podSpec = template.spec!;
  const ca = connection.tls?.caCertSecretRef;
  const withTls = (mounts?: k8s.V1VolumeMount[]) => {
    const added = [
      ...(connection.mutualTLSSecretRef ? [{ name: tlsVolume, mountPath: tlsMountPath, readOnly: true }] : []),
      ...(ca ? [{ name: caVolume, mountPath: caMountPath, readOnly: true }] : []),
    ];
    return added.length ? [...(mounts ?? []), ...added] : mounts;
  };
  const volumes = [
    ...(connection.mutualTLSSecretRef
      ? [{ name: tlsVolume, secret: { secretName: connection.mutualTLSSecretRef.name } }]
      : []),
    ...(ca ? [{ name: caVolume, secret: { secretName: ca.name, items: [{ key: 'ca.crt', path: 'ca.crt' }] } }] : []),
  ];

  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: versionedDeploymentName(owner.name, buildId),
      namespace: owner.namespace,
      labels: { ...selector, [Labels.managedBy]: managerName, [Labels.ownerUid]: owner.uid },
      annotations: { [podTemplateAnnotation]: canonicalJson(spec.template) },
      ownerReferences: [ownerReference(owner)],
    },
    spec: {
      replicas: input.replicas ?? spec.replicas,
      minReadySeconds: spec.minReadySeconds,
      progressDeadlineSeconds: spec.progressDeadlineSeconds,
      ...(spec.revisionHistoryLimit !== undefined ? { revisionHistoryLimit: spec.revisionHistoryLimit } : {}),
      ...(spec.strategy !== undefined ? { strategy: spec.strategy as k8s.V1DeploymentStrategy } : {}),
      selector: { matchLabels: selector },
      template: {
        metadata: { ...template.metadata, labels: { ...template.metadata?.labels, ...selector } },
        spec: {
          ...podSpec,
          containers: podSpec.containers.map((c) => ({
            ...c,
            // Ours win: a worker must register the version Glidepath routes to.
            env: [...(c.env ?? []).filter((e) => !injectedNames.has(e.name)), ...injected],
            volumeMounts: withTls(c.volumeMounts),
          })),
          volumes: volumes.length ? [...(podSpec.volumes ?? []), ...volumes] : podSpec.volumes,
        },
      },
    },
  };
}

/** What the watcher and the workflow read off a Deployment (the watcher's cache keeps only this: starter/trimmed-cache.ts). */
export function observeDeployment(d: k8s.V1Deployment): DeploymentObservation {
  return {
    buildId: d.metadata?.labels?.[Labels.buildId] ?? '',
    name: d.metadata?.name ?? '',
    exists: !d.metadata?.deletionTimestamp,
    generation: d.metadata?.generation,
    observedGeneration: d.status?.observedGeneration,
    replicas: d.spec?.replicas,
    availableReplicas: d.status?.availableReplicas ?? 0,
    progressDeadlineExceeded: d.status?.conditions?.some(
      (c) => c.type === 'Progressing' && c.reason === 'ProgressDeadlineExceeded',
    ),
    resourceVersion: d.metadata?.resourceVersion,
    ownerUid: d.metadata?.labels?.[Labels.ownerUid],
  };
}

/**
 * What a rollout's waits read a Deployment for: there, whose, available with pods (at which generation and replicas),
 * past its progress deadline.
 */
export interface Readiness {
  exists: boolean;
  ownerUid: string;
  available: boolean;
  generation: number;
  replicas: number;
  progressDeadlineExceeded: boolean;
}

export function readinessOf(obs: DeploymentObservation): Readiness {
  const replicas = obs.replicas ?? 0;
  return {
    exists: obs.exists,
    ownerUid: obs.ownerUid ?? '',
    available:
      obs.exists &&
      replicas > 0 &&
      (obs.observedGeneration ?? 0) >= (obs.generation ?? 0) &&
      (obs.availableReplicas ?? 0) >= replicas,
    generation: obs.observedGeneration ?? 0,
    replicas,
    progressDeadlineExceeded: obs.progressDeadlineExceeded === true,
  };
}

/**
 * Whether a Deployment's change wakes its rollout: what a wait is for happened (it became available, or available at a
 * new generation or with more replicas: the changes between may have been coalesced away; it missed its
 * progress deadline), it is gone while it asked for pods, or it is another incarnation's. Status churn, a new generation
 * on its way, a Deployment losing pods (a scale-down, a crash) and one scaled to 0 going (a sunset's last step) wake
 * nothing: no wait is for them, and the workflow's reads (the resync's among them) see them.
 */
export function wakesRollout(before: Readiness | undefined, after: Readiness): boolean {
  if (!after.exists) return before === undefined || (before.exists && before.replicas > 0);
  if (!before?.exists) return after.available || after.progressDeadlineExceeded;
  return (
    (after.available &&
      (!before.available ||
        after.replicas > before.replicas ||
        (after.generation !== before.generation && after.replicas === before.replicas))) ||
    (after.progressDeadlineExceeded && !before.progressDeadlineExceeded) ||
    after.ownerUid !== before.ownerUid
  );
}
