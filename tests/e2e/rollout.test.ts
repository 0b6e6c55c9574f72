/**
 * Glidepath as a user runs it, on a real node: installed with `kubectl apply -k` from its image, rolling a
 * TemporalWorkerDeployment v1 → v2 Progressive through real pods that run the example worker's image with the
 * env Glidepath injects. A workflow pinned to v1 keeps v1's pod alive until it completes there; then v1 drains,
 * is scaled down and deleted. Then the resource, its namespace and Glidepath itself are deleted.
 *
 * The e2e patches to the install (the kustomization below): the image built here (never pulled), the dev
 * server's address, one replica on the host's network (pods reach 127.0.0.1; two would want the same ports) with
 * metrics and probes on free ports, and the apiserver's address for in-cluster config (this node has no
 * kube-proxy to route the `kubernetes` Service).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { createTemporalConnection } from '../../scripts/servers/rollout-namespace.js';
import { Client, Connection } from '@temporalio/client';
import { group, version } from '../../api/common.js';
import { workerDeploymentName } from '../../api/names.js';
import { Labels } from '../../kube/versioned-deployment.js';
import { freePort } from '../../scripts/servers/processes.js';
import { routingInForceOf, routingOf, versionStatus } from '../harness/rollout-env.js';
import { eventually } from '../harness/eventually.js';
import { apiServerHostPort, clients, kubectl, step } from './cluster.js';
import { images } from './servers.js';

const system = 'glidepath-system';
const namespace = `e2e-${randomBytes(3).toString('hex')}`;
const name = 'orders';
const taskQueue = `${namespace}-orders`;
const temporalNamespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const steps = [
  { rampPercentage: 25, pauseDuration: '5s' },
  { rampPercentage: 75, pauseDuration: '5s' },
];
// A CI machine may be several times slower than this one: waits are generous, and end as soon as the condition holds.
const minutes = (n: number) => n * 60_000;

const { kc, core, apps, custom } = clients();
let connection: Connection;
let client: Client;
const watches: AbortController[] = [];

beforeAll(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  client = new Client({ connection, namespace: temporalNamespace });
});
afterAll(async () => {
  for (const w of watches) w.abort();
  await connection?.close();
});

/** The install: k8s-manifests/base and what this node needs (see the file's header). */
async function writeKustomization(): Promise<string> {
  const dir = join(process.env.GLIDEPATH_E2E_DIR!, 'install');
  mkdirSync(dir, { recursive: true });
  const [metricsPort, healthPort] = [await freePort(), await freePort()];
  const api = apiServerHostPort();
  const base = relative(dir, join(process.cwd(), 'k8s-manifests/base'));
  const [image, tag] = images.controller.split(':');
  writeFileSync(
    join(dir, 'kustomization.yaml'),
    JSON.stringify(
      {
        apiVersion: 'kustomize.config.k8s.io/v1beta1',
        kind: 'Kustomization',
        resources: [base],
        images: [{ name: image, newTag: tag }],
        patches: [
          {
            target: { kind: 'ConfigMap', name: 'glidepath-temporal' },
            patch: JSON.stringify([
              {
                op: 'add',
                path: '/data',
                value: { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE: temporalNamespace },
              },
            ]),
          },
          {
            target: { kind: 'Deployment', name: 'glidepath-controller' },
            patch: JSON.stringify([
              { op: 'add', path: '/spec/replicas', value: 1 },
              { op: 'add', path: '/spec/template/spec/hostNetwork', value: true },
              { op: 'add', path: '/spec/template/spec/containers/0/imagePullPolicy', value: 'Never' },
              {
                op: 'add',
                path: '/spec/template/spec/containers/0/args',
                value: [`--metrics-bind-address=:${metricsPort}`, `--health-probe-bind-address=:${healthPort}`],
              },
              {
                op: 'add',
                path: '/spec/template/spec/containers/0/ports',
                value: [
                  { name: 'metrics', containerPort: metricsPort },
                  { name: 'health', containerPort: healthPort },
                ],
              },
            ]),
          },
          {
            // A strategic merge: env entries the base may have are kept.
            patch: JSON.stringify({
              apiVersion: 'apps/v1',
              kind: 'Deployment',
              metadata: { name: 'glidepath-controller', namespace: system },
              spec: {
                template: {
                  spec: {
                    containers: [
                      {
                        name: 'controller',
                        env: [
                          { name: 'KUBERNETES_SERVICE_HOST', value: api.host },
                          { name: 'KUBERNETES_SERVICE_PORT', value: api.port },
                          // The dev server reports drainage within a second: look that often.
                          { name: 'GLIDEPATH_DRAIN_POLL_MAX', value: '1000' },
                        ],
                      },
                    ],
                  },
                },
              },
            }),
          },
        ],
      },
      null,
      2,
    ),
  );
  return dir;
}

/** A TemporalWorkerDeployment whose pods run the example worker's image `image`. */
function workerDeployment(image: string) {
  return {
    apiVersion: `${group}/${version}`,
    kind: 'TemporalWorkerDeployment',
    metadata: { name, namespace },
    spec: {
      replicas: 1,
      workerOptions: { connectionRef: { name: 'local' }, temporalNamespace },
      rollout: { strategy: 'Progressive', steps },
      sunset: { scaledownDelay: '2s', deleteDelay: '3s' },
      template: {
        spec: {
          hostNetwork: true,
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: 'worker',
              image,
              imagePullPolicy: 'Never',
              env: [
                { name: 'EXAMPLE_TASK_QUEUE', value: taskQueue },
                { name: 'EXAMPLE_WORKFLOW_HOLD', value: '1h' }, // open until signalled `finish`
              ],
            },
          ],
        },
      },
    },
  };
}

interface Status {
  phase?: string;
  currentVersion?: { buildID: string };
  deprecatedVersions?: { buildID: string; status?: string }[];
}

async function status(): Promise<Status | undefined> {
  try {
    const obj = (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'temporalworkerdeployments',
      name,
    })) as { status?: Status };
    return obj.status;
  } catch (err) {
    if (err instanceof k8s.ApiException && err.code === 404) return undefined;
    throw err;
  }
}

function routing(): Promise<{ current?: string; ramping?: string; percentage: number }> {
  return routingOf(connection, temporalNamespace, workerDeploymentName(namespace, name));
}

/** The resource's Deployments by build ID. */
async function deployments(): Promise<Map<string, k8s.V1Deployment>> {
  const list = await apps.listNamespacedDeployment({ namespace, labelSelector: `${Labels.workerDeployment}=${name}` });
  return new Map(list.items.map((d) => [d.metadata!.labels![Labels.buildId]!, d]));
}

/** The pods of a version (they carry the build ID label of their Deployment's template). */
async function podsOf(buildId: string): Promise<k8s.V1Pod[]> {
  return (await core.listNamespacedPod({ namespace, labelSelector: `${Labels.buildId}=${buildId}` })).items;
}

const ready = (p: k8s.V1Pod) =>
  p.status?.phase === 'Running' && !!p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

/** Checks that a version's pod is a real one, running the image with the env Glidepath injects. */
async function expectRealPod(buildId: string, image: string) {
  const pods = await eventually(
    `a Ready pod of ${buildId}`,
    async () => {
      const ps = await podsOf(buildId);
      return ps.length === 1 && ready(ps[0]!) ? ps : undefined;
    },
    minutes(3),
    500,
  );
  const pod = pods[0]!;
  const env = Object.fromEntries((pod.spec!.containers[0]!.env ?? []).map((e) => [e.name, e.value]));
  const running = pod.status!.containerStatuses![0]!.state?.running;
  expect({ node: pod.spec!.nodeName, image: pod.spec!.containers[0]!.image, running: !!running }).toEqual({
    node: process.env.GLIDEPATH_E2E_NODE,
    image,
    running: true,
  });
  expect(env).toMatchObject({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: temporalNamespace,
    TEMPORAL_DEPLOYMENT_NAME: workerDeploymentName(namespace, name),
    TEMPORAL_WORKER_BUILD_ID: buildId,
  });
  return pod;
}

/** Every replica count a watch sees for the namespace's Deployments from now on, with when. */
async function watchDeployments(): Promise<{ buildId: string; replicas: number; at: number; type: string }[]> {
  const seen: { buildId: string; replicas: number; at: number; type: string }[] = [];
  const watch = await new k8s.Watch(kc).watch(
    `/apis/apps/v1/namespaces/${namespace}/deployments`,
    {},
    (type, d: k8s.V1Deployment) => {
      seen.push({
        type,
        buildId: d.metadata?.labels?.[Labels.buildId] ?? '',
        replicas: d.spec?.replicas ?? -1,
        at: Date.now(),
      });
    },
    () => {},
  );
  watches.push(watch);
  return seen;
}

test(
  'installed with kubectl apply -k, Glidepath rolls a worker v1 → v2 Progressive through real pods; a pinned workflow finishes on v1 before v1 goes',
  async () => {
    const where = [system, namespace];
    const install = await writeKustomization();

    await step('install Glidepath: kubectl apply --server-side -k', where, async () => {
      kubectl('apply', '--server-side', '-k', install);
    });

    const controller = await step(
      'the controller pod becomes Ready (its image, in-cluster config, Temporal reached)',
      where,
      () =>
        eventually(
          'a Ready controller pod',
          async () => {
            const pods = (
              await core.listNamespacedPod({
                namespace: system,
                labelSelector: 'app.kubernetes.io/name=glidepath-controller',
              })
            ).items;
            return pods.find(ready);
          },
          minutes(3),
          500,
        ),
    );
    expect(controller.spec!.containers[0]!.image).toBe(images.controller);
    expect(controller.spec!.serviceAccountName).toBe('glidepath');

    await step('a namespace with a TemporalConnection to the dev server', where, async () => {
      await core.createNamespace({ body: { metadata: { name: namespace } } });
      await createTemporalConnection(custom, namespace, process.env.TEMPORAL_ADDRESS!);
    });
    const deploymentEvents = await watchDeployments();

    const v1 = await step('v1 (the first version) becomes current, served by a real pod', where, async () => {
      await custom.createNamespacedCustomObject({
        group,
        version,
        namespace,
        plural: 'temporalworkerdeployments',
        body: workerDeployment(images.workerV1),
      });
      const s = await eventually(
        'v1 current',
        async () => {
          const st = await status();
          return st?.phase === 'Ready' && st.currentVersion ? st : undefined;
        },
        minutes(4),
        500,
      );
      const buildId = s.currentVersion!.buildID;
      await expectRealPod(buildId, images.workerV1);
      expect((await routing()).current).toBe(buildId);
      return buildId;
    });

    const pinned = await step("a workflow started now is pinned to v1 (it runs on v1's pod)", where, async () => {
      const handle = await client.workflow.start('exampleWork', { taskQueue, workflowId: `${namespace}-pinned` });
      const on = await eventually(
        'the pinned workflow on a version',
        async () => {
          const d = await handle.describe();
          return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId || undefined;
        },
        minutes(1),
        200,
      );
      expect(on).toBe(v1);
      return handle;
    });

    const { v2, ramps } = await step(
      'v2 (a new image tag) ramps 25 % → 75 % in Temporal, then becomes current',
      where,
      async () => {
        await custom.patchNamespacedCustomObject(
          {
            group,
            version,
            namespace,
            plural: 'temporalworkerdeployments',
            name,
            body: { spec: workerDeployment(images.workerV2).spec },
          },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
        const seen: number[] = [];
        const current = await eventually(
          'v2 current in Temporal',
          async () => {
            const r = await routing();
            if (r.ramping && seen.at(-1) !== r.percentage) seen.push(r.percentage);
            return r.current && r.current !== v1 ? r.current : undefined;
          },
          minutes(5),
          100,
        );
        return { v2: current, ramps: seen };
      },
    );
    expect(ramps).toEqual([25, 75]);
    await expectRealPod(v2, images.workerV2);

    await step("new work runs on v2's pod", where, async () => {
      await routingInForceOf(connection, temporalNamespace, workerDeploymentName(namespace, name));
      const fresh = await client.workflow.start('exampleWork', { taskQueue, workflowId: `${namespace}-fresh` });
      await fresh.signal('finish');
      expect(await fresh.result()).toBe(v2);
    });

    await step('v1 is draining and keeps its Ready pod while the pinned workflow is open', where, async () => {
      await eventually(
        'v1 Draining in Temporal and in the status',
        async () => {
          const st = await status();
          const inStatus = st?.deprecatedVersions?.find((d) => d.buildID === v1)?.status;
          const inTemporal = await versionStatus(
            connection,
            temporalNamespace,
            workerDeploymentName(namespace, name),
            v1,
          );
          return (
            st?.phase === 'Ready' &&
            st.currentVersion?.buildID === v2 &&
            inStatus === 'Draining' &&
            inTemporal === 'DRAINING'
          );
        },
        minutes(2),
        500,
      );
      expect((await deployments()).get(v1)?.spec?.replicas).toBe(1);
      expect((await podsOf(v1)).filter(ready)).toHaveLength(1);
    });

    const pinnedDone = await step('the pinned workflow completes on v1', where, async () => {
      await pinned.signal('finish');
      expect(await pinned.result()).toBe(v1);
      return Date.now();
    });

    await step(
      'v1 drains, is scaled to 0 (its pod stops), then its Deployment and its Temporal version are deleted',
      where,
      async () => {
        await eventually(
          'v1 Deployment and pods gone',
          async () => !(await deployments()).has(v1) && (await podsOf(v1)).length === 0,
          minutes(3),
          500,
        );
        await eventually(
          'v1 deleted in Temporal',
          async () =>
            (await versionStatus(connection, temporalNamespace, workerDeploymentName(namespace, name), v1)) ===
            'NOT_FOUND',
          minutes(1),
          500,
        );
        await eventually(
          'v1 gone from the status',
          async () => ((await status())?.deprecatedVersions ?? []).length === 0,
          minutes(1),
          500,
        );
      },
    );
    // Scaled down only after the pinned workflow had finished, and scaled down before it was deleted.
    const v1Events = deploymentEvents.filter((e) => e.buildId === v1);
    const scaledDown = v1Events.find((e) => e.replicas === 0);
    expect(scaledDown).toBeDefined();
    expect(scaledDown!.at).toBeGreaterThanOrEqual(pinnedDone);
    expect(v1Events.filter((e) => e.type !== 'DELETED' && e.at < pinnedDone).every((e) => e.replicas === 1)).toBe(true);
    expect((await deployments()).get(v2)?.spec?.replicas).toBe(1);

    await step(
      'deleting the resource removes its Deployments, pods and worker deployment, then the resource',
      where,
      async () => {
        await custom.deleteNamespacedCustomObject({
          group,
          version,
          namespace,
          plural: 'temporalworkerdeployments',
          name,
        });
        await eventually(
          'the resource gone (finalizer removed)',
          async () => (await status()) === undefined && (await resourceGone()),
          minutes(2),
          500,
        );
        expect((await deployments()).size).toBe(0);
        await eventually(
          'its pods gone',
          async () => (await core.listNamespacedPod({ namespace })).items.length === 0,
          minutes(2),
          500,
        );
        expect(await routing()).toEqual({ percentage: 0 });
      },
    );

    await step('deleting the namespace', where, async () => {
      await core.deleteNamespace({ name: namespace });
      await eventually('the namespace gone', async () => !(await namespaceExists(namespace)), minutes(2), 500);
    });

    const controllerPod = await watchPodEnd(system, controller.metadata!.name!);
    await step(
      'uninstall: kubectl delete -k; the controller stops on SIGTERM (exit 0) and glidepath-system goes',
      [system],
      async () => {
        kubectl('delete', '-k', install, '--wait=false');
        await eventually('glidepath-system gone', async () => !(await namespaceExists(system)), minutes(3), 500);
      },
    );
    const terminated = (await controllerPod.end)?.containerStatuses?.[0]?.state?.terminated;
    expect({ exitCode: terminated?.exitCode, reason: terminated?.reason }).toEqual({
      exitCode: 0,
      reason: 'Completed',
    });
    expect(kubectl('get', 'crd', '-o', 'name')).not.toContain(group);
  },
  minutes(30),
);

async function resourceGone(): Promise<boolean> {
  try {
    await custom.getNamespacedCustomObject({ group, version, namespace, plural: 'temporalworkerdeployments', name });
    return false;
  } catch (err) {
    return err instanceof k8s.ApiException && err.code === 404;
  }
}

async function namespaceExists(ns: string): Promise<boolean> {
  try {
    await core.readNamespace({ name: ns });
    return true;
  } catch (err) {
    if (err instanceof k8s.ApiException && err.code === 404) return false;
    throw err;
  }
}

/** Watches a pod from now on: resolves with its last status when it is deleted (or the watch ends). */
async function watchPodEnd(ns: string, podName: string): Promise<{ end: Promise<k8s.V1PodStatus | undefined> }> {
  let last: k8s.V1PodStatus | undefined;
  let resolve!: (s: k8s.V1PodStatus | undefined) => void;
  const end = new Promise<k8s.V1PodStatus | undefined>((r) => (resolve = r));
  const watch = await new k8s.Watch(kc).watch(
    `/api/v1/namespaces/${ns}/pods`,
    { fieldSelector: `metadata.name=${podName}` },
    (type, pod: k8s.V1Pod) => {
      last = pod.status;
      if (type === 'DELETED') resolve(last);
    },
    () => resolve(last),
  );
  watches.push(watch);
  return { end };
}
