/**
 * The installation ID: what keeps two Glidepath installations apart when they share a Temporal namespace (two
 * teams' namespaced installs, two clusters). It goes into the task queue, the manager identity, the workflow IDs
 * and the claim on each resource (the `glidepath.dev/installation` annotation, see starter/watcher.ts).
 *
 * Unless a flag gives it, it is the `data.id` of the ConfigMap `glidepath-installation` in the controller's
 * namespace. The first controller to start creates that ConfigMap (the manifests do not ship it, so applying,
 * deleting or pruning them never touches it) and writes the first 8 hex digits of its uid into `data.id`, fenced on
 * the resourceVersion it read: replicas starting together agree, and a ConfigMap of older manifests, without
 * `data.id`, keeps the ID its uid gave. A running controller puts the ConfigMap back, with its ID, when it is deleted
 * or re-created without `data.id` (keepInstallation).
 */
import { readFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { installationIdPattern } from '../api/names.js';
import { asMergePatch, ignoreNotFound, statusCode } from '../kube/client.js';

export const installationConfigMap = 'glidepath-installation';
const serviceAccountNamespaceFile = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/**
 * Where the ConfigMap is: in a pod talking to its own cluster, the pod's namespace (the same for every replica,
 * whatever it watches); else the first watched namespace (a namespaced Role covers only those), else the kubeconfig
 * context's, else `default`.
 */
export function controllerNamespace(
  kc: k8s.KubeConfig,
  watched: string[] | undefined,
  readFile = (p: string) => readFileSync(p, 'utf8'),
): string {
  // client-node names the cluster of an in-cluster config so (KubeConfig.loadFromCluster).
  if (kc.getCurrentCluster()?.name === 'inCluster') {
    try {
      const own = readFile(serviceAccountNamespaceFile).trim();
      if (own) return own;
    } catch {
      // no ServiceAccount mounted
    }
  }
  if (watched?.length) return watched[0]!;
  return kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}

/** The ID a ConfigMap gives: its `data.id`, else derived from its uid; or why it gives none. */
export function idOfConfigMap(cm: k8s.V1ConfigMap): { id: string } | { problem: string } {
  const set = cm.data?.id;
  if (set !== undefined) {
    return installationIdPattern.test(set)
      ? { id: set }
      : {
          problem: `data.id "${set}" is not lower-case letters, digits and "-" (at most 32, starting and ending with a letter or digit)`,
        };
  }
  const hex = (cm.metadata?.uid ?? '').replace(/-/g, '').toLowerCase();
  return /^[0-9a-f]{8}/.test(hex) ? { id: hex.slice(0, 8) } : { problem: `it has neither data.id nor a uid` };
}

/** What to do after a read of the ConfigMap (`undefined`: it does not exist). */
export type ResolveStep =
  | { do: 'use'; id: string }
  | { do: 'write'; id: string; resourceVersion?: string }
  | { do: 'create' }
  | { do: 'refuse'; problem: string };

/**
 * The step resolveInstallation takes after a read: a ConfigMap with `data.id` gives it; one without gets the ID its
 * uid gives written into `data.id`, fenced on the resourceVersion read; a missing one is created.
 */
export function resolveStep(cm: k8s.V1ConfigMap | undefined): ResolveStep {
  if (!cm) return { do: 'create' };
  const found = idOfConfigMap(cm);
  if ('problem' in found) return { do: 'refuse', problem: found.problem };
  if (cm.data?.id !== undefined) return { do: 'use', id: found.id };
  return { do: 'write', id: found.id, resourceVersion: cm.metadata?.resourceVersion };
}

/** The merge patch that writes `id` into `data.id`, refused (409) unless the object is still at `resourceVersion`. */
function writeId(core: k8s.CoreV1Api, namespace: string, id: string, resourceVersion: string | undefined) {
  return core.patchNamespacedConfigMap(
    { name: installationConfigMap, namespace, body: { metadata: { resourceVersion }, data: { id } } },
    asMergePatch,
  );
}

/** The ConfigMap, or `undefined` when it does not exist. */
function readOrMissing(core: k8s.CoreV1Api, namespace: string): Promise<k8s.V1ConfigMap | undefined> {
  return ignoreNotFound(core.readNamespacedConfigMap({ name: installationConfigMap, namespace }));
}

/** A flag's installation ID checked, or the one the cluster gives. Throws with what to do when neither works. */
export async function resolveInstallation(
  kc: k8s.KubeConfig,
  watched: string[] | undefined,
  flag?: string,
): Promise<string> {
  if (flag !== undefined) {
    if (!installationIdPattern.test(flag))
      throw new Error(
        `--installation-id: "${flag}" is not lower-case letters, digits and "-" (at most 32, starting and ending with a letter or digit)`,
      );
    return flag;
  }
  const namespace = controllerNamespace(kc, watched);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const where = `ConfigMap ${namespace}/${installationConfigMap}`;
  const hint = `grant the controller get, create and patch on it (k8s-manifests/base/rbac.yaml, Role ${installationConfigMap}) or pass --installation-id`;
  const read = async () => {
    try {
      return await readOrMissing(core, namespace);
    } catch (err) {
      throw new Error(`the installation ID: ${where} cannot be read (${(err as Error).message}); ${hint}`);
    }
  };
  let cm = await read();
  // Each lost race (409: another replica created it or wrote data.id first; 404: deleted meanwhile) ends in a read
  // of what won, so a few rounds settle it.
  for (let round = 0; round < 5; round++) {
    const step = resolveStep(cm);
    if (step.do === 'use') return step.id;
    if (step.do === 'refuse') throw new Error(`the installation ID: ${where}: ${step.problem}`);
    try {
      cm =
        step.do === 'create'
          ? await core.createNamespacedConfigMap({
              namespace,
              body: { metadata: { name: installationConfigMap, namespace } },
            })
          : await writeId(core, namespace, step.id, step.resourceVersion);
    } catch (err) {
      const code = statusCode(err);
      // Older RBAC without the Role: the ID is the one the uid gives, as before (the keeper says it cannot write it).
      if (code === 403 && step.do === 'write') return step.id;
      if (code !== 409 && code !== 404)
        throw new Error(
          `the installation ID: ${where} ${step.do === 'create' ? 'does not exist and cannot be created' : 'cannot be given its data.id'} (${(err as Error).message}); ${hint}`,
        );
      cm = await read();
    }
  }
  throw new Error(`the installation ID: ${where} kept changing while it was read and written; start again`);
}

/** What the keeper does after a read of the ConfigMap (`undefined`: it does not exist). */
export type KeepStep =
  { do: 'nothing' } | { do: 'create' } | { do: 'write'; resourceVersion?: string } | { do: 'warn'; found: string };

/**
 * The keeper's step for a controller running as `id`: a missing ConfigMap is created with `data.id`, one without
 * `data.id` gets it; another `data.id` is left as it is (someone set it: it is the ID from the next start on).
 */
export function keepStep(id: string, cm: k8s.V1ConfigMap | undefined): KeepStep {
  if (!cm) return { do: 'create' };
  const set = cm.data?.id;
  if (set === id) return { do: 'nothing' };
  if (set !== undefined) return { do: 'warn', found: set };
  return { do: 'write', resourceVersion: cm.metadata?.resourceVersion };
}

/**
 * One check of the ConfigMap for a controller running as `id`: the step it found to take (taken, unless it lost a
 * race: a 409 or 404 is left to the next check), and a line for the log when there is something to say.
 */
export async function keepOnce(
  core: k8s.CoreV1Api,
  namespace: string,
  id: string,
): Promise<{ step: KeepStep['do'] | 'error'; message?: string }> {
  const where = `ConfigMap ${namespace}/${installationConfigMap}`;
  let step: KeepStep | undefined;
  try {
    step = keepStep(id, await readOrMissing(core, namespace));
    if (step.do === 'create') {
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: installationConfigMap, namespace }, data: { id } },
      });
      return { step: step.do, message: `the installation ID: ${where} was gone; created again with data.id ${id}` };
    }
    if (step.do === 'write') {
      await writeId(core, namespace, id, step.resourceVersion);
      return { step: step.do, message: `the installation ID: ${where} had no data.id; wrote ${id} into it` };
    }
    if (step.do === 'warn')
      return {
        step: step.do,
        message: `the installation ID: ${where} now says data.id ${step.found}, not ${id}: this controller runs as ${id} until it restarts`,
      };
    return { step: step.do };
  } catch (err) {
    const code = statusCode(err);
    if (step && (code === 409 || code === 404)) return { step: step.do };
    return { step: 'error', message: `the installation ID: ${where} cannot be kept (${(err as Error).message})` };
  }
}

/**
 * Checks the ConfigMap every `intervalMs` (default 60 s) while the controller runs as `id` (keepOnce), saying each
 * new finding once. Stop it on shutdown.
 */
export function keepInstallation(
  kc: k8s.KubeConfig,
  namespace: string,
  id: string,
  log: (message: string, fields?: Record<string, unknown>) => void,
  intervalMs = 60_000,
): { stop(): Promise<void> } {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  let said: string | undefined;
  let checking: Promise<void> | undefined;
  const timer = setInterval(() => {
    checking ??= keepOnce(core, namespace, id)
      .then(({ message }) => {
        if (message !== said && message) log(message);
        said = message;
      })
      .finally(() => (checking = undefined));
  }, intervalMs).unref();
  // A check under way finishes before stop resolves: nothing is created after it.
  return {
    stop: async () => {
      clearInterval(timer);
      await checking;
    },
  };
}
