/**
 * The installation ID: what keeps two Glidepath installations apart when they share a Temporal namespace (two
 * teams' namespaced installs, two clusters). It goes into the task queue, the manager identity, the workflow IDs
 * and the claim on each resource (the `glidepath.dev/installation` annotation, see starter/watcher.ts).
 *
 * Unless a flag gives it, it is read from the ConfigMap `glidepath-installation` in the controller's namespace:
 * its `data.id` when set, else the first 8 hex digits of the ConfigMap's uid (kube-apiserver makes uids unique).
 * Every replica, every controller version and `npm start` read the same object; the shipped manifests include it,
 * and `npm start` creates it when missing.
 */
import { readFileSync } from 'node:fs';
import * as k8s from '@kubernetes/client-node';
import { installationIdPattern } from '../api/names.js';
import { statusCode } from '../kube/client.js';

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
  const hint = `create it (kubectl create configmap ${installationConfigMap} -n ${namespace}) or pass --installation-id`;
  let cm: k8s.V1ConfigMap;
  try {
    cm = await core.readNamespacedConfigMap({ name: installationConfigMap, namespace });
  } catch (err) {
    if (statusCode(err) !== 404)
      throw new Error(`the installation ID: ${where} cannot be read (${(err as Error).message}); ${hint}`);
    try {
      cm = await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: installationConfigMap, namespace } },
      });
    } catch (createErr) {
      // 409: another replica created it meanwhile.
      if (statusCode(createErr) !== 409)
        throw new Error(
          `the installation ID: ${where} does not exist and cannot be created (${(createErr as Error).message}); ${hint}`,
        );
      cm = await core.readNamespacedConfigMap({ name: installationConfigMap, namespace });
    }
  }
  const found = idOfConfigMap(cm);
  if ('problem' in found) throw new Error(`the installation ID: ${where}: ${found.problem}`);
  return found.id;
}
