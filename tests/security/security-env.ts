/**
 * The security tier's world: a Kubernetes of the test file's own (the tier's binaries, `startKube`) with an audit log
 * of every write and of every Secret and ConfigMap request, a rollout env on it (the controller, simulated pods), a
 * TCP listener that counts the connections made to it (where forged arguments point), the `temporal` CLI, and the
 * attacker's own Temporal Worker. A read or a write undone before the end shows in the audit log even when it left
 * no trace.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import type { temporal as proto } from '@temporalio/proto';
import { Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import { group, version } from '../../api/common.js';
import { workerDeploymentName } from '../../api/names.js';
import { describeDeploymentSettled } from '../../temporal/describe.js';
import { localActivityType } from '../../scripts/history.js';
import { startKube, type KubeServer } from '../../scripts/servers/kube-server.js';
import { stopProcesses } from '../../scripts/servers/processes.js';
import { temporalBinary } from '../../scripts/servers/temporal-server.js';
import {
  apply,
  deployments,
  eventually,
  plural,
  resource,
  routing,
  startRolloutEnv,
  taskQueueOf,
  twdStatus,
  type RolloutEnv,
  workflowHandle,
} from '../harness/rollout-env.js';
import type { ForgedCall, ForgedOutcome } from './attacker-workflows.js';

type HistoryEvent = proto.api.history.v1.IHistoryEvent;
type Failure = proto.api.failure.v1.IFailure;

export const tns = process.env.TEMPORAL_NAMESPACE ?? 'default';
const run = promisify(execFile);

const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{ group: "", resources: [secrets, configmaps] }]
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
  - level: None
`;

export interface Audit {
  verb: string;
  user: { username: string };
  userAgent?: string;
  requestURI: string;
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
}

export interface SecurityWorld {
  dir: string;
  kube: KubeServer;
  env: RolloutEnv;
  /** `host:port` of the counting listener. */
  trapHostPort: string;
  /** Connections made to the listener so far. */
  trapConnections(): number;
  /** The audit log's size now: `audit(from)` reads what came after. */
  auditSize(): number;
  audit(from?: number): Audit[];
  stop(): Promise<void>;
}

/**
 * Starts the file's Kubernetes (audit log on), the counting listener and a rollout env on that Kubernetes (`opts`:
 * the rollout env's options, e.g. the controller's timings).
 */
export async function startSecurityWorld(
  label: string,
  opts: Omit<NonNullable<Parameters<typeof startRolloutEnv>[1]>, 'kubeconfig'> = {},
): Promise<SecurityWorld> {
  const dir = join(process.cwd(), '.dev/test-servers', `security-${label}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const savedKubeconfig = process.env.KUBECONFIG;
  const kube = await startKube({ dir, crds: true, auditPolicy });
  process.env.KUBECONFIG = kube.kubeconfig;
  let connections = 0;
  const trap: Server = createServer((s) => void (connections++, s.destroy()));
  await new Promise<void>((resolve) => trap.listen(0, '127.0.0.1', resolve));
  let env: RolloutEnv;
  try {
    env = await startRolloutEnv(label, { ...opts, kubeconfig: kube.kubeconfig });
  } catch (err) {
    trap.close();
    await stopProcesses(kube.processes);
    throw err;
  }
  const auditFile = join(dir, 'audit.log');
  return {
    dir,
    kube,
    env,
    trapHostPort: `127.0.0.1:${(trap.address() as { port: number }).port}`,
    trapConnections: () => connections,
    auditSize: () => statSync(auditFile).size,
    audit: (from = 0) =>
      readFileSync(auditFile)
        .subarray(from)
        .toString()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Audit),
    async stop() {
      await env.stop();
      await new Promise((resolve) => trap.close(resolve));
      await stopProcesses(kube.processes);
      process.env.KUBECONFIG = savedKubeconfig;
    },
  };
}

/** The apiserver's own upkeep (its lease, the `kubernetes` endpoints) and kube-controller-manager's (same admin user). */
export const byKube = (a: Audit) =>
  a.user.username === 'system:apiserver' || (a.userAgent?.startsWith('kube-controller-manager/') ?? false);

/** The `temporal` CLI against the tier's dev server: whether it exited 0, and what it printed. */
export async function temporalCli(...args: string[]): Promise<{ ok: boolean; out: string }> {
  try {
    const { stdout, stderr } = await run(
      temporalBinary(),
      [...args, '--address', process.env.TEMPORAL_ADDRESS!, '--namespace', tns],
      { timeout: 60_000 },
    );
    return { ok: true, out: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, out: `${e.stdout ?? ''}${e.stderr || e.message}` };
  }
}

/** Completes a workflow's pending activity by hand with `result` (JSON), as `temporal activity complete` does. */
export const completeByHand = (workflowId: string, activityId: string, result: string) =>
  temporalCli('activity', 'complete', '--workflow-id', workflowId, '--activity-id', activityId, '--result', result);

/** Starts `exampleWork` pinned to the resource's build `buildId`; resolves once it runs there. */
export async function startPinned(env: RolloutEnv, name: string, buildId: string) {
  const pinned = await env.client.workflow.start('exampleWork', {
    taskQueue: taskQueueOf(env, name),
    workflowId: `${env.namespace}-pinned`,
    versioningOverride: { pinnedTo: { deploymentName: workerDeploymentName(env.namespace, name), buildId } },
  });
  await eventually(
    `the pinned execution running on ${buildId}`,
    async () =>
      (await pinned.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === buildId,
  );
  return pinned;
}

/** Writes the resource's rollout history into the world's directory as `file` (for a look after a failure). */
export async function saveHistory(world: SecurityWorld | undefined, name: string, file = 'rollout-history.json') {
  const history =
    world &&
    (await workflowHandle(world.env, name)
      .fetchHistory()
      .catch(() => undefined));
  if (history) writeFileSync(join(world.dir, file), JSON.stringify(history, null, 1));
}

/**
 * v1 Ready with an execution pinned to it, then v2 rolled out to Ready: v1 drains, held by that execution. Returns
 * both builds and the pinned execution.
 */
export async function v2WhileV1Pinned(
  env: RolloutEnv,
  name: string,
  sunset: { scaledownDelay: string; deleteDelay: string },
) {
  await apply(env, resource(env, name, { env: { VERSION: 'v1' }, sunset }));
  const v1 = await readyWith(env, name, 'v1');
  const pinned = await startPinned(env, name, v1);
  await apply(env, resource(env, name, { env: { VERSION: 'v2' }, sunset }));
  const v2 = await readyWith(env, name, 'v2');
  return { v1, v2, pinned };
}

/**
 * The attacker's own Worker (its own connection and task queue, the workflow of ./attacker-workflows.ts) runs one
 * `forgeActivities` workflow with `calls` and returns how each call ended.
 */
export async function forge(env: RolloutEnv, workflowId: string, calls: ForgedCall[]): Promise<ForgedOutcome[]> {
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  try {
    const taskQueue = `attacker-${env.namespace}`;
    const worker = await Worker.create({
      connection,
      namespace: tns,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./attacker-workflows.ts', import.meta.url)),
    });
    return await worker.runUntil(
      env.client.workflow.execute('forgeActivities', {
        taskQueue,
        workflowId,
        args: [calls],
        workflowExecutionTimeout: '3m',
      }) as Promise<ForgedOutcome[]>,
    );
  } finally {
    await connection.close();
  }
}

/**
 * The same calls as standalone activities (Temporal's StartActivityExecution, no workflow at all): each started on
 * its queue with one attempt, then polled until it ends.
 */
export async function forgeStandalone(prefix: string, calls: ForgedCall[]): Promise<ForgedOutcome[]> {
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const service = connection.workflowService;
  try {
    return await Promise.all(
      calls.map(async (call, i): Promise<ForgedOutcome> => {
        const activityId = `${prefix}-${i}`;
        const started: { runId?: string | null } = await service.startActivityExecution({
          namespace: tns,
          activityId,
          activityType: { name: call.activity },
          taskQueue: { name: call.taskQueue },
          input: { payloads: call.args.map((a) => defaultPayloadConverter.toPayload(a)) },
          startToCloseTimeout: msToTs(15_000),
          scheduleToCloseTimeout: msToTs(45_000),
          retryPolicy: { maximumAttempts: 1 },
          identity: 'attacker@elsewhere',
          requestId: activityId,
        });
        for (;;) {
          const { outcome } = await connection.withDeadline(Date.now() + 30_000, () =>
            service.pollActivityExecution({ namespace: tns, activityId, runId: started.runId }),
          );
          const failure = outcome?.failure;
          if (failure) {
            const type =
              failure.applicationFailureInfo?.type ??
              (failure.timeoutFailureInfo ? `Timeout:${failure.timeoutFailureInfo.timeoutType}` : 'unknown');
            return { id: call.id, activity: call.activity, outcome: 'failed', type, message: failure.message ?? '' };
          }
          if (outcome?.result !== undefined && outcome.result !== null) {
            const [result] = (outcome.result.payloads ?? []).map((p) => defaultPayloadConverter.fromPayload(p));
            return { id: call.id, activity: call.activity, outcome: 'completed', result: result ?? null };
          }
        }
      }),
    );
  } finally {
    await connection.close();
  }
}

/** The types along a failure's cause chain (an ApplicationFailure's `type`; its cause's, and so on). */
export function failureTypes(f: Failure | null | undefined): string[] {
  const types: string[] = [];
  for (let at = f; at; at = at.cause) if (at.applicationFailureInfo?.type) types.push(at.applicationFailureInfo.type);
  return types;
}

/** Every activity of a history that failed, scheduled or local: its type, and the failure types along its chain. */
export function failedActivities(events: HistoryEvent[]): { type: string; local: boolean; failureTypes: string[] }[] {
  const byId = new Map(events.map((e) => [String(e.eventId), e]));
  const failed: { type: string; local: boolean; failureTypes: string[] }[] = [];
  for (const e of events) {
    const a = e.activityTaskFailedEventAttributes;
    if (a) {
      const scheduled = byId.get(String(a.scheduledEventId))?.activityTaskScheduledEventAttributes;
      failed.push({ type: scheduled?.activityType?.name ?? '', local: false, failureTypes: failureTypes(a.failure) });
    }
    const m = e.markerRecordedEventAttributes;
    const local = localActivityType(e);
    if (m?.failure && local) failed.push({ type: local, local: true, failureTypes: failureTypes(m.failure) });
  }
  return failed;
}

/** The resource's uid as the apiserver has it. */
export async function uidOf(env: RolloutEnv, name: string): Promise<string> {
  const obj = (await env.custom.getNamespacedCustomObject({
    group,
    version,
    namespace: env.namespace,
    plural,
    name,
  })) as k8s.KubernetesObject;
  return obj.metadata!.uid!;
}

/** Waits until the resource is Ready with the build whose pods carry `VERSION=marker` current in Temporal too. */
export async function readyWith(env: RolloutEnv, name: string, marker: string): Promise<string> {
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

/** What no forged call may change: the resource's Deployments, the object itself, and its routing in Temporal. */
export async function snapshot(env: RolloutEnv, name: string) {
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
      template: d.spec?.template.spec,
    })),
    resource: {
      uid: obj.metadata?.uid,
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
      conflictToken: Buffer.from(res?.conflictToken ?? []).toString('base64'),
      lastModifier: info?.lastModifierIdentity,
      manager: info?.managerIdentity,
      versions: (info?.versionSummaries ?? []).map((v) => v.deploymentVersion?.buildId).sort(),
    },
  };
}
