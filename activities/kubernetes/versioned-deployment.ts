/**
 * The versioned Deployment of one build, rendered purely from the resource, its connection and the build ID.
 * Applied with server-side apply, so rendering the same inputs twice changes nothing.
 */
import type * as k8s from '@kubernetes/client-node';
import { apiVersion } from '../../api/common.js';
import { versionedDeploymentName, workerDeploymentName } from '../../api/names.js';
import type { TemporalConnectionSpec } from '../../api/temporal-connection.js';
import type { TemporalWorkerDeploymentSpec } from '../../api/temporal-worker-deployment.js';

/** Labels Glidepath puts on what it owns; the pod simulator and the watcher select on them. */
export const Labels = {
  managedBy: 'app.kubernetes.io/managed-by',
  workerDeployment: 'glidepath.dev/worker-deployment',
  buildId: 'glidepath.dev/build-id',
  /** The UID of the owning resource: a new resource under an old name does not adopt the old one's Deployments. */
  ownerUid: 'glidepath.dev/owner-uid',
} as const;
export const managerName = 'glidepath';

/** Where the mTLS Secret is mounted in every container. */
export const tlsMountPath = '/etc/temporal/tls';
const tlsVolume = 'temporal-tls';

/** The identity of the owning resource, for the owner reference and names. */
export interface Owner {
  namespace: string;
  name: string;
  uid: string;
}

export interface VersionedDeploymentInput {
  owner: Owner;
  spec: Pick<TemporalWorkerDeploymentSpec, 'template' | 'replicas' | 'minReadySeconds' | 'progressDeadlineSeconds' | 'workerOptions'>;
  connection: TemporalConnectionSpec;
  buildId: string;
  /** Replicas to ask for (defaults to `spec.replicas`; sunset scales to 0). */
  replicas?: number;
}

/**
 * Whether a Deployment belongs to this incarnation of the resource: its owner-uid label says so, or (made by
 * a Glidepath from before that label) it has no owner reference to another object.
 */
export function isOwnedBy(d: k8s.V1Deployment, owner: Owner): boolean {
  const uid = d.metadata?.labels?.[Labels.ownerUid];
  if (uid !== undefined) return uid === owner.uid;
  return (d.metadata?.ownerReferences ?? []).every((ref) => ref.uid === owner.uid);
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
  if (connection.mutualTLSSecretRef || connection.apiKeySecretRef) env.push({ name: 'TEMPORAL_TLS', value: 'true' });
  if (connection.tls?.serverName) env.push({ name: 'TEMPORAL_TLS_SERVER_NAME', value: connection.tls.serverName });
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
  const withTls = (mounts?: k8s.V1VolumeMount[]) =>
    connection.mutualTLSSecretRef ? [...(mounts ?? []), { name: tlsVolume, mountPath: tlsMountPath, readOnly: true }] : mounts;

  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: versionedDeploymentName(owner.name, buildId),
      namespace: owner.namespace,
      labels: { ...selector, [Labels.managedBy]: managerName, [Labels.ownerUid]: owner.uid },
      ownerReferences: [
        { apiVersion, kind: 'TemporalWorkerDeployment', name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: {
      replicas: input.replicas ?? spec.replicas,
      minReadySeconds: spec.minReadySeconds,
      progressDeadlineSeconds: spec.progressDeadlineSeconds,
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
          volumes: connection.mutualTLSSecretRef
            ? [...(podSpec.volumes ?? []), { name: tlsVolume, secret: { secretName: connection.mutualTLSSecretRef.name } }]
            : podSpec.volumes,
        },
      },
    },
  };
}
