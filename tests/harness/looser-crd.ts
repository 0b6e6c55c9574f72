/**
 * Objects admitted under an older, looser CRD. Kubernetes does not re-validate what is stored when a CRD gets
 * stricter, so such a spec reaches the watcher, whose zod schema must refuse it (InvalidSpec) on its own. This
 * is how a test gets a spec past admission now that admission refuses everything zod does.
 */
import * as k8s from '@kubernetes/client-node';
import { group } from '../../api/common.js';
import { installCrds } from '../../scripts/servers/install-crds.js';
import { eventually } from './eventually.js';

type Schema = { [key: string]: unknown };
const crdName = `temporalworkerdeployments.${group}`;

/** The sub-schema at `path` (property names) of the CRD's openAPIV3Schema, as the client names its keys (`x_kubernetes_validations`). */
export function schemaAt(root: Schema, path: string[]): Schema {
  return path.reduce((node, key) => (node.properties as Record<string, Schema>)[key]!, root);
}

/**
 * Relaxes the installed TemporalWorkerDeployment CRD (`loosen` edits its openAPIV3Schema), waits until
 * `admitted` says kube-apiserver now admits what the test needs, runs `fn`, then reinstalls the generated CRDs
 * (however `fn` ended) and waits until `admitted` says the strict CRD is back.
 */
export async function withLooserCrd<T>(
  kc: k8s.KubeConfig,
  loosen: (schema: Schema) => void,
  admitted: () => Promise<boolean>,
  fn: () => Promise<T>,
): Promise<T> {
  const api = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const crd = await api.readCustomResourceDefinition({ name: crdName });
  loosen(crd.spec.versions[0]!.schema!.openAPIV3Schema as Schema);
  await api.replaceCustomResourceDefinition({ name: crdName, body: crd });
  try {
    await eventually('the looser CRD in force', admitted, 20_000);
    return await fn();
  } finally {
    installCrds(process.env.KUBECONFIG!, process.env.GLIDEPATH_KUBECTL!);
    await eventually('the generated CRD in force again', async () => !(await admitted()), 20_000);
  }
}
