/**
 * The watcher: thin and stateless. Informers on TemporalWorkerDeployments, TemporalConnections and the
 * Deployments Glidepath owns turn every change into a signal to the resource's RolloutWorkflow (started on
 * first sight with signalWithStart; the workflow ID deduplicates, so several watchers are harmless).
 */
import * as k8s from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { computeBuildId } from '../api/build-id.js';
import { apiVersion, describeIssues, group, version } from '../api/common.js';
import { rolloutWorkflowId } from '../api/names.js';
import { TemporalConnection } from '../api/temporal-connection.js';
import { TemporalWorkerDeployment } from '../api/temporal-worker-deployment.js';
import { asApply, asMergePatch, ignoreNotFound } from '../activities/kubernetes/client.js';
import { createKubernetesActivities, finalizer, observeDeployment, plural, type KubernetesActivities } from '../activities/kubernetes/activities.js';
import { Labels, managerName } from '../activities/kubernetes/versioned-deployment.js';
import { deleted, deploymentObserved, specChanged } from '../workflows/messages.js';
import type { RolloutWorkflow } from '../workflows/rollout.js';
import type { Desired, Timings } from '../workflows/state.js';

export interface WatcherOptions {
  kubeConfig: k8s.KubeConfig;
  /** Client of the controller's own Temporal namespace, where RolloutWorkflows run. */
  client: Client;
  taskQueue: string;
  /** Timings handed to new workflows (tests and demos shorten them). */
  timings?: Partial<Timings>;
  /** Kubernetes namespaces to act on (default: all). */
  namespaces?: string[];
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

type Resource = k8s.KubernetesObject & { spec?: unknown };
const watcherManager = `${managerName}-watcher`;

export class Watcher {
  /** Start/stop/error is all the watcher does with them as a group. */
  private readonly informers: Pick<k8s.Informer<k8s.KubernetesObject>, 'start' | 'stop'>[] = [];
  private readonly resources: k8s.Informer<Resource> & k8s.ObjectCache<Resource>;
  private readonly connections: k8s.Informer<Resource> & k8s.ObjectCache<Resource>;
  private readonly deployments: k8s.Informer<k8s.V1Deployment> & k8s.ObjectCache<k8s.V1Deployment>;
  private readonly custom: k8s.CustomObjectsApi;
  /** The same Kubernetes adapters the activities use (Events). */
  private readonly kube: KubernetesActivities;
  /** What each resource's workflow was last told, so status-only updates signal nothing. */
  private readonly signalled = new Map<string, string>();
  private readonly observed = new Map<string, string>();
  /** The condition the watcher last wrote on each resource. */
  private readonly reported = new Map<string, string>();
  private stopped = false;
  private readonly log: NonNullable<WatcherOptions['log']>;

  constructor(private readonly options: WatcherOptions) {
    const kc = options.kubeConfig;
    this.log = options.log ?? (() => {});
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.kube = createKubernetesActivities(kc);
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    const listCustom = (p: string) => () =>
      this.custom.listClusterCustomObject({ group, version, plural: p }) as Promise<k8s.KubernetesListObject<Resource>>;
    this.resources = k8s.makeInformer(kc, `/apis/${group}/${version}/${plural}`, listCustom(plural));
    this.connections = k8s.makeInformer(kc, `/apis/${group}/${version}/temporalconnections`, listCustom('temporalconnections'));
    const selector = `${Labels.managedBy}=${managerName}`;
    this.deployments = k8s.makeInformer(kc, '/apis/apps/v1/deployments', () => apps.listDeploymentForAllNamespaces({ labelSelector: selector }), selector);

    const watched = (obj: k8s.KubernetesObject) => !options.namespaces || options.namespaces.includes(obj.metadata?.namespace ?? '');
    const guard =
      <T extends k8s.KubernetesObject>(what: string, fn: (obj: T) => Promise<void>) =>
      (obj: T) =>
        void (watched(obj) ? fn(obj) : Promise.resolve()).catch((err: Error) => this.log(`handling ${what} failed: ${err.message}`));
    this.resources.on('add', guard<Resource>('resource', (o) => this.onResource(o)));
    this.resources.on('update', guard<Resource>('resource', (o) => this.onResource(o)));
    this.connections.on('add', guard<Resource>('connection', (o) => this.onConnection(o)));
    this.connections.on('update', guard<Resource>('connection', (o) => this.onConnection(o)));
    this.deployments.on('add', guard<k8s.V1Deployment>('deployment', (d) => this.onDeployment(d, true)));
    this.deployments.on('update', guard<k8s.V1Deployment>('deployment', (d) => this.onDeployment(d, true)));
    this.deployments.on('delete', guard<k8s.V1Deployment>('deployment', (d) => this.onDeployment(d, false)));
    this.informers.push(this.connections, this.resources, this.deployments);
    for (const informer of [this.connections, this.resources, this.deployments] as k8s.Informer<k8s.KubernetesObject>[]) {
      // An informer stops on a watch error; start it again after a pause.
      informer.on('error', (err) => {
        if (this.stopped) return;
        this.log(`watch error, restarting: ${String(err)}`);
        setTimeout(() => void informer.start().catch(() => {}), 1000);
      });
    }
  }

  /** Starts the informers: connections first, so resources find their connection on first sight. */
  async start(): Promise<void> {
    for (const informer of this.informers) await informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled(this.informers.map((i) => i.stop()));
  }

  private async onResource(obj: Resource): Promise<void> {
    const meta = obj.metadata!;
    const [ns, name, uid] = [meta.namespace!, meta.name!, meta.uid!];
    const workflowId = rolloutWorkflowId(ns, name);
    if (meta.deletionTimestamp) {
      if (!meta.finalizers?.includes(finalizer) || this.signalled.get(uid) === 'deleted') return;
      await this.options.client.workflow.signalWithStart<typeof RolloutWorkflow, []>('RolloutWorkflow', {
        workflowId,
        taskQueue: this.options.taskQueue,
        args: [{ owner: { namespace: ns, name, uid }, timings: this.options.timings }],
        signal: deleted,
        signalArgs: [],
      });
      this.signalled.set(uid, 'deleted');
      return;
    }
    const parsed = TemporalWorkerDeployment.safeParse(obj);
    if (!parsed.success) return this.markInvalid(obj, describeIssues(parsed.error));
    const twd = parsed.data;
    const connectionObj = this.connections.get(twd.spec.workerOptions.connectionRef.name, ns);
    const connection = connectionObj && TemporalConnection.safeParse(connectionObj);
    if (!connection?.success) {
      const why = connectionObj
        ? `TemporalConnection ${ns}/${connectionObj.metadata?.name} is invalid: ${connection && !connection.success ? describeIssues(connection.error) : ''}`
        : `TemporalConnection ${ns}/${twd.spec.workerOptions.connectionRef.name} not found`;
      return this.writeCondition(obj, 'Pending', 'ConnectionNotFound', why);
    }
    let buildId: string;
    try {
      buildId = computeBuildId(twd.spec.template, twd.spec.workerOptions.unsafeCustomBuildID);
    } catch (err) {
      return this.markInvalid(obj, `spec.workerOptions.unsafeCustomBuildID: ${(err as Error).message}`);
    }
    const desired: Desired = {
      generation: meta.generation ?? 0,
      spec: twd.spec,
      buildId,
      connection: connection.data.spec,
      connectionVersion: connectionObj!.metadata?.resourceVersion ?? '',
    };
    const key = `${desired.generation}/${desired.connectionVersion}`;
    const previous = this.signalled.get(uid);
    if (previous === key) return;
    this.signalled.set(uid, key); // before awaiting, so the finalizer's own update event does not signal twice
    try {
      await Promise.all([
        meta.finalizers?.includes(finalizer) ? undefined : this.addFinalizer(obj),
        this.options.client.workflow.signalWithStart<typeof RolloutWorkflow, [Desired]>('RolloutWorkflow', {
          workflowId,
          taskQueue: this.options.taskQueue,
          args: [{ owner: { namespace: ns, name, uid }, timings: this.options.timings }],
          signal: specChanged,
          signalArgs: [desired],
        }),
      ]);
    } catch (err) {
      if (this.signalled.get(uid) === key) this.signalled.delete(uid); // the next event tries again
      throw err;
    }
    this.log('signalled specChanged', { workflowId, generation: desired.generation, buildId: desired.buildId });
  }

  /** A connection changed: every resource that uses it hears about it. */
  private async onConnection(conn: Resource): Promise<void> {
    const ns = conn.metadata?.namespace;
    for (const obj of this.resources.list(ns)) {
      const ref = (obj.spec as { workerOptions?: { connectionRef?: { name?: string } } } | undefined)?.workerOptions?.connectionRef?.name;
      if (ref === conn.metadata?.name) await this.onResource(obj);
    }
  }

  private async onDeployment(d: k8s.V1Deployment, exists: boolean): Promise<void> {
    const ns = d.metadata?.namespace ?? '';
    const owner = d.metadata?.labels?.[Labels.workerDeployment];
    if (!owner) return;
    const obs = { ...observeDeployment(d), exists: exists && !d.metadata?.deletionTimestamp };
    const key = `${ns}/${obs.name}`;
    const text = JSON.stringify(obs);
    if (this.observed.get(key) === text) return;
    this.observed.set(key, text);
    if (!exists) this.observed.delete(key);
    try {
      await this.options.client.workflow.getHandle(rolloutWorkflowId(ns, owner)).signal(deploymentObserved, obs);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }

  private async addFinalizer(obj: Resource): Promise<void> {
    const meta = obj.metadata!;
    await this.custom.patchNamespacedCustomObject(
      {
        group, version, plural, namespace: meta.namespace!, name: meta.name!,
        body: { metadata: { finalizers: [...(meta.finalizers ?? []), finalizer], resourceVersion: meta.resourceVersion } },
      },
      asMergePatch,
    );
  }

  /** Invalid spec: say so on the resource and in a Warning Event; no workflow is started or signalled. */
  private async markInvalid(obj: Resource, problems: string): Promise<void> {
    const meta = obj.metadata!;
    const key = `invalid/${meta.generation}`;
    if (this.signalled.get(meta.uid!) === key) return;
    await this.writeCondition(obj, 'InvalidSpec', 'InvalidSpec', problems);
    await this.kube.recordEvent({ namespace: meta.namespace!, name: meta.name!, uid: meta.uid! }, { type: 'Warning', reason: 'InvalidSpec', message: problems });
    this.signalled.set(meta.uid!, key);
  }

  private async writeCondition(obj: Resource, phase: string, reason: string, message: string): Promise<void> {
    const meta = obj.metadata!;
    // Our own status write comes back as an update event: say each thing once per generation, or it never ends.
    const said = `${reason}/${meta.generation}/${message}`;
    if (this.reported.get(meta.uid!) === said) return;
    this.reported.set(meta.uid!, said);
    const at = new Date().toISOString();
    const cond = (type: string) => ({ type, status: 'False', reason, message, lastTransitionTime: at, observedGeneration: meta.generation });
    await ignoreNotFound(
      this.custom.patchNamespacedCustomObjectStatus(
        {
          group, version, plural, namespace: meta.namespace!, name: meta.name!, fieldManager: watcherManager, force: true,
          body: { apiVersion, kind: 'TemporalWorkerDeployment', metadata: { name: meta.name, namespace: meta.namespace }, status: { phase, message, observedGeneration: meta.generation, conditions: [cond('Ready'), cond('Progressing')] } },
        },
        asApply,
      ),
    );
  }
}
