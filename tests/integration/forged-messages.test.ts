/**
 * Forged messages against real servers: someone with only Temporal access (the `temporal` CLI) signals, updates and
 * starts RolloutWorkflows with payloads of their choosing. None is trusted: `specChanged` and `deleted` only wake the
 * workflow, which reads its resource from the apiserver; controls with malformed payloads are refused; a run started
 * by hand ends touching nothing. Nothing may change in Kubernetes or in Temporal routing, no Secret may be read, no
 * workflow task may fail; a real `kubectl apply` of v2 still rolls out afterwards.
 *
 * Kubernetes here is this file's own (the tier's binaries and `startKube`), started with an audit log of every write
 * and of every Secret request: a read, or a write undone before the end, shows there even when it left no trace.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import proto from '@temporalio/proto';
import { group, version } from '../../api/common.js';
import { rolloutWorkflowId, workerDeploymentName } from '../../api/names.js';
import { finalizer } from '../../api/names.js';
import { managerName } from '../../kube/versioned-deployment.js';
import { describeDeploymentSettled } from '../../temporal/describe.js';
import { activityTypes, completedActivities } from '../../scripts/history.js';
import { startKube, type KubeServer } from '../../scripts/servers/kube-server.js';
import { stopProcesses } from '../../scripts/servers/processes.js';
import { temporalBinary } from '../../scripts/servers/temporal-server.js';
import * as messages from '../../workflows/messages.js';
import {
  deployments,
  eventually,
  plural,
  resource,
  routing,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
} from '../harness/rollout-env.js';

const { EventType } = proto.temporal.api.enums.v1;
const run = promisify(execFile);
const name = 'orders';
const elsewhere = 'forged-elsewhere'; // the other namespace the forged payloads point into
const forgedSecret = 'forged-api-key';
const forgedImage = 'attacker.example/evil:latest';
const tns = process.env.TEMPORAL_NAMESPACE ?? 'default';
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{ group: "", resources: [secrets] }]
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
`;
interface Audit {
  verb: string;
  user: { username: string };
  userAgent?: string;
  requestURI: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
}

let kube: KubeServer;
let dir: string;
let env: RolloutEnv;
let trap: Server;
let trapConnections = 0;
let temporalCli: string;
const savedKubeconfig = process.env.KUBECONFIG;

beforeAll(async () => {
  dir = join(process.cwd(), '.dev/test-servers', `forged-messages-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  kube = await startKube({ dir, crds: true, auditPolicy });
  process.env.KUBECONFIG = kube.kubeconfig;
  temporalCli = temporalBinary();
  // Where the forged connection points: any connection made to it is counted.
  trap = createServer((s) => void (trapConnections++, s.destroy()));
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
  env = await startRolloutEnv('forged');
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: elsewhere } } });
  await core.createNamespacedSecret({
    namespace: elsewhere,
    body: { metadata: { name: forgedSecret }, stringData: { apiKey: 'stolen' } },
  });
}, 180_000);
afterAll(async () => {
  // The rollout's history, for whoever reads a failure (`temporal workflow show --output json`).
  const shown =
    env &&
    (await temporal(
      'workflow',
      'show',
      '--workflow-id',
      rolloutWorkflowId(env.installation, env.namespace, name),
      '--output',
      'json',
    ));
  if (shown) writeFileSync(join(dir, 'rollout-history.json'), shown.out);
  await env?.stop();
  await new Promise((resolve) => (trap ? trap.close(resolve) : resolve(undefined)));
  if (kube) await stopProcesses(kube.processes);
  process.env.KUBECONFIG = savedKubeconfig;
});
afterEach(() => expect(env.violations).toEqual([]));

/** The `temporal` CLI against the test's dev server: whether it exited 0, and what it printed. */
async function temporal(...args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const { stdout, stderr } = await run(
      temporalCli,
      [...args, '--address', process.env.TEMPORAL_ADDRESS!, '--namespace', tns],
      { timeout: 60_000 },
    );
    return { ok: true, out: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, out: `${e.stdout ?? ''}${e.stderr || e.message}` };
  }
}
const input = (payload: unknown) => (payload === undefined ? [] : ['--input', JSON.stringify(payload)]);
const signal = (id: string, signalName: string, payload?: unknown) =>
  temporal('workflow', 'signal', '--workflow-id', id, '--name', signalName, ...input(payload));
const update = (id: string, updateName: string, payload?: unknown) =>
  temporal('workflow', 'update', 'execute', '--workflow-id', id, '--name', updateName, ...input(payload));

/**
 * Runs the jobs `n` at a time: a flood of CLI calls, without 70 processes at once starving the in-process controller
 * (on two cores, all at once stretched the rollout's workflow tasks to 8-15 s, near or past their 10 s timeout).
 */
async function pooled<T>(jobs: (() => Promise<T>)[], n = 6): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < jobs.length) {
        const i = next++;
        results[i] = await jobs[i]!();
      }
    }),
  );
  return results;
}

/** `kubectl apply` of the resource with this version marker. */
async function kubectlApply(marker: string): Promise<void> {
  const file = join(dir, `${name}-${marker}.json`);
  writeFileSync(file, JSON.stringify(resource(env, name, { env: { VERSION: marker } })));
  await run(kube.kubectl, ['--kubeconfig', kube.kubeconfig, 'apply', '-f', file]);
}

async function readyWith(marker: string): Promise<string> {
  return eventually(
    `${marker} Ready and current`,
    async () => {
      const s = await twdStatus(env, name);
      const build = s?.phase === 'Ready' ? s.currentVersion?.buildID : undefined;
      const d = build ? (await deployments(env, name)).get(build) : undefined;
      const marked = d?.spec?.template.spec?.containers[0]?.env?.some(
        (e) => e.name === 'VERSION' && e.value === marker,
      );
      return marked && (await routing(env, name)).current === build ? build : undefined;
    },
    90_000,
  );
}

/** What must not change: the resource's Deployments and object, and its routing in Temporal. */
async function snapshot() {
  const obj = (await env.custom.getNamespacedCustomObject({
    group,
    version,
    namespace: env.namespace,
    plural,
    name,
  })) as k8s.KubernetesObject & { status?: Record<string, unknown> };
  const res = await describeDeploymentSettled(
    env.connection.workflowService,
    tns,
    workerDeploymentName(env.namespace, name),
  );
  const info = res?.workerDeploymentInfo;
  const rc = info?.routingConfig;
  return {
    deployments: [...(await deployments(env, name)).values()].map((d) => ({
      name: d.metadata?.name,
      uid: d.metadata?.uid,
      generation: d.metadata?.generation,
      replicas: d.spec?.replicas,
      images: d.spec?.template.spec?.containers.map((c) => c.image),
      env: d.spec?.template.spec?.containers.map((c) => c.env),
    })),
    resource: {
      generation: obj.metadata?.generation,
      finalizers: obj.metadata?.finalizers,
      deletionTimestamp: obj.metadata?.deletionTimestamp,
      phase: obj.status?.phase,
      current: obj.status?.currentVersion,
      target: obj.status?.targetVersion,
    },
    routing: {
      current: rc?.currentDeploymentVersion?.buildId,
      ramping: rc?.rampingDeploymentVersion?.buildId,
      percentage: rc?.rampingVersionPercentage,
      currentSince: String(rc?.currentVersionChangedTime?.seconds ?? ''),
      rampingSince: String(rc?.rampingVersionChangedTime?.seconds ?? ''),
      conflictToken: Buffer.from(res?.conflictToken ?? []).toString('base64'),
      lastModifier: info?.lastModifierIdentity,
      manager: info?.managerIdentity,
      versions: (info?.versionSummaries ?? []).map((v) => v.deploymentVersion?.buildId).sort(),
    },
  };
}

const auditEvents = (from = 0): Audit[] =>
  readFileSync(join(dir, 'audit.log'))
    .subarray(from)
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Audit);
/** The apiserver's own upkeep (its lease, the `kubernetes` endpoints) and kube-controller-manager's (same admin user). */
const byKube = (a: Audit) =>
  a.user.username === 'system:apiserver' || (a.userAgent?.startsWith('kube-controller-manager/') ?? false);
const historyOf = async (id: string) => (await env.client.workflow.getHandle(id).fetchHistory()).events ?? [];
const refusedCount = async () => (await workflowHandle(env, name).query(messages.status)).refused?.count ?? 0;
const refusalEvents = async () =>
  (
    await env.kc.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({
      namespace: env.namespace,
      fieldSelector: `involvedObject.name=${name},reason=ControlRefused`,
    })
  ).items.length;

test('forged signals, updates and hand-started runs change nothing, read no Secret and fail no workflow task', async () => {
  await kubectlApply('v1');
  const v1 = await readyWith('v1');
  const id = rolloutWorkflowId(env.installation, env.namespace, name);
  const handle = workflowHandle(env, name);
  const { runId } = await handle.describe();
  const uid = (
    (await env.custom.getNamespacedCustomObject({
      group,
      version,
      namespace: env.namespace,
      plural,
      name,
    })) as k8s.KubernetesObject
  ).metadata!.uid!;
  const before = await snapshot();
  const auditFrom = statSync(join(dir, 'audit.log')).size;
  const refusedBefore = await refusedCount();
  const refusalEventsBefore = await refusalEvents();
  const signalsBefore = (await historyOf(id)).filter(
    (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
  ).length;

  // The forgeries: a spec, a connection and a Secret of the attacker's choosing, under the resource's own uid or not.
  const connection = {
    hostPort: `127.0.0.1:${(trap.address() as { port: number }).port}`,
    apiKeySecretRef: { name: forgedSecret, key: 'apiKey', namespace: elsewhere },
  };
  const template = { spec: { containers: [{ name: 'worker', image: forgedImage }] } };
  const spec = {
    ...resource(env, name).spec,
    replicas: 5,
    template,
    workerOptions: { connectionRef: { name: 'forged' }, temporalNamespace: tns },
  };
  const desired = { generation: 999999, spec, buildId: 'forged-build', connection, connectionVersion: '999999', uid };
  const hint = {
    uid,
    kind: 'TemporalWorkerDeployment',
    generation: 999999,
    resourceVersion: '999999',
    connectionVersion: '999999',
    namespace: env.namespace,
    name,
    spec,
    template,
    connection,
    desired,
  };
  const specChangedPayloads = [
    hint,
    { ...hint, uid: 'f0f0f0f0-forged-uid' },
    { ...hint, kind: 'Secret' },
    { ...hint, namespace: elsewhere },
    'a string',
    null,
    {},
    undefined,
  ];
  const controlPayloads = [
    'a string',
    42,
    [{ reason: 'in an array' }],
    { reason: 5, identity: {} },
    { buildId: 7, toBuildId: [], full: 'yes' },
    { requestId: ['x'], reason: 'x'.repeat(2000) },
  ];
  const controls = ['pause', 'resume', 'promote', 'abort', 'rollback', 'retry'];
  const deletedRefused = [undefined, {}, { uid: 42 }];

  const sent = await pooled([
    ...specChangedPayloads.map((p) => () => signal(id, 'specChanged', p)),
    ...controls.flatMap((c) => controlPayloads.map((p) => () => signal(id, c, p))),
    ...[...deletedRefused, { uid: 'f0f0f0f0-forged-uid' }].map((p) => () => signal(id, 'deleted', p)),
  ]);
  const updates = await pooled(
    controls.flatMap((c) => controlPayloads.map((p) => async () => ({ c, p, ...(await update(id, c, p)) }))),
  );
  sent.push(await signal(id, 'deleted', { uid })); // its own uid, last: the object is not being deleted
  expect(sent.filter((s) => !s.ok)).toEqual([]);
  // Every malformed update is refused by its validator (not answered, not taken).
  expect(
    updates.filter((u) => u.ok || !/refused/.test(u.out)).map((u) => `${u.c} ${JSON.stringify(u.p)}: ${u.out}`),
  ).toEqual([]);

  // Runs started by hand: (a) an ID of the attacker's choosing for the real resource, (b) another installation's ID
  // for it, (c) the proper ID of an owner in kube-system that does not exist, (d) a forged state (a teardown under way
  // if trusted, on the forged connection). Each reads the resource once, and ends there.
  const taskQueue = `glidepath-${env.namespace}`;
  const ghost = { namespace: env.namespace, name: 'ghost', uid: 'f0f0f0f0-ghost', kind: 'TemporalWorkerDeployment' };
  const forgedState = {
    owner: ghost,
    phase: 'Progressing',
    reason: 'Deploying',
    message: 'forged',
    since: new Date().toISOString(),
    deleting: false,
    deprecated: [],
    deployments: {},
    read: { resourceVersion: '1', connectionVersion: '999999' },
    desired: { ...desired, uid: ghost.uid },
    current: { buildId: v1 },
    target: { buildId: 'forged-build', generation: 999999 },
    templates: { 'forged-build': template },
    timings: {},
  };
  const byHand = [
    {
      id: `attacker-chosen-${env.namespace}`,
      input: { owner: { namespace: env.namespace, name, uid, kind: 'TemporalWorkerDeployment' } },
      reads: ['readResource'],
    },
    {
      id: rolloutWorkflowId('another-installation', env.namespace, name),
      input: { owner: { namespace: env.namespace, name, uid, kind: 'TemporalWorkerDeployment' } },
      reads: ['readResource'],
    },
    {
      id: rolloutWorkflowId(env.installation, 'kube-system', env.namespace),
      input: { owner: { namespace: 'kube-system', name: env.namespace, uid: 'f0f0f0f0-kube-system' } },
      reads: ['readResource'],
    },
    {
      id: rolloutWorkflowId(env.installation, ghost.namespace, ghost.name),
      input: { owner: ghost, state: forgedState },
      reads: ['readResource'],
    },
  ];
  for (const h of byHand) {
    const started = await temporal(
      'workflow',
      'start',
      '--type',
      'RolloutWorkflow',
      '--task-queue',
      taskQueue,
      '--workflow-id',
      h.id,
      '--input',
      JSON.stringify(h.input),
    );
    expect(started).toMatchObject({ ok: true });
  }

  // Processed: every signal is in the history, the resource was read after the last one, every refused signal shows
  // (the status query's count, its Warning Event written), the runs by hand completed, nothing is pending.
  await eventually('every signal in the history, and a read of the resource after the last', async () => {
    const events = await historyOf(id);
    const signalled = events.filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
    if (signalled.length < signalsBefore + sent.length) return false;
    const last = Number(signalled.at(-1)!.eventId);
    return completedActivities(events).some((a) => a.type === 'readResource' && a.eventId > last);
  });
  const refusals = controls.length * controlPayloads.length + deletedRefused.length;
  await eventually('every refused signal counted', async () => (await refusedCount()) === refusedBefore + refusals);
  await eventually(
    'every refusal written as an Event',
    async () => (await refusalEvents()) === refusalEventsBefore + refusals,
  );
  for (const h of byHand)
    await eventually(
      `${h.id} completed`,
      async () => (await env.client.workflow.getHandle(h.id).describe()).status.name === 'COMPLETED',
    );
  await eventually('nothing pending in the rollout', async () => {
    const { raw } = await handle.describe();
    return !raw.pendingActivities?.length && !raw.pendingWorkflowTask;
  });

  // Kubernetes and Temporal as they were; the same run, running; the phase still Ready, the finalizer still on.
  expect(await snapshot()).toEqual(before);
  expect(before.resource.finalizers).toContain(finalizer);
  const described = await handle.describe();
  expect({ runId: described.runId, status: described.status.name }).toEqual({ runId, status: 'RUNNING' });
  const status = await handle.query(messages.status);
  expect({ phase: status.phase, current: status.current, generation: status.generation }).toEqual({
    phase: 'Ready',
    current: v1,
    generation: before.resource.generation,
  });
  expect((await handle.query(messages.history)).filter((h) => /Delet/.test(`${h.what} ${h.why}`))).toEqual([]);

  // No Deployment with the forged image anywhere, nothing in the other namespace, no Glidepath Event in kube-system
  // or there, no worker deployment in Temporal for the owners of the runs by hand.
  const all = await env.apps.listDeploymentForAllNamespaces();
  expect(
    all.items
      .filter((d) => d.spec?.template.spec?.containers.some((c) => c.image === forgedImage))
      .map((d) => d.metadata?.name),
  ).toEqual([]);
  expect((await env.apps.listNamespacedDeployment({ namespace: elsewhere })).items).toEqual([]);
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  for (const ns of [elsewhere, 'kube-system']) {
    const ours = (await core.listNamespacedEvent({ namespace: ns })).items.filter(
      (e) => e.reportingComponent === managerName || e.source?.component === managerName,
    );
    expect(ours.map((e) => `${ns}: ${e.reason} ${e.message}`)).toEqual([]);
  }
  for (const deploymentName of [
    workerDeploymentName('kube-system', env.namespace),
    workerDeploymentName(ghost.namespace, ghost.name),
  ]) {
    expect(await describeDeploymentSettled(env.connection.workflowService, tns, deploymentName)).toBeUndefined();
  }

  // The audit log: since the attack, only what a settled rollout writes (its status, Events, the pods' Deployment
  // status); and never a request for a Secret but the test's own create (which shows the log records Secrets).
  const allowed = (a: Audit) =>
    a.objectRef?.namespace === env.namespace &&
    ((a.objectRef.resource === 'events' && a.verb === 'create') ||
      (a.objectRef.subresource === 'status' &&
        ['temporalworkerdeployments', 'deployments'].includes(a.objectRef.resource ?? '')));
  const writes = auditEvents(auditFrom).filter((a) => !byKube(a) && a.objectRef?.resource !== 'secrets' && !allowed(a));
  expect(writes.map((a) => `${a.verb} ${a.requestURI}`)).toEqual([]);
  const secrets = auditEvents().filter((a) => a.objectRef?.resource === 'secrets' && !byKube(a));
  expect(secrets.map((a) => `${a.verb} ${a.requestURI}`)).toEqual([`create /api/v1/namespaces/${elsewhere}/secrets`]);
  expect(trapConnections).toBe(0); // nothing connected to the forged Temporal endpoint

  // No workflow task failed, in the rollout or in a run by hand; those ran no activity but the read of their owner.
  for (const wid of [id, ...byHand.map((h) => h.id)]) {
    expect(
      (await historyOf(wid))
        .filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
        .map((e) => `${wid}#${e.eventId}`),
    ).toEqual([]);
  }
  for (const h of byHand)
    expect({ id: h.id, activities: activityTypes(await historyOf(h.id)) }).toEqual({ id: h.id, activities: h.reads });
}, 240_000);

test('a real kubectl apply of v2 still rolls out: v2 becomes current', async () => {
  const v1 = (await twdStatus(env, name))?.currentVersion?.buildID;
  await kubectlApply('v2');
  const v2 = await readyWith('v2');
  expect(v2).not.toBe(v1);
  expect((await deployments(env, name)).get(v2)?.spec?.template.spec?.containers.map((c) => c.image)).toEqual([
    'glidepath/example-worker:1.0.0',
  ]);
  expect((await twdStatus(env, name))?.phase).toBe('Ready');
}, 120_000);
