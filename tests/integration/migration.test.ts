/**
 * Moving over from temporal-worker-controller ≥ 1.7, on the real servers: the state it leaves is built by hand —
 * its WorkerDeployment object (a stand-in CRD in group temporal.io), its versioned Deployments with its labels,
 * names, owner reference and injected env (the pod simulator runs their workers), routing set in Temporal under its
 * identity, which also holds the manager identity — then the migrated YAML (`apiVersion: glidepath.dev/v1alpha1`,
 * kind WorkerDeployment, `spec.deployment`) is applied. Also: the new kinds at admission, a WorkerDeployment and a
 * TemporalWorkerDeployment of one name, and a ClusterConnection.
 */
import { execFileSync } from 'node:child_process';
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../../api/common.js';
import { workerDeploymentName } from '../../api/names.js';
import { ignoreNotFound } from '../../kube/client.js';
import { finalizer } from '../../api/names.js';
import { describeDeploymentSettled } from '../../temporal/describe.js';
import {
  apply,
  deployments,
  eventually,
  resource,
  routing,
  startRolloutEnv,
  taskQueueOf,
  twdStatus,
  versionStatus,
  workflowHandle,
  type RolloutEnv,
  type TwdStatus,
} from '../harness/rollout-env.js';
import { activityTypes } from '../../scripts/history.js';

let env: RolloutEnv;
let extensions: k8s.ApiextensionsV1Api;
const temporalNamespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
/** The identity temporal-worker-controller's Helm chart gives it: `<release>/<namespace>` (plus a cluster suffix). */
const twcIdentity = 'temporal-worker-controller/temporal-system';
const twcCrd = 'workerdeployments.temporal.io';

beforeAll(async () => {
  env = await startRolloutEnv('migration');
  extensions = env.kc.makeApiClient(k8s.ApiextensionsV1Api);
  // The other controller's kind, as far as its objects need to exist (owner of its Deployments).
  await extensions
    .createCustomResourceDefinition({
      body: {
        metadata: { name: twcCrd },
        spec: {
          group: 'temporal.io',
          names: {
            kind: 'WorkerDeployment',
            plural: 'workerdeployments',
            singular: 'workerdeployment',
            listKind: 'WorkerDeploymentList',
            shortNames: ['wd'],
          },
          scope: 'Namespaced',
          versions: [
            {
              name: 'v1alpha1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    })
    .catch((err: unknown) => {
      if ((err as { code?: number }).code !== 409) throw err;
    });
  // A Connection (the kind a WorkerDeployment names by default) to the test server.
  await env.custom.createNamespacedCustomObject({
    group,
    version,
    namespace: env.namespace,
    plural: 'connections',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'Connection',
      metadata: { name: 'local' },
      spec: { hostPort: process.env.TEMPORAL_ADDRESS },
    },
  });
  await eventually('the temporal.io CRD served', async () => {
    await env.custom.listNamespacedCustomObject({
      group: 'temporal.io',
      version: 'v1alpha1',
      namespace: env.namespace,
      plural: 'workerdeployments',
    });
    return true;
  });
});
afterAll(async () => {
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

// ---- the state temporal-worker-controller leaves ----

/** The pod template as the user wrote it (the same in the old YAML and the migrated one). */
function userTemplate(name: string, v: string) {
  return {
    metadata: { labels: { app: name } },
    spec: {
      containers: [
        {
          name: 'worker',
          image: 'glidepath/example-worker:1.0.0',
          env: [
            { name: 'EXAMPLE_TASK_QUEUE', value: taskQueueOf(env, name) },
            { name: 'EXAMPLE_WORKFLOW_HOLD', value: '1h' },
            { name: 'VERSION', value: v },
          ],
          // kube-apiserver defaults `protocol: TCP` here: the live template never equals the spec's as written.
          ports: [{ name: 'metrics', containerPort: 9090 }],
        },
      ],
    },
  };
}

/** The migrated resource: kind WorkerDeployment, group glidepath.dev, the 1.7 `spec.deployment`. */
function migrated(name: string, v: string, spec: Record<string, unknown> = {}) {
  return {
    apiVersion: `${group}/${version}`,
    kind: 'WorkerDeployment',
    metadata: { name, namespace: env.namespace },
    spec: {
      deployment: { replicas: 1, template: userTemplate(name, v) },
      rollout: { strategy: 'Progressive', steps: [{ rampPercentage: 50, pauseDuration: '2s' }] },
      sunset: { scaledownDelay: '1s', deleteDelay: '2s' },
      workerOptions: { connectionRef: { name: 'local' }, temporalNamespace },
      ...spec,
    },
  };
}

/** A Deployment as temporal-worker-controller makes one: its name, selector, labels, annotations, env, owner. */
function twcDeployment(
  name: string,
  buildId: string,
  template: ReturnType<typeof userTemplate>,
  owner: { uid: string },
): k8s.V1Deployment {
  const selector = { 'temporal.io/deployment-name': name, 'temporal.io/build-id': buildId };
  return {
    metadata: {
      name: `${name}-${buildId}`.replace(/[^a-zA-Z0-9-]+/g, '-').toLowerCase(),
      namespace: env.namespace,
      labels: selector,
      ownerReferences: [
        {
          apiVersion: 'temporal.io/v1alpha1',
          kind: 'WorkerDeployment',
          name,
          uid: owner.uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      replicas: 1,
      selector: { matchLabels: selector },
      template: {
        metadata: {
          labels: { ...template.metadata.labels, ...selector },
          annotations: { 'temporal.io/connection-spec-hash': 'a1b2', 'temporal.io/pod-template-spec-hash': 'c3d4' },
        },
        spec: {
          ...template.spec,
          containers: template.spec.containers.map((c) => ({
            ...c,
            env: [
              ...c.env,
              { name: 'TEMPORAL_ADDRESS', value: process.env.TEMPORAL_ADDRESS! },
              { name: 'TEMPORAL_NAMESPACE', value: temporalNamespace },
              { name: 'TEMPORAL_DEPLOYMENT_NAME', value: workerDeploymentName(env.namespace, name) },
              { name: 'TEMPORAL_WORKER_BUILD_ID', value: buildId },
            ],
          })),
        },
      },
    },
  };
}

const svc = () => env.connection.workflowService;
/** The worker deployment, which exists (read through the server's continue-as-new window). */
async function describeDeployment(name: string) {
  const res = await describeDeploymentSettled(svc(), temporalNamespace, workerDeploymentName(env.namespace, name));
  if (!res) throw new Error(`worker deployment ${workerDeploymentName(env.namespace, name)} not found`);
  return res;
}

/** Waits until a version's workers poll Temporal. */
async function registered(name: string, buildId: string) {
  await eventually(
    `${buildId} registered`,
    async () => {
      const res = await svc().describeWorkerDeploymentVersion({
        namespace: temporalNamespace,
        deploymentVersion: { deploymentName: workerDeploymentName(env.namespace, name), buildId },
      });
      return (res.versionTaskQueues?.length ?? 0) > 1; // its workflow and activity task queues
    },
    60_000,
    200,
  );
}

/** Routes new work to a version, as the other controller does (its identity). */
async function setCurrentAsTwc(name: string, buildId: string) {
  const { conflictToken } = await describeDeployment(name);
  await svc().setWorkerDeploymentCurrentVersion({
    namespace: temporalNamespace,
    deploymentName: workerDeploymentName(env.namespace, name),
    buildId,
    conflictToken,
    identity: twcIdentity,
  });
}

async function setManager(name: string, managerIdentity: string, identity: string) {
  const { conflictToken } = await describeDeployment(name);
  await svc().setWorkerDeploymentManager({
    namespace: temporalNamespace,
    deploymentName: workerDeploymentName(env.namespace, name),
    managerIdentity,
    conflictToken,
    identity,
  });
}

async function startPinned(name: string, id: string, buildId: string) {
  const handle = await env.client.workflow.start('exampleWork', {
    taskQueue: taskQueueOf(env, name),
    workflowId: `${env.namespace}-${id}`,
  });
  await eventually(
    `${id} on ${buildId}`,
    async () =>
      (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === buildId,
  );
  return handle;
}

type Status = TwdStatus & { message?: string };
async function statusWhere(
  name: string,
  what: string,
  ok: (s: Status) => boolean,
  kind: 'WorkerDeployment' | 'TemporalWorkerDeployment' = 'WorkerDeployment',
  timeoutMs = 90_000,
) {
  return eventually(
    what,
    async () => {
      const s = (await twdStatus(env, name, kind)) as Status | undefined;
      return s && ok(s) ? s : undefined;
    },
    timeoutMs,
    100,
  );
}

const resourceObject = (name: string, plural = 'workerdeployments') =>
  ignoreNotFound(
    env.custom.getNamespacedCustomObject({ group, version, namespace: env.namespace, plural, name }),
  ) as Promise<k8s.KubernetesObject | undefined>;
const deploymentsInNamespace = async () =>
  (await env.apps.listNamespacedDeployment({ namespace: env.namespace })).items;
/** Every activity the rollout ran, scheduled or local. */
const activitiesOf = async (name: string) =>
  activityTypes((await workflowHandle(env, name).fetchHistory()).events ?? []);

test('a worker deployment temporal-worker-controller managed is adopted with no new version; its old version and, after a template change, its current one are sunset like ours', async () => {
  const name = 'orders';
  const [v0, v1] = ['1.0.0-aa11', '1.0.0-bb22']; // its build IDs: image tag + a short hash of the template
  const twcObject = (await env.custom.createNamespacedCustomObject({
    group: 'temporal.io',
    version: 'v1alpha1',
    namespace: env.namespace,
    plural: 'workerdeployments',
    body: {
      apiVersion: 'temporal.io/v1alpha1',
      kind: 'WorkerDeployment',
      metadata: { name },
      spec: migrated(name, 'v1').spec,
    },
  })) as k8s.KubernetesObject;

  // v0, current, with a pinned execution; then v1 current (v0 draining), with one of its own; the manager identity its.
  await env.apps.createNamespacedDeployment({
    namespace: env.namespace,
    body: twcDeployment(name, v0, userTemplate(name, 'v0'), twcObject.metadata as { uid: string }),
  });
  await registered(name, v0);
  await setCurrentAsTwc(name, v0);
  const pinnedV0 = await startPinned(name, 'pinned-v0', v0);
  await env.apps.createNamespacedDeployment({
    namespace: env.namespace,
    body: twcDeployment(name, v1, userTemplate(name, 'v1'), twcObject.metadata as { uid: string }),
  });
  await registered(name, v1);
  await setCurrentAsTwc(name, v1);
  const pinnedV1 = await startPinned(name, 'pinned-v1', v1);
  await setManager(name, twcIdentity, twcIdentity);
  const v1Name = 'orders-1-0-0-bb22';
  const v1Before = await env.apps.readNamespacedDeployment({ name: v1Name, namespace: env.namespace });

  // The migrated YAML (the other controller is stopped: nothing else touches its objects now).
  await apply(env, migrated(name, 'v1'));
  let rampSeen = false;
  const adopted = await eventually(
    'v1 adopted: current, nothing in flight',
    async () => {
      if ((await routing(env, name)).ramping) rampSeen = true;
      const s = (await twdStatus(env, name, 'WorkerDeployment')) as Status | undefined;
      return s?.phase === 'Ready' && s.currentVersion?.buildID === v1 ? s : undefined;
    },
    90_000,
    100,
  );
  expect(rampSeen).toBe(false);
  expect(adopted.targetVersion).toBeUndefined();
  expect(adopted.currentVersion).toMatchObject({ buildID: v1, deploymentName: v1Name });
  expect(adopted.deprecatedVersions?.map((v) => v.buildID)).toEqual([v0]);
  // No new version, no new Deployment, no routing change.
  expect(
    (await describeDeployment(name)).workerDeploymentInfo?.versionSummaries
      ?.map((v) => v.deploymentVersion?.buildId)
      .sort(),
  ).toEqual([v0, v1]);
  expect((await deploymentsInNamespace()).map((d) => d.metadata!.name).sort()).toEqual(['orders-1-0-0-aa11', v1Name]);
  expect((await routing(env, name)).current).toBe(v1);
  const activities = await activitiesOf(name);
  expect(activities).toContain('adoptOrApplyDeployment'); // it found v0 and v1, so it applied nothing
  expect(activities).not.toContain('ensureVersionedDeployment');
  expect(activities).not.toContain('setRamping');
  // v1's Deployment is ours now, untouched otherwise: same spec generation (its pods never rolled), our owner.
  const wd = (await resourceObject(name))!;
  const v1After = await env.apps.readNamespacedDeployment({ name: v1Name, namespace: env.namespace });
  expect(v1After.metadata!.generation).toBe(v1Before.metadata!.generation);
  expect(v1After.metadata!.labels).toMatchObject({
    'glidepath.dev/owner-uid': wd.metadata!.uid,
    'temporal.io/build-id': v1,
  });
  expect(v1After.metadata!.ownerReferences).toEqual([
    expect.objectContaining({
      apiVersion: `${group}/${version}`,
      kind: 'WorkerDeployment',
      name,
      uid: wd.metadata!.uid,
    }),
  ]);
  expect(env.simulator.podCount(env.namespace, v1Name)).toBe(1);
  expect(wd.metadata!.finalizers).toContain(finalizer);
  const events = await env.kc
    .makeApiClient(k8s.CoreV1Api)
    .listNamespacedEvent({ namespace: env.namespace, fieldSelector: `involvedObject.name=${name}` });
  expect(events.items.find((e) => e.reason === 'Adopted')?.involvedObject).toMatchObject({
    kind: 'WorkerDeployment',
    uid: wd.metadata!.uid,
  });

  // The other controller's object can go now: its garbage collection takes none of the adopted Deployments. (A
  // ConfigMap it still owns shows when the collector has dealt with it.)
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedConfigMap({
    namespace: env.namespace,
    body: {
      metadata: {
        name: 'owned-by-twc',
        ownerReferences: [
          { apiVersion: 'temporal.io/v1alpha1', kind: 'WorkerDeployment', name, uid: twcObject.metadata!.uid! },
        ],
      },
    },
  });
  await env.custom.deleteNamespacedCustomObject({
    group: 'temporal.io',
    version: 'v1alpha1',
    namespace: env.namespace,
    plural: 'workerdeployments',
    name,
  });
  await eventually(
    'the garbage collector has dealt with the deleted owner',
    async () =>
      !(await ignoreNotFound(core.readNamespacedConfigMap({ name: 'owned-by-twc', namespace: env.namespace }))),
    120_000,
    500,
  );
  expect((await deploymentsInNamespace()).map((d) => d.metadata!.name).sort()).toEqual(['orders-1-0-0-aa11', v1Name]);

  // v0 drains, then is sunset: scaled down and deleted (its version waits for the manager identity, below).
  await pinnedV0.signal('finish');
  expect(await pinnedV0.result()).toBe(v0);
  await eventually(
    'v0 scaled to 0',
    async () => (await deployments(env, name)).get(v0)?.spec?.replicas === 0 || !(await deployments(env, name)).has(v0),
  );
  await eventually('v0 deleted', async () => !(await deployments(env, name)).has(v0));
  // Recorded once v0's pod has stopped (its worker's shutdown), which can be after the deletion.
  await eventually('the simulator stopped the pod of v0', () =>
    env.simulator.scaleEvents.some((e) => e.buildId === v0 && e.to === 0),
  );

  // A template change: a new build, whose routing waits while the other controller's identity holds the deployment.
  await apply(env, migrated(name, 'v2'));
  const held = await statusWhere(
    name,
    'paused: ManagerIdentityHeld',
    (s) => s.phase === 'Paused' && s.conditions?.[0]?.reason === 'ManagerIdentityHeld',
  );
  expect(held.message).toContain(twcIdentity);
  // Read until it answers: a describe on a loaded server can run out of time.
  await eventually(
    'v1 still current while the identity is held',
    async () => (await routing(env, name)).current === v1,
    30_000,
    500,
  );
  // Handed over, as docs/migration.md says (`temporal worker deployment manager-identity unset`): the rollout goes on.
  await setManager(name, '', 'alice');
  const v2Status = await statusWhere(
    name,
    'v2 current',
    (s) => s.phase === 'Ready' && !!s.currentVersion && s.currentVersion.buildID !== v1,
  );
  const v2 = v2Status.currentVersion!.buildID;
  expect((await routing(env, name)).current).toBe(v2);
  expect(v2Status.deprecatedVersions?.map((v) => v.buildID)).toContain(v1);
  expect((await deployments(env, name)).get(v2)?.metadata?.labels).toMatchObject({ 'glidepath.dev/build-id': v2 });
  await eventually(
    'v0 deleted in Temporal',
    async () =>
      (await versionStatus(env.connection, temporalNamespace, workerDeploymentName(env.namespace, name), v0)) ===
      'NOT_FOUND',
    90_000,
    500,
  );

  // v1, the adopted build, drains and goes the same way.
  await pinnedV1.signal('finish');
  expect(await pinnedV1.result()).toBe(v1);
  await eventually(
    'v1 Deployment deleted',
    async () => !(await deploymentsInNamespace()).some((d) => d.metadata!.name === v1Name),
    60_000,
  );
  await eventually('the simulator stopped the pod of v1', () =>
    env.simulator.scaleEvents.some((e) => e.name === v1Name && e.to === 0),
  );
  await eventually(
    'v1 deleted in Temporal',
    async () =>
      (await versionStatus(env.connection, temporalNamespace, workerDeploymentName(env.namespace, name), v1)) ===
      'NOT_FOUND',
    90_000,
    500,
  );
  await statusWhere(
    name,
    'nothing deprecated',
    (s) => (s.deprecatedVersions ?? []).length === 0 && s.currentVersion?.buildID === v2,
  );
}, 420_000);

test('a WorkerDeployment and a TemporalWorkerDeployment of one name are one worker deployment: the second is refused, and handed over once the first is gone', async () => {
  const name = 'dup';
  await apply(env, resource(env, name, { env: { VERSION: 'v1' } }));
  const first = await statusWhere(
    name,
    'the TemporalWorkerDeployment current',
    (s) => s.phase === 'Ready' && !!s.currentVersion,
    'TemporalWorkerDeployment',
  );
  await apply(env, migrated(name, 'v9'));
  const refused = await statusWhere(name, 'the WorkerDeployment refused', (s) => s.phase === 'InvalidSpec');
  expect(refused.message).toBe(
    `TemporalWorkerDeployment ${env.namespace}/${name} already rolls out the Temporal worker deployment ${env.namespace}/${name}; this WorkerDeployment would be the same one, so it is refused while that exists (delete one of the two)`,
  );
  expect((await resourceObject(name))!.metadata!.finalizers ?? []).not.toContain(finalizer);
  // The first goes on unbothered: same build current, its Deployments its own.
  expect((await twdStatus(env, name))?.currentVersion?.buildID).toBe(first.currentVersion!.buildID);
  expect([...(await deployments(env, name)).values()].map((d) => d.metadata!.ownerReferences?.[0]?.kind)).toEqual([
    'TemporalWorkerDeployment',
  ]);

  env.deleting.add(name); // (the scale-down of its Deployments is the deletion's)
  await env.custom.deleteNamespacedCustomObject({
    group,
    version,
    namespace: env.namespace,
    plural: 'temporalworkerdeployments',
    name,
  });
  await eventually(
    'the TemporalWorkerDeployment gone',
    async () => !(await resourceObject(name, 'temporalworkerdeployments')),
    90_000,
    200,
  );
  const handedOver = await statusWhere(
    name,
    'the WorkerDeployment rolled out',
    (s) => s.phase === 'Ready' && !!s.currentVersion,
  );
  expect(handedOver.currentVersion!.buildID).not.toBe(first.currentVersion!.buildID);
  expect((await resourceObject(name))!.metadata!.finalizers).toContain(finalizer);
  expect([...(await deployments(env, name)).values()].map((d) => d.metadata!.ownerReferences?.[0]?.kind)).toEqual([
    'WorkerDeployment',
  ]);
  expect(await workflowHandle(env, name).query('status')).toMatchObject({
    current: handedOver.currentVersion!.buildID,
  });
}, 300_000);

test('a ClusterConnection serves a WorkerDeployment (missing: ConnectionNotFound until it is created); deleting the resource cleans up under its own kind', async () => {
  const name = 'shared';
  const connectionName = `shared-${env.namespace}`;
  try {
    await apply(
      env,
      migrated(name, 'v1', {
        workerOptions: { connectionRef: { name: connectionName, kind: 'ClusterConnection' }, temporalNamespace },
      }),
    );
    const pending = await statusWhere(
      name,
      'ConnectionNotFound',
      (s) => s.conditions?.[0]?.reason === 'ConnectionNotFound',
    );
    expect(pending.message).toBe(`ClusterConnection ${connectionName} not found`);
    await env.custom.createClusterCustomObject({
      group,
      version,
      plural: 'clusterconnections',
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'ClusterConnection',
        metadata: { name: connectionName },
        spec: { hostPort: process.env.TEMPORAL_ADDRESS },
      },
    });
    const ready = await statusWhere(name, 'current', (s) => s.phase === 'Ready' && !!s.currentVersion);
    const d = (await deployments(env, name)).get(ready.currentVersion!.buildID)!;
    const podEnv = Object.fromEntries((d.spec!.template.spec!.containers[0]!.env ?? []).map((e) => [e.name, e.value]));
    expect(podEnv).toMatchObject({
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
      TEMPORAL_DEPLOYMENT_NAME: workerDeploymentName(env.namespace, name),
    });
    expect(d.metadata!.ownerReferences?.[0]).toMatchObject({ kind: 'WorkerDeployment', name });

    env.deleting.add(name); // (its scale-down is the deletion's)
    await env.custom.deleteNamespacedCustomObject({
      group,
      version,
      namespace: env.namespace,
      plural: 'workerdeployments',
      name,
    });
    await eventually(
      'the WorkerDeployment gone (its finalizer removed by the cleanup)',
      async () => !(await resourceObject(name)),
      90_000,
      200,
    );
    expect((await deployments(env, name)).size).toBe(0);
    await expect(workflowHandle(env, name).result()).resolves.toMatchObject({ problems: [] });
  } finally {
    await env.custom
      .deleteClusterCustomObject({ group, version, plural: 'clusterconnections', name: connectionName })
      .catch(() => {});
  }
}, 180_000);

describe('the new kinds at admission', () => {
  const kubectl = (args: string[], input: string) => {
    try {
      return {
        ok: true,
        out: execFileSync(process.env.GLIDEPATH_KUBECTL!, ['--kubeconfig', process.env.KUBECONFIG!, ...args], {
          input,
          encoding: 'utf8',
          stdio: ['pipe', 'pipe', 'pipe'],
        }),
      };
    } catch (err) {
      return { ok: false, out: String((err as { stderr?: string }).stderr) };
    }
  };
  const dryRun = (obj: unknown) =>
    kubectl(
      ['apply', '--server-side', '--dry-run=server', '--field-manager=migration-test', '-n', env.namespace, '-f', '-'],
      JSON.stringify(obj),
    );

  test.each([
    {
      name: 'replicas in both places, different',
      spec: { replicas: 2 },
      field: 'spec.replicas',
      says: 'spec.deployment.replicas differ',
    },
    {
      name: 'no template anywhere',
      spec: { deployment: { replicas: 1 } },
      field: 'spec.deployment.template',
      says: 'a pod template is required',
    },
    {
      name: 'the deadline not after minReadySeconds',
      spec: {
        minReadySeconds: 30,
        deployment: {
          replicas: 1,
          template: { spec: { containers: [{ name: 'w', image: 'i' }] } },
          progressDeadlineSeconds: 30,
        },
      },
      field: 'spec.deployment.progressDeadlineSeconds',
      says: 'must be greater than minReadySeconds',
    },
    {
      name: 'a selector (Glidepath owns it)',
      spec: {
        deployment: {
          replicas: 1,
          template: { spec: { containers: [{ name: 'w', image: 'i' }] } },
          selector: { matchLabels: { a: 'b' } },
        },
      },
      field: 'spec.deployment.selector',
      says: 'field not declared in schema',
    },
  ])('kube-apiserver refuses a WorkerDeployment: $name, naming $field', ({ spec, field, says }) => {
    const obj = migrated('refused', 'v1');
    const result = dryRun({ ...obj, spec: { ...obj.spec, ...spec } });
    expect(result.ok).toBe(false);
    expect(result.out).toContain(field);
    expect(result.out).toContain(says);
  });

  test('kube-apiserver refuses a Connection with both an mTLS Secret and a CA, naming tls.caCertSecretRef', () => {
    const result = dryRun({
      apiVersion: `${group}/${version}`,
      kind: 'Connection',
      metadata: { name: 'both' },
      spec: { hostPort: 'temporal:7233', mutualTLSSecretRef: { name: 'm' }, tls: { caCertSecretRef: { name: 'ca' } } },
    });
    expect(result.ok).toBe(false);
    expect(result.out).toContain('spec.tls.caCertSecretRef');
  });

  test('two different templates (which CEL cannot compare) pass admission and are refused by the watcher, naming spec.template', async () => {
    const obj = migrated('two-templates', 'v1');
    await apply(env, { ...obj, spec: { ...obj.spec, template: userTemplate('two-templates', 'v2') } });
    const s = await statusWhere('two-templates', 'InvalidSpec', (st) => st.phase === 'InvalidSpec');
    expect(s.message).toBe(
      'spec.template: spec.template (deprecated) and spec.deployment.template differ: set only spec.deployment.template',
    );
    // No rollout was started for it.
    expect(
      await workflowHandle(env, 'two-templates')
        .describe()
        .catch(() => undefined),
    ).toBeUndefined();
  });
});
