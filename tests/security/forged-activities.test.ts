/**
 * Forged activities against real servers: an attacker with Temporal access only runs a Worker of their own, whose
 * workflow schedules every activity the controller registers, on the controller's task queues, with arguments of
 * their choosing (tests/security/forged-calls.ts says which, and what each must come to). Every activity takes its
 * authority from the apiserver, never from its arguments: each forged call is refused (`Refused`), or finds nothing
 * to do; `readGateInput` is not registered any more. Afterwards nothing changed in Kubernetes or in Temporal routing,
 * nothing was written outside what the resource declares, no Secret or ConfigMap of the other namespace was read,
 * nothing connected to the test's listener, and a real apply of v2 still rolls out.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { WorkflowNotFoundError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import { group, version } from '../../api/common.js';
import { rolloutWorkflowId } from '../../api/names.js';
import { Labels } from '../../kube/versioned-deployment.js';
import { waitsTaskQueue } from '../../workflows/task-queues.js';
import {
  deployments,
  plural,
  resource,
  taskQueueOf,
  twdStatus,
  workflowHandle,
  apply,
} from '../harness/rollout-env.js';
import type { ForgedCall, ForgedOutcome } from './attacker-workflows.js';
import {
  forgedBuild,
  forgedCalls,
  forgedGateRunId,
  forgedGateType,
  forgedImage,
  specGate,
  type Attack,
  type Owner,
} from './forged-calls.js';
import {
  byKube,
  forge,
  forgeStandalone,
  readyWith,
  snapshot,
  startSecurityWorld,
  tns,
  uidOf,
  type Audit,
  type SecurityWorld,
} from './security-env.js';

const { EventType } = proto.temporal.api.enums.v1;
const name = 'orders';
const elsewhere = 'forged-elsewhere'; // the other namespace: a resource, its connection, a Secret and a ConfigMap
const secret = 'forged-api-key';
const configMap = 'forged-gate-input';
const kind = 'TemporalWorkerDeployment';

let world: SecurityWorld;
let victim: Owner;
let outcomes: ForgedOutcome[] = [];
let standalone: ForgedOutcome[] = [];
let attacks: Attack[] = [];
let queue = '';

beforeAll(async () => {
  world = await startSecurityWorld('forged-activities');
  const { env } = world;
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: elsewhere } } });
  await core.createNamespacedSecret({
    namespace: elsewhere,
    body: { metadata: { name: secret }, stringData: { apiKey: 'stolen' } },
  });
  await core.createNamespacedConfigMap({
    namespace: elsewhere,
    body: { metadata: { name: configMap }, data: { input: '{"stolen":true}' } },
  });
  // A resource there that no installation claims: its connection names the listener and the Secret.
  await env.custom.createNamespacedCustomObject({
    group,
    version,
    namespace: elsewhere,
    plural: 'temporalconnections',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'TemporalConnection',
      metadata: { name: 'forged', namespace: elsewhere },
      spec: { hostPort: world.trapHostPort, apiKeySecretRef: { name: secret, key: 'apiKey' } },
    },
  });
  const spec = resource(env, 'victim').spec;
  const created = (await env.custom.createNamespacedCustomObject({
    group,
    version,
    namespace: elsewhere,
    plural,
    body: {
      apiVersion: `${group}/${version}`,
      kind,
      metadata: { name: 'victim', namespace: elsewhere },
      spec: { ...spec, workerOptions: { ...spec.workerOptions, connectionRef: { name: 'forged' } } },
    },
  })) as k8s.KubernetesObject;
  victim = { namespace: elsewhere, name: 'victim', uid: created.metadata!.uid!, kind };
}, 180_000);
afterAll(async () => {
  if (world) writeFileSync(join(world.dir, 'forged-outcomes.json'), JSON.stringify({ outcomes, standalone }, null, 2));
  await world?.stop();
});
afterEach(() => expect(world.env.violations).toEqual([]));

/** The resource at `marker`, declaring a gate: the only gate a forged `runGate` may ever run. */
function gated(marker: string) {
  const obj = resource(world.env, name, { env: { VERSION: marker } });
  (obj.spec.rollout as Record<string, unknown>).gate = specGate;
  return obj;
}

/** The activity types a queue's worker says it has (the SDK's answer to an activity type it does not have). */
function registeredOf(outcome: ForgedOutcome | undefined): string[] {
  const listed = outcome?.outcome === 'failed' ? /available activities: (\[.*\])/.exec(outcome.message) : null;
  if (!listed) throw new Error(`no list of registered activities in ${JSON.stringify(outcome)}`);
  return JSON.parse(listed[1]!) as string[];
}

/** Why an outcome is not what the attack must come to, or undefined when it is. */
function mismatch(attack: Attack, outcome: ForgedOutcome, registered: string[]): string | undefined {
  const got = outcome.outcome === 'completed' ? 'completed' : `failed ${outcome.type}: ${outcome.message}`;
  const refused = outcome.outcome === 'failed' && outcome.type === 'Refused';
  const notRegistered = outcome.outcome === 'failed' && outcome.type === 'NotFoundError';
  // An activity no worker has cannot act: not registered is the only outcome it may have, and a harmless one.
  if (!registered.includes(attack.activity) || attack.expect === 'NotRegistered')
    return notRegistered ? undefined : `expected not registered, got ${got}`;
  const ok =
    attack.expect === 'Refused'
      ? refused
      : attack.expect === 'RefusedOrHarmless'
        ? refused || outcome.outcome === 'completed'
        : refused ||
          (outcome.outcome === 'completed' && (outcome.result as { desired?: unknown } | null)?.desired === undefined);
  return ok ? undefined : `expected ${attack.expect}, got ${got}`;
}

/**
 * Runs the attack (`forger` makes the calls, as one workflow of the attacker's or as standalone activities) and
 * checks that nothing changed, was read or was connected to; returns how each call ended.
 */
async function attackWith(
  forger: (calls: ForgedCall[]) => Promise<ForgedOutcome[]>,
  { owner, v1, runId }: { owner: Owner; v1: string; runId: string },
): Promise<ForgedOutcome[]> {
  const { env } = world;
  const victimBefore = await env.custom.getNamespacedCustomObject({
    group,
    version,
    namespace: elsewhere,
    plural,
    name: 'victim',
  });
  const before = await snapshot(env, name);
  const auditFrom = world.auditSize();

  // A probe of each queue (an activity type nobody registers), then every call.
  const probes = [queue, waitsTaskQueue(queue)].map((q) => ({
    id: `probe ${q}`,
    activity: 'noSuchActivity',
    taskQueue: q,
    args: [],
  }));
  const outcomes = await forger([...probes, ...attacks]);
  expect(outcomes.map((o) => o.id)).toEqual([...probes, ...attacks].map((a) => a.id));

  // Kubernetes and Temporal as they were; the same run of the rollout, running, no workflow task failed.
  expect(await snapshot(env, name)).toEqual(before);
  expect(before.resource.phase).toBe('Ready');
  const handle = workflowHandle(env, name);
  const described = await handle.describe();
  expect({ runId: described.runId, status: described.status.name }).toEqual({ runId, status: 'RUNNING' });
  const failedTasks = ((await handle.fetchHistory()).events ?? []).filter(
    (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
  );
  expect(failedTasks.map((e) => `#${e.eventId}`)).toEqual([]);

  // No Deployment of the forged template or build anywhere; nothing in the other namespace; its resource untouched.
  const all = (await env.apps.listDeploymentForAllNamespaces()).items;
  expect(
    all
      .filter((d) => {
        const pod = d.spec?.template.spec;
        return (
          pod?.hostPID ||
          pod?.hostNetwork ||
          pod?.volumes?.some((v) => v.hostPath) ||
          pod?.containers.some((c) => c.image === forgedImage || c.securityContext?.privileged) ||
          d.metadata?.labels?.[Labels.buildId] === forgedBuild
        );
      })
      .map((d) => `${d.metadata?.namespace}/${d.metadata?.name}`),
  ).toEqual([]);
  expect((await env.apps.listNamespacedDeployment({ namespace: elsewhere })).items).toEqual([]);
  expect(
    await env.custom.getNamespacedCustomObject({ group, version, namespace: elsewhere, plural, name: 'victim' }),
  ).toEqual(victimBefore);
  // No gate workflow of the caller's type was started; a forged runGate ran, if anything, the spec's gate and input.
  expect((await env.client.workflow.count(`WorkflowType = "${forgedGateType}"`)).count).toBe(0);
  const forgedRun = env.client.workflow.getHandle(forgedGateRunId(owner, v1));
  const ran = await forgedRun.describe().catch((err: unknown) => {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  });
  if (ran) {
    const started = (await forgedRun.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
    const input = started?.input?.payloads?.map((p) => defaultPayloadConverter.fromPayload(p));
    expect({ type: ran.type, input }).toEqual({ type: specGate.workflowType, input: [specGate.input] });
  }

  // The audit log: since the attack, only what a settled rollout writes (its status, Events, the pods' Deployment
  // status) in its own namespace, and applies of what the resource declares to its own Deployments (the snapshot
  // shows them as they were: the spec's template and replicas); no request for the other namespace's Secret or
  // ConfigMap but the test's creates.
  const own = before.deployments.map((d) => d.name);
  const allowed = (a: Audit) =>
    a.objectRef?.namespace === env.namespace &&
    ((a.objectRef.resource === 'events' && a.verb === 'create') ||
      (a.objectRef.subresource === 'status' &&
        ['temporalworkerdeployments', 'deployments'].includes(a.objectRef.resource ?? '')) ||
      (a.objectRef.resource === 'deployments' &&
        !a.objectRef.subresource &&
        a.verb === 'patch' &&
        own.includes(a.objectRef.name)));
  const events = world.audit(auditFrom).filter((a) => !byKube(a));
  const writes = events.filter((a) => !['get', 'list', 'watch'].includes(a.verb) && !allowed(a));
  expect(writes.map((a) => `${a.verb} ${a.requestURI}`)).toEqual([]);
  const readElsewhere = world
    .audit()
    .filter((a) => !byKube(a) && a.objectRef?.namespace === elsewhere)
    .filter((a) => a.objectRef?.resource === 'secrets' || a.objectRef?.resource === 'configmaps');
  expect(readElsewhere.map((a) => `${a.verb} ${a.requestURI}`)).toEqual([
    `create /api/v1/namespaces/${elsewhere}/secrets`,
    `create /api/v1/namespaces/${elsewhere}/configmaps`,
  ]);
  expect(world.trapConnections()).toBe(0); // nothing connected to the forged Temporal endpoint
  return outcomes;
}

test('an attacker’s own worker schedules every activity with forged arguments: nothing is changed, read or connected to', async () => {
  const { env } = world;
  await apply(env, gated('v1'));
  const v1 = await readyWith(env, name, 'v1');
  const uid = await uidOf(env, name);
  const v1Deployment = (await deployments(env, name)).get(v1)!;
  const handle = workflowHandle(env, name);
  const { runId } = await handle.describe();
  queue = env.controller!.taskQueue;
  const owner: Owner = { namespace: env.namespace, name, uid, kind };
  attacks = forgedCalls({
    queue,
    waitsQueue: waitsTaskQueue(queue),
    owner,
    victim,
    otherUid: { ...owner, uid: 'f0f0f0f0-0000-4000-8000-00000000f0f0' },
    temporalNamespace: tns,
    hostPort: process.env.TEMPORAL_ADDRESS!,
    trapHostPort: world.trapHostPort,
    elsewhere,
    secret,
    configMap,
    v1,
    v1DeploymentUid: v1Deployment.metadata!.uid!,
    rolloutWorkflowId: rolloutWorkflowId(env.installation, env.namespace, name),
    workerQueue: taskQueueOf(env, name),
    spec: gated('v1').spec,
  });
  outcomes = await attackWith((calls) => forge(env, `attacker-${env.namespace}`, calls), { owner, v1, runId });
}, 300_000);

/** The calls whose outcome is not what their attack must come to; and every registered activity was attacked. */
function checkOutcomes(got: ForgedOutcome[]): void {
  expect(got.length).toBeGreaterThan(2); // the attack ran
  const [main, waits] = [registeredOf(got[0]), registeredOf(got[1])];
  const byId = new Map(got.map((o) => [o.id, o]));
  const wrong = attacks.flatMap((a) => {
    const why = mismatch(a, byId.get(a.id)!, a.taskQueue === queue ? main : waits);
    return why ? [`${a.id} on ${a.taskQueue} ${JSON.stringify(a.args).slice(0, 160)}: ${why}`] : [];
  });
  expect(wrong).toEqual([]);
  // Every activity either queue has was attacked; `readGateInput` is on neither.
  const attacked = new Set(attacks.map((a) => a.activity));
  expect([...new Set([...main, ...waits])].filter((a) => !attacked.has(a))).toEqual([]);
  expect([...main, ...waits].filter((a) => a === 'readGateInput')).toEqual([]);
}

test('each forged call is refused (or, where the design allows it, finds nothing to do); readGateInput is gone', () => {
  checkOutcomes(outcomes);
});

test('the same calls as standalone activities (no workflow at all): the same refusals, nothing changed', async () => {
  const { env } = world;
  expect(attacks.length).toBeGreaterThan(0); // the first test made them
  const owner = attacks.find((a) => a.activity === 'scaleDeployment')!.args[0] as Owner;
  const v1 = (await twdStatus(env, name))!.currentVersion!.buildID!;
  const { runId } = await workflowHandle(env, name).describe();
  standalone = await attackWith((calls) => forgeStandalone(`standalone-${env.namespace}`, calls), { owner, v1, runId });
  checkOutcomes(standalone);
}, 300_000);

test('a real apply of v2 still rolls out: v2 becomes current with the spec’s template', async () => {
  const { env } = world;
  const v1 = (await twdStatus(env, name))?.currentVersion?.buildID;
  await apply(env, gated('v2'));
  const v2 = await readyWith(env, name, 'v2');
  expect(v2).not.toBe(v1);
  expect((await deployments(env, name)).get(v2)?.spec?.template.spec?.containers.map((c) => c.image)).toEqual([
    'glidepath/example-worker:1.0.0',
  ]);
  expect(world.trapConnections()).toBe(0);
}, 120_000);
