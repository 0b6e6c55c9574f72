/** Installs the generated CRDs with server-side apply (they are too large for client-side apply) and waits until established. */
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { parse } from 'yaml';

const crdDir = join(dirname(fileURLToPath(import.meta.url)), '../../k8s-manifests/crds');

export async function installCrds(kubeconfigPath: string, timeoutMs = 30_000): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const names: string[] = [];
  for (const file of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
    const crd = parse(readFileSync(join(crdDir, file), 'utf8')) as k8s.KubernetesObject;
    await objects.patch(crd, undefined, undefined, 'glidepath', true, k8s.PatchStrategy.ServerSideApply);
    names.push(crd.metadata!.name!);
  }
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const crd = await ext.readCustomResourceDefinition({ name });
      if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} was not established within ${timeoutMs / 1000}s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
