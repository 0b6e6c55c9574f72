/**
 * The workflow's reads of its resource against a real kube-apiserver (kube/read-resource.ts): the
 * object as it is now (uid, resourceVersion, generation, whether it is being deleted) with the `Desired` the watcher
 * would derive from it, or why there is none; and a live namesake that took the name over.
 */
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { computeBuildId } from '../../api/build-id.js';
import { group, version } from '../../api/common.js';
import { pluralOf, type ResourceKind } from '../../api/kinds.js';
import { asMergePatch, SharedConnectionsKubeConfig } from '../../kube/client.js';
import { createResourceReads, type ResourceReads } from '../../kube/read-resource.js';
import type { Owner } from '../../api/resource.js';
import { eventually } from '../harness/eventually.js';

/** Keeps a deleted object in the apiserver (deletionTimestamp set) until the test removes it. */
const holdFinalizer = 'test.glidepath.dev/hold';
const template = { spec: { containers: [{ name: 'worker', image: 'orders:1.4.2' }] } };
type ConnectionRef = { name: string; kind?: 'TemporalConnection' | 'Connection' | 'ClusterConnection' };
const workerOptions = (connectionRef: ConnectionRef) => ({ connectionRef, temporalNamespace: 'default' });

let kc: k8s.KubeConfig;
let custom: k8s.CustomObjectsApi;
let core: k8s.CoreV1Api;
let reads: ResourceReads;
let namespace: string;
/** Objects left with our finalizer, to release before the namespace goes. */
const held: { kind: ResourceKind; name: string }[] = [];

beforeAll(async () => {
  kc = new SharedConnectionsKubeConfig();
  kc.loadFromFile(process.env.KUBECONFIG!);
  custom = kc.makeApiClient(k8s.CustomObjectsApi);
  core = kc.makeApiClient(k8s.CoreV1Api);
  reads = createResourceReads(kc);
  namespace = `readres-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  for (const kind of ['TemporalConnection', 'Connection'] as const) {
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: kind === 'Connection' ? 'connections' : 'temporalconnections',
      body: {
        apiVersion: `${group}/${version}`,
        kind,
        metadata: { name: 'local' },
        spec: { hostPort: `${kind.toLowerCase()}.test:7233` },
      },
    });
  }
});
afterAll(async () => {
  if (!namespace) return;
  for (const { kind, name } of held) {
    await custom
      .patchNamespacedCustomObject(
        { group, version, namespace, plural: pluralOf(kind), name, body: { metadata: { finalizers: null } } },
        asMergePatch,
      )
      .catch(() => {});
  }
  await core.deleteNamespace({ name: namespace });
});

type Raw = k8s.KubernetesObject & { metadata: k8s.V1ObjectMeta };

/** Creates a resource of `kind` (its connection `local` unless told otherwise); the stored object. */
async function create(
  kind: ResourceKind,
  name: string,
  o: { connectionRef?: ConnectionRef; finalizers?: string[] } = {},
): Promise<Raw> {
  const connectionRef = o.connectionRef ?? { name: 'local' };
  const spec =
    kind === 'WorkerDeployment'
      ? {
          rollout: { strategy: 'AllAtOnce' },
          workerOptions: workerOptions(connectionRef),
          deployment: { replicas: 1, template },
        }
      : { replicas: 1, rollout: { strategy: 'AllAtOnce' }, workerOptions: workerOptions(connectionRef), template };
  if (o.finalizers?.includes(holdFinalizer)) held.push({ kind, name });
  return (await custom.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: pluralOf(kind),
    body: { apiVersion: `${group}/${version}`, kind, metadata: { name, finalizers: o.finalizers }, spec },
  })) as Raw;
}
const remove = (kind: ResourceKind, name: string) =>
  custom.deleteNamespacedCustomObject({ group, version, namespace, plural: pluralOf(kind), name });
const get = async (kind: ResourceKind, name: string) =>
  (await custom.getNamespacedCustomObject({ group, version, namespace, plural: pluralOf(kind), name })) as Raw;
const connectionVersion = async (plural: string) =>
  ((await custom.getNamespacedCustomObject({ group, version, namespace, plural, name: 'local' })) as Raw).metadata
    .resourceVersion;
const ownerOf = (obj: Raw, kind?: ResourceKind): Owner => ({
  namespace,
  name: obj.metadata.name!,
  uid: obj.metadata.uid!,
  ...(kind ? { kind } : {}),
});

test('a TemporalWorkerDeployment is read with the Desired the watcher would derive (no kind in the Owner: a TemporalWorkerDeployment)', async () => {
  const obj = await create('TemporalWorkerDeployment', 'alpha');
  const read = await reads.readResource(ownerOf(obj));
  expect(read).toEqual({
    found: true,
    uid: obj.metadata.uid,
    kind: 'TemporalWorkerDeployment',
    resourceVersion: obj.metadata.resourceVersion,
    generation: 1,
    deleting: false,
    desired: {
      generation: 1,
      uid: obj.metadata.uid,
      kind: 'TemporalWorkerDeployment',
      buildId: computeBuildId(template),
      connection: expect.objectContaining({ hostPort: 'temporalconnection.test:7233' }),
      connectionVersion: await connectionVersion('temporalconnections'),
      spec: expect.objectContaining({
        replicas: 1,
        template,
        workerOptions: {
          ...workerOptions({ name: 'local' }),
          connectionRef: { kind: 'TemporalConnection', name: 'local' },
        },
      }),
    },
  });

  // A new generation is read as it is now.
  await custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace,
      plural: pluralOf('TemporalWorkerDeployment'),
      name: 'alpha',
      body: { spec: { replicas: 3 } },
    },
    asMergePatch,
  );
  const after = await reads.readResource(ownerOf(obj, 'TemporalWorkerDeployment'));
  expect(after).toMatchObject({
    found: true,
    generation: 2,
    resourceVersion: (await get('TemporalWorkerDeployment', 'alpha')).metadata.resourceVersion,
    desired: { generation: 2, spec: { replicas: 3 } },
  });
});

test('a WorkerDeployment is read by its kind, normalized, with its Connection', async () => {
  const obj = await create('WorkerDeployment', 'omega');
  const read = await reads.readResource(ownerOf(obj, 'WorkerDeployment'));
  expect(read).toMatchObject({
    found: true,
    uid: obj.metadata.uid,
    kind: 'WorkerDeployment',
    deleting: false,
    desired: {
      kind: 'WorkerDeployment',
      uid: obj.metadata.uid,
      buildId: computeBuildId(template),
      connection: { hostPort: 'connection.test:7233' },
      connectionVersion: await connectionVersion('connections'),
      spec: { replicas: 1, template, workerOptions: { connectionRef: { kind: 'Connection', name: 'local' } } },
    },
  });
  expect(read).not.toHaveProperty('problem');
  // By name and kind: there is no TemporalWorkerDeployment omega.
  expect(await reads.readResource({ ...ownerOf(obj), kind: 'TemporalWorkerDeployment' })).toEqual({ found: false });
});

test('no object of that kind at that name: found false', async () => {
  expect(await reads.readResource({ namespace, name: 'nobody', uid: 'uid-of-nobody' })).toEqual({ found: false });
  expect(
    await reads.readResource({ namespace, name: 'nobody', uid: 'uid-of-nobody', kind: 'WorkerDeployment' }),
  ).toEqual({ found: false });
});

test("a namesake re-created under the name is read with its own uid (the caller compares it with the Owner's)", async () => {
  const first = await create('TemporalWorkerDeployment', 'beta');
  await remove('TemporalWorkerDeployment', 'beta');
  await eventually('beta gone', async () => (await reads.readResource(ownerOf(first))).found === false, 10_000);
  const second = await create('TemporalWorkerDeployment', 'beta');
  expect(second.metadata.uid).not.toBe(first.metadata.uid);
  const read = await reads.readResource(ownerOf(first));
  expect(read).toMatchObject({ found: true, uid: second.metadata.uid, desired: { uid: second.metadata.uid } });
});

test("an object being deleted (held by a finalizer): deleting, still with its Desired; it is nobody's successor", async () => {
  const obj = await create('TemporalWorkerDeployment', 'gamma', { finalizers: [holdFinalizer] });
  expect(await reads.readResource(ownerOf(obj))).toMatchObject({ found: true, deleting: false });
  await remove('TemporalWorkerDeployment', 'gamma');
  const read = await reads.readResource(ownerOf(obj));
  expect(read).toMatchObject({
    found: true,
    uid: obj.metadata.uid,
    deleting: true,
    desired: { uid: obj.metadata.uid },
  });
  expect(read.found && read.resourceVersion).toBe(
    (await get('TemporalWorkerDeployment', 'gamma')).metadata.resourceVersion,
  );
  // Not live: no successor of an older owner of the name.
  expect(
    await reads.findSuccessor({ namespace, name: 'gamma', uid: 'an-older-uid', kind: 'TemporalWorkerDeployment' }),
  ).toBeUndefined();
});

test('a missing connection: the problem, and no Desired', async () => {
  const obj = await create('TemporalWorkerDeployment', 'delta', { connectionRef: { name: 'absent' } });
  const read = await reads.readResource(ownerOf(obj));
  expect(read).toEqual({
    found: true,
    uid: obj.metadata.uid,
    kind: 'TemporalWorkerDeployment',
    resourceVersion: obj.metadata.resourceVersion,
    generation: 1,
    deleting: false,
    problem: `TemporalConnection ${namespace}/absent not found`,
    problemPhase: 'Pending',
    problemReason: 'ConnectionNotFound',
  });
  // A ClusterConnection is looked up cluster-wide, and named without a namespace.
  const viaCluster = await create('WorkerDeployment', 'delta-cc', {
    connectionRef: { kind: 'ClusterConnection', name: `absent-${namespace}` },
  });
  const readCc = await reads.readResource(ownerOf(viaCluster, 'WorkerDeployment'));
  expect(readCc).toMatchObject({ found: true, problem: `ClusterConnection absent-${namespace} not found` });
  expect(readCc).not.toHaveProperty('desired');
});

test('a ClusterConnection the controller may not read (a namespaced install): the problem, not a failure', async () => {
  const obj = await create('TemporalWorkerDeployment', 'epsilon-cc', {
    connectionRef: { kind: 'ClusterConnection', name: 'shared' },
  });
  // A ServiceAccount allowed to read the resources and connections of this namespace only.
  const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'reader' } } });
  await rbac.createNamespacedRole({
    namespace,
    body: {
      metadata: { name: 'reader' },
      rules: [
        {
          apiGroups: [group],
          resources: ['temporalworkerdeployments', 'workerdeployments', 'temporalconnections', 'connections'],
          verbs: ['get'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace }],
    },
  });
  const { status } = await core.createNamespacedServiceAccountToken({
    namespace,
    name: 'reader',
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const cluster = kc.getCurrentCluster()!;
  const asReader = new k8s.KubeConfig();
  asReader.loadFromOptions({
    clusters: [{ name: 'test', server: cluster.server, skipTLSVerify: true }],
    users: [{ name: 'reader', token: status!.token }],
    contexts: [{ name: 'reader', cluster: 'test', user: 'reader' }],
    currentContext: 'reader',
  });
  const readerReads = createResourceReads(asReader);
  // The binding takes effect within moments; until then the resource's own GET is refused (and throws).
  const read = await eventually('the Role in effect', () => readerReads.readResource(ownerOf(obj)), 10_000);
  expect(read).toMatchObject({ found: true, uid: obj.metadata.uid });
  expect(read).not.toHaveProperty('desired');
  expect(read.found && read.problem).toBe(
    `ClusterConnection shared: this controller may not read ClusterConnections (a namespaced install: its Role grants nothing cluster-scoped); use a Connection in ${namespace}, or grant it get, list and watch on clusterconnections`,
  );
  // Any other refusal is a failure of the read, not a problem of the resource.
  await expect(readerReads.readResource({ namespace: 'default', name: 'elsewhere', uid: 'x' })).rejects.toMatchObject({
    code: 403,
  });
});

test("findSuccessor: a live namesake of the other kind, never the owner's own object", async () => {
  const twd = await create('TemporalWorkerDeployment', 'zeta');
  expect(await reads.findSuccessor(ownerOf(twd, 'TemporalWorkerDeployment'))).toBeUndefined();
  expect(await reads.findSuccessor(ownerOf(twd))).toBeUndefined();
  const wd = await create('WorkerDeployment', 'zeta');
  expect(await reads.findSuccessor(ownerOf(twd, 'TemporalWorkerDeployment'))).toEqual({
    namespace,
    name: 'zeta',
    uid: wd.metadata.uid,
    kind: 'WorkerDeployment',
  });
  // Seen from the WorkerDeployment, the TemporalWorkerDeployment is the other live object under the name.
  expect(await reads.findSuccessor(ownerOf(wd, 'WorkerDeployment'))).toEqual({
    namespace,
    name: 'zeta',
    uid: twd.metadata.uid,
    kind: 'TemporalWorkerDeployment',
  });
  // An owner long gone: of the two, the one created first.
  const oldest =
    (await get('TemporalWorkerDeployment', 'zeta')).metadata.creationTimestamp! <=
    (await get('WorkerDeployment', 'zeta')).metadata.creationTimestamp!
      ? twd
      : wd;
  expect((await reads.findSuccessor({ namespace, name: 'zeta', uid: 'gone' }))?.uid).toBe(oldest.metadata.uid);
  // A name with no object at all.
  expect(await reads.findSuccessor({ namespace, name: 'nobody', uid: 'gone' })).toBeUndefined();
});

/**
 * A kubeconfig for the same apiserver whose requests for `from` go to `to`: the resource's kind (or its whole group)
 * as an apiserver answers when its CRD is not served (missing, or being reinstalled), without touching the CRDs the
 * other tests share.
 */
class UnservedKubeConfig extends SharedConnectionsKubeConfig {
  constructor(
    private readonly from: string,
    private readonly to: string,
  ) {
    super();
    this.loadFromFile(process.env.KUBECONFIG!);
  }

  override async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    context.setUrl(context.getUrl().replace(this.from, this.to));
  }
}

test("a 404 from a kind the apiserver does not serve is an error, not 'gone'", async () => {
  const obj = await create('TemporalWorkerDeployment', 'eta');
  const owner = ownerOf(obj, 'TemporalWorkerDeployment');
  const absent: Owner = { namespace, name: 'nobody', uid: 'uid-of-nobody', kind: 'TemporalWorkerDeployment' };
  // Through the served paths: the object is there, and an absent one is gone (the 404 names it).
  expect(await reads.readResource(owner)).toMatchObject({ found: true, uid: obj.metadata.uid });
  expect(await reads.readResource(absent)).toMatchObject({ found: false });

  const kindPath = `/apis/${group}/${version}/namespaces/${namespace}/${pluralOf('TemporalWorkerDeployment')}/`;
  const unserved = {
    // The group served (its other CRDs are installed), the resource's kind not.
    'the kind': new UnservedKubeConfig(
      kindPath,
      kindPath.replace(`/${pluralOf('TemporalWorkerDeployment')}/`, '/temporalworkerdeploymentsunserved/'),
    ),
    // No CRD of the group at all.
    'the group': new UnservedKubeConfig(`/apis/${group}/`, `/apis/unserved.${group}/`),
  };
  for (const [what, config] of Object.entries(unserved)) {
    const unservedReads = createResourceReads(config);
    // The apiserver answers 404 for the object there and for one that is not: neither is "gone", both are a failure
    // of the read (a teardown must never start on it).
    for (const o of [owner, absent]) {
      await expect(unservedReads.readResource(o).then((read) => ({ what, read }))).rejects.toMatchObject({ code: 404 });
    }
    // Nor is it "no successor": the search fails too.
    await expect(
      unservedReads.findSuccessor({ ...owner, uid: 'an-older-uid' }).then((found) => ({ what, found })),
    ).rejects.toMatchObject({ code: 404 });
  }
  // The connection's kind not served: a failure of the read too, not "the connection is missing".
  const connectionPath = `/namespaces/${namespace}/temporalconnections/`;
  const noConnections = createResourceReads(
    new UnservedKubeConfig(
      connectionPath,
      connectionPath.replace('/temporalconnections/', '/temporalconnectionsunserved/'),
    ),
  );
  await expect(noConnections.readResource(owner)).rejects.toMatchObject({ code: 404 });
});
