/**
 * Deterministic, readable identifiers. Each doubles as an idempotency key: the same resource always maps to
 * the same workflow, worker deployment and Deployment names.
 */

const maxLabel = 63;

/** The Temporal worker deployment of a resource: `<k8s-namespace>/<name>`, as temporal-worker-controller names it. */
export function workerDeploymentName(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/**
 * The RolloutWorkflow ID of a resource under one installation (see worker/installation.ts): two clusters, or two
 * installs in one, that share a Temporal namespace never share a workflow.
 */
export function rolloutWorkflowId(installation: string, namespace: string, name: string): string {
  return `glidepath/${installation}/${namespace}/${name}`;
}

/**
 * The Temporal namespace the controller's own workflows run in unless told otherwise: one of their own, apart from
 * the workers' (write access to it is control of every rollout).
 */
export const defaultControllerNamespace = 'glidepath';

/** An installation's task queue: its activities are never run by another installation's controller. */
export const installationTaskQueue = (installation: string) => `glidepath-${installation}`;

/** An installation's manager identity on the Temporal worker deployments it routes. */
export const installationManagerIdentity = (installation: string) => `glidepath/${installation}`;

/**
 * The annotation that says which installation rolls out a resource: set by the first to see it, or by its author
 * to pick one (as `ingressClassName` picks an ingress controller). Any other installation leaves the resource alone.
 */
export const installationAnnotation = 'glidepath.dev/installation';

/**
 * The connection a resource last rolled out with (canonical JSON of its spec), written by the watcher from what the
 * apiserver had: what its deletion reaches Temporal with when the connection went first (a namespace's deletion).
 */
export const connectionAnnotation = 'glidepath.dev/connection';

/** What an installation ID may be: a DNS label of at most 32 characters (it goes into names and IDs). */
export const installationIdPattern = /^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$/;

/** FNV-1a (32 bit) as 8 hex digits: a short, stable suffix that keeps truncated names distinct. */
export function shortHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}

/** Lower-cases and replaces what a DNS-1123 label may not hold, trimming "-" at both ends. */
function dnsSafe(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/-+/g, '-')
    .replace(/^-|-$/g, '');
}

/**
 * The versioned Deployment of a build: `<name>-<buildId>-<hash>`, a DNS-1123 label of at most 63 characters. The
 * hash is of the name and the build ID apart, so no two resources' builds share a name (`web` + `api-v1` and
 * `web-api` + `v1` read alike), nor do `v1.2` and `v1_2` once made DNS-safe; too long, the readable part is cut.
 * @example versionedDeploymentName('orders', 'v1-ab12cd34ef56') === 'orders-v1-ab12cd34ef56-' + shortHash('orders\u0000v1-ab12cd34ef56')
 */
export function versionedDeploymentName(name: string, buildId: string): string {
  const full = dnsSafe(`${name}-${buildId}`);
  const suffix = shortHash(`${name}\u0000${buildId}`);
  if (full.length + suffix.length + 1 <= maxLabel) return `${full}-${suffix}`;
  return `${full.slice(0, maxLabel - suffix.length - 1).replace(/-+$/, '')}-${suffix}`;
}

/**
 * Makes text (an image tag, for a computed build ID) safe as a label value and a name part: letters, digits,
 * "-", "_", ".", starting and ending alphanumeric, at most 63 characters. A custom build ID is never passed
 * through it: one that is not safe as it is gets refused (see `buildIdPattern`).
 */
export function sanitizeBuildId(text: string): string {
  const cleaned = text.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '');
  if (!cleaned) throw new Error(`build ID "${text}" has no letters or digits`);
  if (cleaned.length <= maxLabel) return cleaned;
  const suffix = shortHash(text);
  return `${cleaned.slice(0, maxLabel - suffix.length - 1).replace(/[^A-Za-z0-9]+$/, '')}-${suffix}`;
}

/** Guards deletion until RolloutWorkflow has cleaned up Temporal and Kubernetes. */
export const finalizer = 'glidepath.dev/cleanup';

/** The prefix of a resource's gate runs' workflow IDs (of one build's: `buildId`; of one gate's: `label` too). */
export const gateWorkflowIdPrefix = (
  owner: { namespace: string; name: string; uid: string },
  buildId?: string,
  label?: string,
) =>
  `glidepath-gate/${owner.namespace}/${owner.name}/${owner.uid}/${buildId === undefined ? '' : `${buildId}/`}${label === undefined ? '' : `${label}/`}`;

/** What lets a target past its rollout gate when no run passed: a person promoted it (activities/gate-evidence.ts). */
export const promotedPastGate = 'promoted';
