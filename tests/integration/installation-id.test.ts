/**
 * The installation ID against a real kube-apiserver (worker/installation.ts): generated once, into the ConfigMap's
 * data.id, and kept when the ConfigMap is deleted or re-created; a ConfigMap of older manifests (no data.id) keeps
 * the ID its uid gave.
 */
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { idOfConfigMap, installationConfigMap, keepOnce, resolveInstallation } from '../../worker/installation.js';

const kc = new k8s.KubeConfig();
kc.loadFromFile(process.env.KUBECONFIG!);
const core = kc.makeApiClient(k8s.CoreV1Api);
const namespaces: string[] = [];

async function namespace(label: string): Promise<string> {
  const name = `${label}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name } } });
  namespaces.push(name);
  return name;
}
const read = (ns: string) => core.readNamespacedConfigMap({ name: installationConfigMap, namespace: ns });
const uidId = (cm: k8s.V1ConfigMap) => cm.metadata!.uid!.replace(/-/g, '').slice(0, 8);

afterAll(async () => {
  await Promise.all(namespaces.map((name) => core.deleteNamespace({ name })));
});

test('the ID is written into data.id at once, comes back with a deleted ConfigMap, and an older ConfigMap keeps its uid-derived ID', async () => {
  // A new installation: two replicas starting together create the ConfigMap and agree on its ID.
  const fresh = await namespace('installation-id');
  const [id, again] = await Promise.all([resolveInstallation(kc, [fresh]), resolveInstallation(kc, [fresh])]);
  expect(again).toBe(id);
  const created = await read(fresh);
  expect(created.data).toEqual({ id });
  expect(id).toBe(uidId(created));

  // Deleted while the controller runs: the keeper creates it again with the same ID, and the next start reads it.
  await core.deleteNamespacedConfigMap({ name: installationConfigMap, namespace: fresh });
  expect(await keepOnce(core, fresh, id)).toEqual({
    step: 'create',
    message: expect.stringContaining('created again'),
  });
  const recreated = await read(fresh);
  expect(recreated.metadata!.uid).not.toBe(created.metadata!.uid);
  expect(recreated.data).toEqual({ id });
  expect(await resolveInstallation(kc, [fresh])).toBe(id);

  // Re-created without data.id (an old manifest applied again): the keeper writes the ID into it.
  await core.deleteNamespacedConfigMap({ name: installationConfigMap, namespace: fresh });
  await core.createNamespacedConfigMap({ namespace: fresh, body: { metadata: { name: installationConfigMap } } });
  expect((await keepOnce(core, fresh, id)).step).toBe('write');
  expect((await read(fresh)).data).toEqual({ id });
  expect(await keepOnce(core, fresh, id)).toEqual({ step: 'nothing' });

  // Another data.id set by hand: left as it is, and said.
  await core.patchNamespacedConfigMap(
    { name: installationConfigMap, namespace: fresh, body: { data: { id: 'team-b' } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  expect(await keepOnce(core, fresh, id)).toEqual({ step: 'warn', message: expect.stringContaining('team-b') });
  expect((await read(fresh)).data).toEqual({ id: 'team-b' });

  // An upgrade: the ConfigMap older manifests shipped, without data.id. Its uid-derived ID stays, now in data.id.
  const upgraded = await namespace('installation-upgrade');
  const old = await core.createNamespacedConfigMap({
    namespace: upgraded,
    body: { metadata: { name: installationConfigMap } },
  });
  const before = idOfConfigMap(old);
  expect(before).toEqual({ id: uidId(old) });
  expect(await resolveInstallation(kc, [upgraded])).toBe(uidId(old));
  const written = await read(upgraded);
  expect(written.metadata!.uid).toBe(old.metadata!.uid);
  expect(written.data).toEqual({ id: uidId(old) });
});
