/**
 * One integration-test world: a fresh Kubernetes namespace with a TemporalConnection to the test dev server,
 * the controller (in-process unless told otherwise) and the pod simulator, all scoped to that namespace.
 * Every scale-to-zero and every delete of a Deployment is checked against Temporal: a version that is not
 * drained must never lose its pods. Exempt are only deletions that are not Glidepath's choice: of a resource
 * (`deleting`), of the namespace (`deleteNamespace`), and of a Deployment the test deleted itself through
 * `env.apps`. A failure of the check itself is a violation too.
 */
import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { group, version } from '../../api/common.js';
import { pluralOf, type ResourceKind } from '../../api/kinds.js';
import { rolloutWorkflowId, workerDeploymentName } from '../../api/names.js';
import { resolveInstallation } from '../../worker/installation.js';
import { ForeignLabels } from '../../kube/foreign-deployments.js';
import { Labels } from '../../kube/versioned-deployment.js';
import { createRolloutNamespace } from '../../scripts/servers/rollout-namespace.js';
import { ignoreNotFound, asMergePatch, SharedConnectionsKubeConfig } from '../../kube/client.js';
import { describeDeploymentSettled, describeVersionSettled } from '../../temporal/describe.js';
import { routingOf as routingDescribed } from '../../activities/routing.js';
import { installRuntime, startController, type Controller, type ControllerOptions } from '../../worker/controller.js';
import { PodSimulator } from '../../simulator/pod-simulator.js';
import { completedActivities, type CompletedActivity } from '../../scripts/history.js';
import { eventually } from './eventually.js';

export const plural = 'temporalworkerdeployments';

export interface RolloutEnv {
  namespace: string;
  /** The installation ID of the namespace's controllers (in the workflow IDs). */
  installation: string;
  kc: k8s.KubeConfig;
  apps: k8s.AppsV1Api;
  custom: k8s.CustomObjectsApi;
  client: Client;
  connection: Connection;
  controller?: Controller;
  simulator: PodSimulator;
  /** Scale-downs and deletes of versions that were not drained, and failures of that check (must stay empty). */
  violations: string[];
  /** Names of resources being deleted (their scale-down is the deletion's, not a sunset's). */
  deleting: Set<string>;
  /** Deletes the env's namespace (its Deployments' deletion is then the namespace controller's, not Glidepath's). */
  deleteNamespace(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A namespace of its own (`namespace`: that name, as in another cluster), with a TemporalConnection, simulated pods
 * and (unless told not to) a controller watching it. `kubeconfig`: another cluster than the tier's.
 */
export async function startRolloutEnv(
  label: string,
  opts: {
    inProcessController?: boolean;
    controller?: Partial<ControllerOptions>;
    kubeconfig?: string;
    namespace?: string;
  } = {},
): Promise<RolloutEnv> {
  installRuntime('ERROR');
  const kc = new SharedConnectionsKubeConfig(); // as the controller loads it (loadKubeConfig)
  kc.loadFromFile(opts.kubeconfig ?? process.env.KUBECONFIG!);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const namespace = opts.namespace ?? `${label}-${randomBytes(3).toString('hex')}`;
  await createRolloutNamespace(kc, namespace, process.env.TEMPORAL_ADDRESS!);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const address = process.env.TEMPORAL_ADDRESS!;
  const temporalNamespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace: temporalNamespace });
  const violations: string[] = [];
  const deleting = new Set<string>();
  let namespaceDeleting = false;
  // Deployments the test itself deletes through env.apps (a hand-made delete, not Glidepath's): each exempts one delete.
  const deletedByHand = new Set<string>();
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const deleteDeployment = apps.deleteNamespacedDeployment.bind(apps);
  apps.deleteNamespacedDeployment = (param, options) => {
    const key = `${param.namespace}/${param.name}`;
    deletedByHand.add(key);
    return deleteDeployment(param, options).catch((err: unknown) => {
      deletedByHand.delete(key); // nothing was deleted: exempt nothing
      throw err;
    });
  };

  /** Checks that `d`'s version is drained as it loses its pods; records a violation otherwise or when the check fails. */
  const checkDrained = async (d: k8s.V1Deployment, what: string) => {
    // A Deployment of temporal-worker-controller (before Glidepath adopts it) says the same with its labels.
    const owner =
      d.metadata?.labels?.[Labels.workerDeployment] ?? d.metadata?.labels?.[ForeignLabels.deploymentName] ?? '';
    const buildId = d.metadata?.labels?.[Labels.buildId] ?? d.metadata?.labels?.[ForeignLabels.buildId] ?? '';
    if (deleting.has(owner) || namespaceDeleting) return;
    try {
      const deploymentName = workerDeploymentName(namespace, owner);
      const status = await versionStatus(connection, temporalNamespace, deploymentName, buildId);
      // Visibility must show no running execution on the version, whatever its status (NOT_FOUND included: a
      // version deleted right after its Deployment says nothing about the executions it had).
      const open = await client.workflow.count(
        `TemporalWorkerDeploymentVersion = "${deploymentName}:${buildId}" AND ExecutionStatus = "Running"`,
      );
      if ((status !== 'DRAINED' && status !== 'INACTIVE' && status !== 'NOT_FOUND') || open.count > 0) {
        violations.push(
          `${d.metadata?.name} ${what} while its version was ${status} with ${open.count} open executions`,
        );
      }
    } catch (err) {
      violations.push(`${d.metadata?.name} ${what}: the drainage check itself failed: ${(err as Error).message}`);
    }
  };
  const simulator = new PodSimulator(kc, {
    namespaces: [namespace],
    beforeScaleToZero: (d) => checkDrained(d, 'scaled to 0'),
    beforeDelete: (d, pods) => {
      if (deletedByHand.delete(`${d.metadata?.namespace}/${d.metadata?.name}`)) return Promise.resolve();
      return checkDrained(d, `deleted with ${pods} pods`);
    },
  });
  await simulator.start();
  // The namespace's installation ID: the one every controller watching it reads (worker/installation.ts).
  const installation = await resolveInstallation(kc, [namespace]);
  const controller =
    opts.inProcessController === false
      ? undefined
      : await startController({
          kubeConfig: kc,
          temporal: { address, namespace: temporalNamespace },
          taskQueue: `glidepath-${namespace}`,
          installation,
          namespaces: [namespace],
          timings: { drainPollMaxMs: 1000 },
          ...opts.controller,
        });

  return {
    namespace,
    installation,
    kc,
    custom,
    client,
    connection,
    controller,
    simulator,
    violations,
    deleting,
    apps,
    async deleteNamespace() {
      namespaceDeleting = true;
      await core.deleteNamespace({ name: namespace });
    },
    async stop() {
      await controller?.stop();
      await simulator.stop();
      await connection.close();
    },
  };
}

const statusNames = ['UNSPECIFIED', 'INACTIVE', 'CURRENT', 'RAMPING', 'DRAINING', 'DRAINED', 'CREATED'];

/** A version's status as the server reports it (`NOT_FOUND` once deleted). */
export async function versionStatus(
  connection: Connection,
  namespace: string,
  deploymentName: string,
  buildId: string,
): Promise<string> {
  const res = await describeVersionSettled(connection.workflowService, namespace, deploymentName, buildId);
  return res ? (statusNames[res.workerDeploymentVersionInfo?.status ?? 0] ?? 'UNKNOWN') : 'NOT_FOUND';
}

/** Current and ramping build IDs of a resource's worker deployment, as Temporal routes. */
export function routing(
  env: RolloutEnv,
  name: string,
): Promise<{ current?: string; ramping?: string; percentage: number }> {
  return routingOf(
    env.connection,
    process.env.TEMPORAL_NAMESPACE ?? 'default',
    workerDeploymentName(env.namespace, name),
  );
}

/** Current and ramping build IDs of a worker deployment, as Temporal routes (none yet: no current, 0 %). */
export async function routingOf(
  connection: Connection,
  namespace: string,
  deploymentName: string,
): Promise<{ current?: string; ramping?: string; percentage: number }> {
  const { current, ramping, rampPercentage } = routingDescribed(
    await describeDeploymentSettled(connection.workflowService, namespace, deploymentName),
  );
  return { current, ramping, percentage: rampPercentage };
}

/**
 * Waits until a worker deployment's routing is in force on its task queues. On 1.30+ a routing change answers, and a
 * describe shows it, before it has reached them (`routingConfigUpdateState`); older servers apply it at once.
 */
export async function routingInForceOf(
  connection: Connection,
  namespace: string,
  deploymentName: string,
): Promise<void> {
  await eventually(`the routing of ${deploymentName} in force on its task queues`, async () => {
    const res = await describeDeploymentSettled(connection.workflowService, namespace, deploymentName);
    return !routingDescribed(res).propagating;
  });
}

/** `routingInForceOf` for a resource's worker deployment. */
export const routingInForce = (env: RolloutEnv, name: string): Promise<void> =>
  routingInForceOf(
    env.connection,
    process.env.TEMPORAL_NAMESPACE ?? 'default',
    workerDeploymentName(env.namespace, name),
  );

export interface ResourceOptions {
  strategy?: 'AllAtOnce' | 'Progressive' | 'Manual';
  steps?: { rampPercentage: number; pauseDuration?: string }[];
  /** Env of the worker container: its version marker and behaviour. */
  env?: Record<string, string>;
  replicas?: number;
  sunset?: { scaledownDelay: string; deleteDelay: string };
}

/** A TemporalWorkerDeployment whose pods run the example worker on a task queue of its own. */
export function resource(env: RolloutEnv, name: string, o: ResourceOptions = {}) {
  const containerEnv = { EXAMPLE_TASK_QUEUE: taskQueueOf(env, name), EXAMPLE_WORKFLOW_HOLD: '1h', ...o.env };
  return {
    apiVersion: `${group}/${version}`,
    kind: 'TemporalWorkerDeployment',
    metadata: { name, namespace: env.namespace },
    spec: {
      replicas: o.replicas ?? 1,
      rollout: { strategy: o.strategy ?? 'AllAtOnce', ...(o.steps ? { steps: o.steps } : {}) },
      sunset: o.sunset ?? { scaledownDelay: '1s', deleteDelay: '2s' },
      workerOptions: {
        connectionRef: { name: 'local' },
        temporalNamespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
      },
      template: {
        spec: {
          containers: [
            {
              name: 'worker',
              image: 'glidepath/example-worker:1.0.0',
              env: Object.entries(containerEnv).map(([k, v]) => ({ name: k, value: v })),
            },
          ],
        },
      },
    },
  };
}

export function taskQueueOf(env: RolloutEnv, name: string): string {
  return `${env.namespace}-${name}`;
}

/**
 * Creates the resource, or replaces its spec (as `kubectl apply` of a new version would). Any kind Glidepath
 * rolls out (a WorkerDeployment too: `plural` follows `obj.kind`).
 */
export async function apply(
  env: RolloutEnv,
  obj: { kind: string; metadata: { name: string }; spec: unknown },
): Promise<void> {
  const p = pluralOf(obj.kind as ResourceKind);
  const existing = await ignoreNotFound(
    env.custom.getNamespacedCustomObject({
      group,
      version,
      namespace: env.namespace,
      plural: p,
      name: obj.metadata.name,
    }),
  );
  if (!existing) {
    await env.custom.createNamespacedCustomObject({ group, version, namespace: env.namespace, plural: p, body: obj });
  } else {
    await env.custom.patchNamespacedCustomObject(
      { group, version, namespace: env.namespace, plural: p, name: obj.metadata.name, body: { spec: obj.spec } },
      asMergePatch,
    );
  }
}

export interface TwdStatus {
  phase?: string;
  currentVersion?: { buildID: string };
  targetVersion?: { buildID: string; rampPercentage?: number; stepIndex?: number };
  deprecatedVersions?: { buildID: string; status?: string }[];
  lastAbortReason?: string;
  message?: string;
  conditions?: { type: string; status: string; reason: string; message?: string }[];
  rolloutWorkflow?: { workflowId: string; temporalNamespace: string };
}

/** The status of a resource (a TemporalWorkerDeployment unless `kind` says otherwise). */
export async function twdStatus(
  env: RolloutEnv,
  name: string,
  kind: ResourceKind = 'TemporalWorkerDeployment',
): Promise<TwdStatus | undefined> {
  const obj = (await ignoreNotFound(
    env.custom.getNamespacedCustomObject({ group, version, namespace: env.namespace, plural: pluralOf(kind), name }),
  )) as { status?: TwdStatus } | undefined;
  return obj?.status;
}

/** The resource's Deployments, by build ID. */
export async function deployments(env: RolloutEnv, name: string): Promise<Map<string, k8s.V1Deployment>> {
  const list = await env.apps.listNamespacedDeployment({
    namespace: env.namespace,
    labelSelector: `${Labels.workerDeployment}=${name}`,
  });
  return new Map(list.items.map((d) => [d.metadata!.labels![Labels.buildId]!, d]));
}

export function workflowHandle(env: RolloutEnv, name: string) {
  return env.client.workflow.getHandle(rolloutWorkflowId(env.installation, env.namespace, name));
}

/**
 * When the last `n` routing calls (setRamping, setCurrent) of a resource's rollout started and ended, on the
 * server's clock (the workflow's history): how long a step was held is measured there, not by a poller.
 */
export async function routingCallTimes(
  env: RolloutEnv,
  name: string,
  n: number,
): Promise<{ starts: number[]; ends: number[] }> {
  const calls = await routingCallsIn(env, name);
  // A local call's start is its workflow task's: it started later, so a pause measured to it is never longer.
  return {
    starts: calls.map((c) => c.startedAt ?? c.recordedAt).slice(-n),
    ends: calls.map((c) => c.recordedAt).slice(-n),
  };
}

/**
 * The routing calls a resource's rollout made, in order, with their arguments (build, and percentage for a ramp),
 * from the workflow's history: what a short ramp did is read there, not caught by polling the server in its window.
 * A local call's arguments are not in the history: its summary says them ("ramp <build> to <n>%", "make <build> current").
 */
export async function routingCalls(
  env: RolloutEnv,
  name: string,
): Promise<{ call: string; buildId: string; percentage?: number }[]> {
  return (await routingCallsIn(env, name)).map((c) => {
    const said = (c.type === 'setRamping' ? /^ramp (\S+) to (\d+)%$/ : /^make (\S+) current$/).exec(c.summary ?? '');
    const buildId = (c.args ? c.args[1] : said?.[1]) as string;
    return {
      call: c.type,
      buildId,
      ...(c.type === 'setRamping' ? { percentage: Number(c.args ? c.args[2] : said?.[2]) } : {}),
    };
  });
}

/** The completed routing calls (setRamping, setCurrent) of a resource's rollout, scheduled or local. */
async function routingCallsIn(env: RolloutEnv, name: string): Promise<CompletedActivity[]> {
  const events = (await workflowHandle(env, name).fetchHistory()).events ?? [];
  return completedActivities(events).filter((a) => a.type === 'setRamping' || a.type === 'setCurrent');
}

export { eventually } from './eventually.js';
