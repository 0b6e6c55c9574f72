/**
 * temporal-worker-controller's versioned Deployments, as Glidepath adopts them: how to recognise one of a worker
 * deployment, whether its pod template is the user's template unchanged, and the patch that makes it Glidepath's.
 * Pure functions over raw Deployment JSON (as kube-apiserver sends it: no field dropped by a typed client).
 *
 * "Unchanged" is judged on what the user wrote: the live template carries kube-apiserver's defaults and what the
 * other controller added (its env, its TLS volume, its labels and annotations). The activity gets the user's
 * template with the same defaults from a server-side dry run; both sides then lose what a controller injects and
 * empty values, and are compared as canonical JSON. An unknown difference counts as a change: a needless rollout
 * is the price of doubt, never a version that runs another template than the spec says.
 */
import { canonicalJson } from '../api/build-id.js';
import { workerDeploymentName } from '../api/names.js';
import { Labels, managerName, ownerReference, type Owner } from './versioned-deployment.js';

/** The labels temporal-worker-controller puts on (and selects) its versioned Deployments. */
export const ForeignLabels = {
  buildId: 'temporal.io/build-id',
  deploymentName: 'temporal.io/deployment-name',
} as const;

/** The API group of the other controller's kinds: its owner references on the Deployments it made. */
export const foreignGroup = 'temporal.io';

/**
 * Env a controller injects into worker containers (the other controller's, of every version, and Glidepath's):
 * never part of what the user wrote, and set anew by whoever renders the pods.
 */
export const injectedEnvNames: ReadonlySet<string> = new Set([
  'TEMPORAL_ADDRESS',
  'TEMPORAL_HOST_PORT',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_DEPLOYMENT_NAME',
  'TEMPORAL_WORKER_BUILD_ID',
  'WORKER_BUILD_ID',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_CERT_PATH',
  'TEMPORAL_TLS_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_API_KEY',
]);
/** Volumes (and their mounts) a controller adds for TLS. */
const injectedVolumes: ReadonlySet<string> = new Set(['temporal-tls', 'temporal-tls-ca']);
/** Pod labels and annotations a controller (or `kubectl rollout restart`) adds; the marker of our dry run. */
export const templateCheckLabel = 'glidepath.dev/template-check';
const injectedLabels: ReadonlySet<string> = new Set([
  ForeignLabels.buildId,
  ForeignLabels.deploymentName,
  Labels.buildId,
  Labels.workerDeployment,
  templateCheckLabel,
]);
const injectedAnnotations: ReadonlySet<string> = new Set([
  'temporal.io/connection-spec-hash',
  'temporal.io/pod-template-spec-hash',
  'kubectl.kubernetes.io/restartedAt',
]);

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => typeof x === 'object' && x !== null && !Array.isArray(x);
const asList = (x: unknown): Json[] => (Array.isArray(x) ? x.filter(isObject) : []);

/** A Deployment as kube-apiserver sends it, as much of it as adoption reads. */
export interface RawDeployment {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    ownerReferences?: { apiVersion?: string; kind?: string; uid?: string }[];
    deletionTimestamp?: string;
  };
  spec?: { replicas?: number; template?: Json };
  status?: { availableReplicas?: number };
}

/** The worker deployment a Deployment's pods poll as (`TEMPORAL_DEPLOYMENT_NAME` of its first container that has it). */
function pollsAs(d: RawDeployment): string | undefined {
  const podSpec = d.spec?.template?.spec;
  for (const c of asList(isObject(podSpec) ? podSpec.containers : undefined)) {
    const env = asList(c.env).find((e) => e.name === 'TEMPORAL_DEPLOYMENT_NAME');
    if (typeof env?.value === 'string') return env.value;
  }
  return undefined;
}

/**
 * Whether a Deployment is a version of this resource's worker deployment made by temporal-worker-controller (or
 * adopted from it by this incarnation): its labels name the resource and a build, its pods poll as
 * `<namespace>/<name>`, and no other Glidepath resource owns it.
 */
export function isForeignVersionOf(d: RawDeployment, owner: Owner): boolean {
  const labels = d.metadata?.labels ?? {};
  if (labels[ForeignLabels.deploymentName] !== owner.name || !labels[ForeignLabels.buildId]) return false;
  if (d.metadata?.deletionTimestamp) return false;
  const ownerUid = labels[Labels.ownerUid];
  if (ownerUid !== undefined && ownerUid !== owner.uid) return false;
  return pollsAs(d) === workerDeploymentName(owner.namespace, owner.name);
}

/** Drops empty strings, lists and objects, and nulls (kube-apiserver and a user write "nothing" in several ways). */
function pruned(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(pruned).filter((v) => v !== undefined);
    return items.length ? items : undefined;
  }
  if (isObject(value)) {
    const entries = Object.entries(value)
      .map(([k, v]) => [k, pruned(v)] as const)
      .filter(([, v]) => v !== undefined);
    return entries.length ? Object.fromEntries(entries) : undefined;
  }
  return value === null || value === '' ? undefined : value;
}

const without = (record: unknown, drop: ReadonlySet<string>) =>
  isObject(record) ? Object.fromEntries(Object.entries(record).filter(([k]) => !drop.has(k))) : record;

/**
 * What the user wrote of a pod template as kube-apiserver stores it: without a controller's env, TLS volumes and
 * mounts, labels and annotations, the restart annotation, and empty values. Containers and init containers alike.
 */
export function userPartOfTemplate(template: unknown): unknown {
  if (!isObject(template)) return pruned(template);
  const metadata = isObject(template.metadata) ? template.metadata : {};
  const spec = isObject(template.spec) ? template.spec : {};
  const container = (c: Json): Json => ({
    ...c,
    env: asList(c.env).filter((e) => !injectedEnvNames.has(String(e.name))),
    volumeMounts: asList(c.volumeMounts).filter((m) => !injectedVolumes.has(String(m.name))),
  });
  return pruned({
    ...template,
    metadata: {
      ...(without(metadata, new Set(['creationTimestamp'])) as Json),
      labels: without(metadata.labels, injectedLabels),
      annotations: without(metadata.annotations, injectedAnnotations),
    },
    spec: {
      ...spec,
      containers: asList(spec.containers).map(container),
      initContainers: asList(spec.initContainers).map(container),
      volumes: asList(spec.volumes).filter((v) => !injectedVolumes.has(String(v.name))),
    },
  });
}

/**
 * Whether the live template of a Deployment is the user's template unchanged: `defaulted` is the user's template
 * as kube-apiserver would store it (a server-side dry run of a Deployment made from it).
 * @example sameUserTemplate(liveDeployment.spec.template, dryRun.spec.template)
 */
export function sameUserTemplate(live: unknown, defaulted: unknown): boolean {
  return canonicalJson(userPartOfTemplate(live)) === canonicalJson(userPartOfTemplate(defaulted));
}

/**
 * The dry-run Deployment whose template kube-apiserver defaults: the user's template, a throwaway selector. Its
 * replicas are 0 and it is never stored.
 */
export function templateCheckDeployment(owner: Owner, template: unknown): Json {
  const t = isObject(template) ? template : {};
  const metadata = isObject(t.metadata) ? t.metadata : {};
  const labels = { ...(isObject(metadata.labels) ? metadata.labels : {}), [templateCheckLabel]: 'true' };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { generateName: `${owner.name.slice(0, 40)}-template-check-`, namespace: owner.namespace },
    spec: {
      replicas: 0,
      selector: { matchLabels: { [templateCheckLabel]: 'true' } },
      template: { ...t, metadata: { ...metadata, labels } },
    },
  };
}

/**
 * The merge patch that makes a foreign Deployment this resource's: Glidepath's labels beside the other
 * controller's (its selector stays: it is immutable), and our owner reference instead of the other controller's, so
 * deleting the other controller's object no longer garbage-collects running workers. Undefined when it is ours already.
 */
export function adoptionPatch(d: RawDeployment, owner: Owner, buildId: string): Json | undefined {
  const labels = {
    [Labels.managedBy]: managerName,
    [Labels.workerDeployment]: owner.name,
    [Labels.buildId]: buildId,
    [Labels.ownerUid]: owner.uid,
  };
  const ours = ownerReference(owner);
  const refs = d.metadata?.ownerReferences ?? [];
  const kept = refs.filter((r) => !(r.apiVersion ?? '').startsWith(`${foreignGroup}/`) && r.uid !== owner.uid);
  const labelled = Object.entries(labels).every(([k, v]) => d.metadata?.labels?.[k] === v);
  if (labelled && kept.length === refs.length - 1 && refs.some((r) => r.uid === owner.uid)) return undefined;
  return { metadata: { labels, ownerReferences: [...kept, ours] } };
}
