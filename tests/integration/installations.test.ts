/**
 * Installations never cross, on one Temporal namespace:
 * 1. two namespaced installations, each on its default task queue and manager identity, roll out their own
 *    resources: every activity and workflow task of a rollout ran in its own installation's controller;
 * 2. two installations watching one namespace (as a cluster-wide and a namespaced one would): each resource is
 *    rolled out by exactly one, the first to claim it or the one its annotation names; the other says so in an Event
 *    and starts no workflow;
 * 3. two clusters (two kube-apiserver + etcd pairs), a controller each, the same namespace/name in both: the second to
 *    reach the Temporal worker deployment says in its status which installation holds it (ManagerIdentityHeld) and
 *    changes no routing; nothing is torn down in either cluster.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import {
  installationAnnotation,
  installationManagerIdentity,
  installationTaskQueue,
  rolloutWorkflowId,
} from '../../api/names.js';
import { startKube, type KubeServer } from '../../scripts/servers/kube-server.js';
import { stopProcesses } from '../../scripts/servers/processes.js';
import { startController, type Controller } from '../../worker/controller.js';
import {
  apply,
  deployments,
  eventually,
  resource,
  routing,
  startRolloutEnv,
  twdStatus,
  type RolloutEnv,
} from '../harness/rollout-env.js';

const EventType = temporal.api.enums.v1.EventType;
const temporalNamespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const envs: RolloutEnv[] = [];
const controllers: Controller[] = [];
let kube2: KubeServer | undefined;
let dir: string | undefined;

afterAll(async () => {
  await Promise.all(controllers.map((c) => c.stop()));
  await Promise.all(envs.map((e) => e.stop()));
  if (kube2) await stopProcesses(kube2.processes.slice().reverse());
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function env(label: string, opts: Parameters<typeof startRolloutEnv>[1] = {}): Promise<RolloutEnv> {
  const e = await startRolloutEnv(label, opts);
  envs.push(e);
  return e;
}

/** A controller of its own identity watching `namespaces`, with no task queue or manager identity given. */
async function controller(
  e: RolloutEnv,
  identity: string,
  opts: { installation?: string; namespaces?: string[] } = {},
): Promise<Controller> {
  const c = await startController({
    kubeConfig: e.kc,
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: temporalNamespace },
    identity,
    namespaces: opts.namespaces ?? [e.namespace],
    timings: { drainPollMaxMs: 1000 },
    ...(opts.installation ? { installation: opts.installation } : {}),
  });
  controllers.push(c);
  return c;
}

/** The identities of the workers that started the workflow's tasks and activities, over all its runs. */
async function workerIdentities(client: Client, workflowId: string): Promise<Set<string>> {
  const seen = new Set<string>();
  const { raw } = await client.workflow.getHandle(workflowId).describe();
  let runId: string | undefined = raw.workflowExecutionInfo?.firstRunId ?? undefined;
  while (runId) {
    const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    for (const e of events) {
      const identity = e.activityTaskStartedEventAttributes?.identity ?? e.workflowTaskStartedEventAttributes?.identity;
      if (identity) seen.add(identity);
    }
    const next = events.find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
    runId = next?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return seen;
}

const annotationOf = async (e: RolloutEnv, name: string) =>
  (
    (await e.custom.getNamespacedCustomObject({
      group: 'glidepath.dev',
      version: 'v1alpha1',
      namespace: e.namespace,
      plural: 'temporalworkerdeployments',
      name,
    })) as k8s.KubernetesObject
  ).metadata?.annotations?.[installationAnnotation];

const eventsOf = async (e: RolloutEnv, name: string, reason: string) =>
  (
    await e.kc
      .makeApiClient(k8s.CoreV1Api)
      .listNamespacedEvent({ namespace: e.namespace, fieldSelector: `involvedObject.name=${name},reason=${reason}` })
  ).items;

async function exists(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** v1 applied and current, then v2: current with v1 sunset. Returns the status. */
async function rollOutTwice(e: RolloutEnv, name: string) {
  await apply(e, resource(e, name, { env: { VERSION: 'v1' } }));
  const v1 = await eventually(
    `${e.namespace}/${name}: v1 current`,
    async () => (await twdStatus(e, name))?.currentVersion?.buildID,
    120_000,
  );
  await apply(e, resource(e, name, { env: { VERSION: 'v2' } }));
  return eventually(
    `${e.namespace}/${name}: v2 current, v1 sunset`,
    async () => {
      const s = await twdStatus(e, name);
      return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1 && (await deployments(e, name)).size === 1
        ? s
        : undefined;
    },
    120_000,
  );
}

test('two namespaced installations on one Temporal namespace each roll out their own resources, in their own controllers', async () => {
  const [a, b] = await Promise.all([
    env('inst-a', { inProcessController: false }),
    env('inst-b', { inProcessController: false }),
  ]);
  expect(a.installation).not.toBe(b.installation);
  const [ca, cb] = [
    await controller(a, `controller-a-${a.namespace}`),
    await controller(b, `controller-b-${b.namespace}`),
  ];
  expect({ installation: ca.installation, taskQueue: ca.taskQueue }).toEqual({
    installation: a.installation,
    taskQueue: installationTaskQueue(a.installation),
  });
  expect(cb.taskQueue).toBe(installationTaskQueue(b.installation));

  const [sa, sb] = await Promise.all([rollOutTwice(a, 'orders'), rollOutTwice(b, 'orders')]);
  for (const [e, s, c, identity] of [
    [a, sa, ca, `controller-a-${a.namespace}`],
    [b, sb, cb, `controller-b-${b.namespace}`],
  ] as const) {
    const workflowId = rolloutWorkflowId(e.installation, e.namespace, 'orders');
    expect(s.rolloutWorkflow).toEqual({ workflowId, temporalNamespace });
    expect(await annotationOf(e, 'orders')).toBe(c.installation);
    expect([...(await workerIdentities(e.client, workflowId))]).toEqual([identity]);
    expect(e.violations).toEqual([]);
  }
  expect(await managerOf(a, 'orders')).toBe(installationManagerIdentity(a.installation));
  expect(await managerOf(b, 'orders')).toBe(installationManagerIdentity(b.installation));
});

/** The manager identity Temporal records on the resource's worker deployment. */
async function managerOf(e: RolloutEnv, name: string): Promise<string | undefined> {
  const res = await e.connection.workflowService.describeWorkerDeployment({
    namespace: temporalNamespace,
    deploymentName: `${e.namespace}/${name}`,
  });
  return res.workerDeploymentInfo?.managerIdentity || undefined;
}

test('of two installations watching one namespace, one rolls each resource out: the first to claim it, or the one its annotation names', async () => {
  const e = await env('claim', { inProcessController: false });
  const suffix = randomBytes(3).toString('hex');
  const [x, y] = [`x-${suffix}`, `y-${suffix}`];
  const cx = await controller(e, `controller-x-${suffix}`, { installation: x });
  const cy = await controller(e, `controller-y-${suffix}`, { installation: y });
  expect(cx.taskQueue).not.toBe(cy.taskQueue);

  // No annotation: the first claim wins; the other installation starts nothing and says who has it.
  await apply(e, resource(e, 'first', { env: { VERSION: 'v1' } }));
  await eventually('first: Ready', async () => (await twdStatus(e, 'first'))?.phase === 'Ready', 120_000);
  const winner = await annotationOf(e, 'first');
  expect([x, y]).toContain(winner);
  const loser = winner === x ? y : x;
  const said = await eventually(
    'the other installation says who rolls it out',
    async () => (await eventsOf(e, 'first', 'ManagedByAnotherInstallation'))[0],
  );
  expect(said.message).toBe(
    `installation ${winner} rolls out this resource (annotation ${installationAnnotation}); installation ${loser} leaves it alone`,
  );
  expect(await exists(e.client, rolloutWorkflowId(loser, e.namespace, 'first'))).toBe(false);
  expect((await twdStatus(e, 'first'))?.rolloutWorkflow?.workflowId).toBe(
    rolloutWorkflowId(winner!, e.namespace, 'first'),
  );

  // The author names one (the second to start, so not a race won by chance): that one rolls it out.
  const chosen = resource(e, 'chosen', { env: { VERSION: 'v1' } });
  await apply(e, {
    ...chosen,
    metadata: { ...chosen.metadata, annotations: { [installationAnnotation]: y } },
  } as typeof chosen);
  await eventually('chosen: Ready', async () => (await twdStatus(e, 'chosen'))?.phase === 'Ready', 120_000);
  const toldChosen = await eventually(
    'x says y rolls it out',
    async () => (await eventsOf(e, 'chosen', 'ManagedByAnotherInstallation'))[0],
  );
  expect(toldChosen.message).toBe(
    `installation ${y} rolls out this resource (annotation ${installationAnnotation}); installation ${x} leaves it alone`,
  );
  expect(await exists(e.client, rolloutWorkflowId(x, e.namespace, 'chosen'))).toBe(false);
  expect([...(await workerIdentities(e.client, rolloutWorkflowId(y, e.namespace, 'chosen')))]).toEqual([
    `controller-y-${suffix}`,
  ]);
  expect(e.violations).toEqual([]);
});

test('two clusters with the same namespace/name on one Temporal namespace: the second says who manages the worker deployment and touches nothing', async () => {
  const one = await env('clusters', { controller: { taskQueue: undefined, identity: 'cluster-one' } });
  dir = join(process.cwd(), '.dev/test-servers', `installations-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  kube2 = await startKube({ dir, crds: true });
  const two = await env('clusters', {
    kubeconfig: kube2.kubeconfig,
    namespace: one.namespace,
    controller: { taskQueue: undefined, identity: 'cluster-two' },
  });
  expect(two.installation).not.toBe(one.installation);

  await apply(one, resource(one, 'shared', { env: { VERSION: 'v1' } }));
  const v1 = await eventually(
    'cluster one: v1 current',
    async () => (await twdStatus(one, 'shared'))?.currentVersion?.buildID,
    120_000,
  );
  // The same namespace/name in the other cluster, at another build: its rollout needs a routing change.
  await apply(two, resource(two, 'shared', { env: { VERSION: 'v2' } }));
  const held = await eventually(
    'cluster two: ManagerIdentityHeld, naming the holder',
    async () => {
      const s = await twdStatus(two, 'shared');
      return s?.conditions?.find((c) => c.type === 'Ready' && c.reason === 'ManagerIdentityHeld');
    },
    120_000,
  );
  expect(held.message).toContain(installationManagerIdentity(one.installation));

  // Temporal routes as cluster one left it; cluster one is Ready on v1, its Deployment and workflow still there.
  expect(await routing(one, 'shared')).toEqual({ current: v1, percentage: 0 });
  expect(await managerOf(one, 'shared')).toBe(installationManagerIdentity(one.installation));
  const s1 = await twdStatus(one, 'shared');
  expect({ phase: s1?.phase, current: s1?.currentVersion?.buildID }).toEqual({ phase: 'Ready', current: v1 });
  expect([...(await deployments(one, 'shared')).keys()]).toEqual([v1]);
  expect(
    (await one.client.workflow.getHandle(rolloutWorkflowId(one.installation, one.namespace, 'shared')).describe())
      .status.name,
  ).toBe('RUNNING');
  // Each cluster's workflow ran in its own cluster's controller only.
  expect([
    ...(await workerIdentities(one.client, rolloutWorkflowId(one.installation, one.namespace, 'shared'))),
  ]).toEqual(['cluster-one']);
  expect([
    ...(await workerIdentities(two.client, rolloutWorkflowId(two.installation, two.namespace, 'shared'))),
  ]).toEqual(['cluster-two']);
  expect([...one.violations, ...two.violations]).toEqual([]);
});
