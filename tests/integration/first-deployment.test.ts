/**
 * The watcher's first apply (starter/first-deployment.ts) against a real kube-apiserver: it only ever creates, and
 * when its fence (the finalizer patch at the resourceVersion the watcher saw) is refused, what it created is
 * deleted, while a Deployment someone else wrote is left exactly as it was.
 */
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { createRolloutNamespace } from '../../scripts/servers/rollout-namespace.js';
import { computeBuildId } from '../../api/build-id.js';
import { group, version } from '../../api/common.js';
import { parseConnection, parseWorkerResource } from '../../api/kinds.js';
import { versionedDeploymentName } from '../../api/names.js';
import { asMergePatch, SharedConnectionsKubeConfig, statusCode } from '../../kube/client.js';
import { createKubernetesActivities } from '../../activities/kubernetes.js';
import { finalizer } from '../../api/names.js';
import { buildIdNow, createFirstDeployment } from '../../starter/first-deployment.js';
import type { Desired, Owner } from '../../api/resource.js';

type Raw = k8s.KubernetesObject & { metadata: k8s.V1ObjectMeta };
const plural = 'temporalworkerdeployments';
let kc: k8s.KubeConfig;
let custom: k8s.CustomObjectsApi;
let apps: k8s.AppsV1Api;
let core: k8s.CoreV1Api;
let namespace: string;

beforeAll(async () => {
  kc = new SharedConnectionsKubeConfig();
  kc.loadFromFile(process.env.KUBECONFIG!);
  custom = kc.makeApiClient(k8s.CustomObjectsApi);
  apps = kc.makeApiClient(k8s.AppsV1Api);
  core = kc.makeApiClient(k8s.CoreV1Api);
  namespace = `firstdep-${randomBytes(3).toString('hex')}`;
  await createRolloutNamespace(kc, namespace, 'temporal.test:7233');
});
afterAll(async () => {
  if (namespace) await core.deleteNamespace({ name: namespace });
});

/** A resource as the watcher sees it on first sight, with what it would hand the workflow. */
async function firstSight(name: string): Promise<{ seen: Raw; owner: Owner; desired: Desired }> {
  const spec = {
    replicas: 1,
    rollout: { strategy: 'AllAtOnce' },
    workerOptions: { connectionRef: { name: 'local' }, temporalNamespace: 'default' },
    template: { spec: { containers: [{ name: 'w', image: `${name}:1` }] } },
  };
  const seen = (await custom.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural,
    body: { apiVersion: `${group}/${version}`, kind: 'TemporalWorkerDeployment', metadata: { name }, spec },
  })) as Raw;
  const parsed = parseWorkerResource(seen, 'TemporalWorkerDeployment');
  if (!parsed.ok) throw new Error(parsed.problem);
  const conn = parseConnection(
    await custom.getNamespacedCustomObject({ group, version, namespace, plural: 'temporalconnections', name: 'local' }),
    'TemporalConnection',
  );
  if (!conn.ok) throw new Error(conn.problem);
  const uid = seen.metadata.uid!;
  const owner: Owner = { namespace, name, uid, kind: 'TemporalWorkerDeployment' };
  const desired: Desired = {
    generation: 1,
    spec: parsed.resource.spec,
    kind: 'TemporalWorkerDeployment',
    buildId: computeBuildId(parsed.resource.spec.template),
    connection: conn.spec,
    connectionVersion: '',
    uid,
  };
  return { seen, owner, desired };
}

/** The watcher's fence: the finalizer, at the resourceVersion it saw. */
const fenceAt = (seen: Raw) => async () => {
  await custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace,
      plural,
      name: seen.metadata.name!,
      body: { metadata: { finalizers: [finalizer], resourceVersion: seen.metadata.resourceVersion } },
    },
    asMergePatch,
  );
};
/** Someone else writes the resource after the watcher's view was taken: that view is stale now (a new build: a new image). */
const moveOn = (name: string, image?: string) =>
  custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace,
      plural,
      name,
      body: {
        metadata: { labels: { moved: 'on' } },
        ...(image ? { spec: { template: { spec: { containers: [{ name: 'w', image }] } } } } : {}),
      },
    },
    asMergePatch,
  );
const deploymentOf = (owner: Owner, buildId: string) =>
  apps
    .readNamespacedDeployment({ name: versionedDeploymentName(owner.name, buildId), namespace })
    .catch((err: unknown) => {
      if (statusCode(err) === 404) return undefined;
      throw err;
    });

test("a fresh view: created with the fence on, and the workflow's own apply of it changes nothing", async () => {
  const { seen, owner, desired } = await firstSight('fresh');
  expect(
    await createFirstDeployment(apps, {
      owner,
      desired,
      fence: fenceAt(seen),
      buildIdNow: () => buildIdNow(custom, 'TemporalWorkerDeployment', seen.metadata),
    }),
  ).toBe('created');
  const made = await deploymentOf(owner, desired.buildId);
  expect(made?.metadata?.labels).toMatchObject({ 'glidepath.dev/owner-uid': owner.uid });
  const again = await createKubernetesActivities(kc).ensureVersionedDeployment({
    owner,
    desired,
    buildId: desired.buildId,
    template: desired.spec.template,
  });
  expect(again.resourceVersion).toBe(made?.metadata?.resourceVersion);
  expect(
    ((await custom.getNamespacedCustomObject({ group, version, namespace, plural, name: 'fresh' })) as Raw).metadata
      .finalizers,
  ).toEqual([finalizer]);
});

test('a stale view of an object that asks for another build now: the fence is refused, and the Deployment it created is deleted again', async () => {
  const { seen, owner, desired } = await firstSight('stale');
  await moveOn('stale', 'stale:2');
  await expect(
    createFirstDeployment(apps, {
      owner,
      desired,
      fence: fenceAt(seen),
      buildIdNow: () => buildIdNow(custom, 'TemporalWorkerDeployment', seen.metadata),
    }),
  ).rejects.toMatchObject({ code: 409 });
  const left = await deploymentOf(owner, desired.buildId);
  expect(left === undefined || left.metadata?.deletionTimestamp !== undefined).toBe(true);
});

test("a stale view beside the workflow's newer apply: nothing is overwritten and nothing deleted", async () => {
  const { seen, owner, desired } = await firstSight('newer');
  // The workflow applied this build already, at 3 replicas (a newer spec than the watcher saw).
  await createKubernetesActivities(kc).ensureVersionedDeployment({
    owner,
    desired,
    buildId: desired.buildId,
    template: desired.spec.template,
    replicas: 3,
  });
  const before = await deploymentOf(owner, desired.buildId);
  await moveOn('newer', 'newer:2');
  await expect(
    createFirstDeployment(apps, {
      owner,
      desired,
      fence: fenceAt(seen),
      buildIdNow: () => buildIdNow(custom, 'TemporalWorkerDeployment', seen.metadata),
    }),
  ).rejects.toMatchObject({ code: 409 });
  const after = await deploymentOf(owner, desired.buildId);
  expect(after?.metadata?.resourceVersion).toBe(before?.metadata?.resourceVersion);
  expect(after?.spec?.replicas).toBe(3);
  expect(after?.metadata?.deletionTimestamp).toBeUndefined();
});

test('two replicas at once, one fence refused: the build the object still asks for keeps its Deployment', async () => {
  const { seen, owner, desired } = await firstSight('twice');
  const input = {
    owner,
    desired,
    fence: fenceAt(seen),
    buildIdNow: () => buildIdNow(custom, 'TemporalWorkerDeployment', seen.metadata),
  };
  const outcomes = await Promise.allSettled([createFirstDeployment(apps, input), createFirstDeployment(apps, input)]);
  expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1); // one fence passes; the other is refused (409)
  const kept = await deploymentOf(owner, desired.buildId);
  expect(kept?.metadata?.deletionTimestamp).toBeUndefined();
  expect(kept?.metadata?.labels).toMatchObject({ 'glidepath.dev/owner-uid': owner.uid });
});

test('a stale view of an object that still asks for this build (only its labels changed): the Deployment is kept', async () => {
  const { seen, owner, desired } = await firstSight('relabelled');
  await moveOn('relabelled');
  await expect(
    createFirstDeployment(apps, {
      owner,
      desired,
      fence: fenceAt(seen),
      buildIdNow: () => buildIdNow(custom, 'TemporalWorkerDeployment', seen.metadata),
    }),
  ).rejects.toMatchObject({ code: 409 });
  expect((await deploymentOf(owner, desired.buildId))?.metadata?.deletionTimestamp).toBeUndefined();
});
