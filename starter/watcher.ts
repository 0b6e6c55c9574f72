/**
 * The watcher: thin and stateless. Informers on the resources (TemporalWorkerDeployments, and WorkerDeployments of
 * temporal-worker-controller ≥ 1.7), their connections (TemporalConnections, Connections, ClusterConnections) and the
 * Deployments Glidepath owns turn every change into a signal to the resource's RolloutWorkflow (started on
 * first sight with signalWithStart; the workflow ID deduplicates, so several watchers are harmless). Either kind is
 * normalized into the one spec the workflow gets (api/kinds.ts).
 *
 * Signals wake the workflow; they are not the truth (it reads the resource itself). A failed signal is retried with
 * backoff, and a periodic resync from the informer caches signals every resource again, so no state depends on one.
 *
 * Control annotations (`glidepath.dev/promote` …, see annotations.ts) are run as updates and then removed.
 *
 * One write of its own, for speed: a brand-new resource's first Deployment, the one its workflow would apply first
 * (./first-deployment.ts).
 *
 * Of two installations that watch one resource, one rolls it out: the one its `glidepath.dev/installation`
 * annotation names, set by its author or else by the first watcher to claim it (a patch fenced on the resourceVersion,
 * with the finalizer). The workflow starts only once the claim is written; the other installation says so in an
 * Event and touches nothing.
 */
import * as k8s from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { group, version } from '../api/common.js';
import {
  clusterConnectionsUnreadable,
  connectionFromObject,
  desiredOf,
  type ConnectionLookupResult,
} from '../api/desired.js';
import { connectionKinds, pluralOf, type ConnectionKind, type ResourceKind } from '../api/kinds.js';
import { connectionAnnotation, finalizer, installationAnnotation, rolloutWorkflowId } from '../api/names.js';
import { canonicalJson } from '../api/build-id.js';
import { asMergePatch } from '../kube/client.js';
import { FirstApplies } from './first-deployment.js';
import { createKubernetesActivities, type KubernetesActivities } from '../activities/kubernetes.js';
import { ForeignLabels } from '../kube/foreign-deployments.js';
import {
  Labels,
  managerName,
  observeDeployment,
  readinessOf,
  wakesRollout,
  type Readiness,
} from '../kube/versioned-deployment.js';
import type { SpecChangedHint } from '../workflows/messages.js';
import type { Owner } from '../api/resource.js';
import { holdsProblemStatus } from './condition-ownership.js';
import { RetryScheduler, type Backoff } from './retry-scheduler.js';
import { Informers, type Cache, type Resource } from './informers.js';
import { connectionRefOf, firstCreated, kindOf, resourceKindList } from './raw-resource.js';
import { AnnotationControls } from './annotation-controls.js';
import { ResourceReports } from './resource-reports.js';
import { RolloutSignals } from './workflow-signals.js';

export interface WatcherOptions {
  kubeConfig: k8s.KubeConfig;
  /** Client of the controller's own Temporal namespace, where RolloutWorkflows run. */
  client: Client;
  taskQueue: string;
  /** This installation's ID: in workflow IDs, and in the claim on each resource it rolls out. */
  installation: string;
  /** Kubernetes namespaces to act on (default: all). Each gets its own informers, so a namespaced Role suffices. */
  namespaces?: string[];
  /** How often every cached resource's spec is sent again (default 1 hour). */
  resyncIntervalMs?: number;
  /**
   * Signal Deployment changes to the workflows (default true). They only make waits end sooner: with false, every
   * `deploymentObserved` is lost, and rollouts still complete on the workflow's own reads (a test proves it).
   */
  signalDeployments?: boolean;
  /** Backoff of a failed signal or status write (default 200 ms doubling to 30 s). */
  retryBackoff?: Backoff;
  log?: (message: string, fields?: Record<string, unknown>) => void;
  /** Each sighting of a resource (undefined: it is gone): the controller's gauges of every resource's status. */
  onResourceSeen?: (resource: { namespace: string; name: string }, status: Record<string, unknown> | undefined) => void;
}

export const watcherManager = `${managerName}-watcher`;
/** The field manager of the watcher's claim (the installation annotation and the finalizer). */
export const claimManager = `${managerName}-claim`;
export const defaultResyncIntervalMs = 60 * 60_000;

export class Watcher {
  private readonly informers: Informers;
  private readonly custom: k8s.CustomObjectsApi;
  /** The same Kubernetes adapters the activities use (Events). */
  private readonly kube: KubernetesActivities;
  private readonly apps: k8s.AppsV1Api;
  private readonly retry: RetryScheduler;
  /** What each resource's workflow was last told, so status-only updates signal nothing. */
  private readonly signalled = new Map<string, string>();
  /** What each Deployment looked like to a rollout's waits, at its last event. */
  private readonly observed = new Map<string, Readiness>();
  private readonly signals: RolloutSignals;
  private readonly reports: ResourceReports;
  private readonly controls: AnnotationControls;
  private resyncTimer?: NodeJS.Timeout;
  private stopped = false;
  private readonly firstApplies: FirstApplies;
  private readonly log: NonNullable<WatcherOptions['log']>;

  constructor(private readonly options: WatcherOptions) {
    const kc = options.kubeConfig;
    this.log = options.log ?? (() => {});
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    this.kube = createKubernetesActivities(kc);
    this.apps = kc.makeApiClient(k8s.AppsV1Api);
    this.retry = new RetryScheduler({
      backoff: options.retryBackoff,
      onRetry: (key, err, delayMs) => this.log(`${key} failed, retrying in ${delayMs} ms: ${(err as Error).message}`),
    });
    this.firstApplies = new FirstApplies({ apps: this.apps, custom: this.custom, log: this.log });
    this.signals = new RolloutSignals(options);
    this.reports = new ResourceReports({
      custom: this.custom,
      kube: this.kube,
      signals: this.signals,
      installation: options.installation,
      fieldManager: watcherManager,
      kindOf,
      log: this.log,
    });
    this.controls = new AnnotationControls({
      retry: this.retry,
      custom: this.custom,
      kube: this.kube,
      client: options.client,
      installation: options.installation,
      fieldManager: watcherManager,
      kindOf,
      latest: (obj) => this.latest(obj),
      log: this.log,
    });
    this.informers = new Informers(kc, options.namespaces?.length ? options.namespaces : [''], {
      resource: (o) => this.scheduleResource(o),
      resourceGone: (o) => this.scheduleResourceGone(o),
      connection: (o, kind) => this.onConnection(o, kind),
      deployment: options.signalDeployments === false ? undefined : (d, exists) => this.scheduleDeployment(d, exists),
      seen: options.onResourceSeen,
      synced: () => this.resync(),
      log: this.log,
    });
  }

  /** Starts the informers; every cached resource is handled once all have listed (`Informers.start`). */
  async start(): Promise<void> {
    await this.informers.start();
    const every = this.options.resyncIntervalMs ?? defaultResyncIntervalMs;
    this.resyncTimer = setInterval(() => this.resync(), every).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resyncTimer);
    this.retry.stop();
    await this.informers.stop();
  }

  /**
   * Wakes every cached resource's workflow again (a hint of what it read already is skipped): a spec lost while Temporal
   * was unreachable arrives at the latest then. Deployment observations are not re-sent: a workflow that waits on
   * a Deployment reads it itself. Connections need no pass of their own (all they do is re-handle their resources).
   * Reads the informer caches only; the apiserver is not listed.
   */
  resync(): void {
    if (this.stopped) return;
    for (const scope of this.informers.scopes()) {
      for (const kind of resourceKindList)
        for (const obj of scope.resources[kind].list()) this.scheduleResource(obj, { force: true });
    }
  }

  /** Why the watcher cannot see everything now (a watch failing: a missing CRD, RBAC, the apiserver away), if so. */
  problems(): string | undefined {
    return this.informers.problems();
  }

  // Work is keyed by uid: a namesake created after a deletion is another object with its own queue.
  private scheduleResource(obj: Resource, opts: { force?: boolean } = {}): void {
    if (!this.informers.synced) return; // `start` handles every cached resource once all are listed
    const m = obj.metadata ?? {};
    this.retry.schedule(`resource ${m.namespace}/${m.name} (${m.uid})`, () =>
      this.onResource(this.latest(obj), opts.force ?? false),
    );
  }

  /** The cached copy of `obj` if newer: a retry must not repeat a write made from a stale resourceVersion. */
  private latest(obj: Resource): Resource {
    const { namespace = '', name = '', uid } = obj.metadata ?? {};
    const cached = this.informers.scopeOf(namespace)?.resources[kindOf(obj)].get(name, namespace);
    return cached && cached.metadata?.uid === uid ? cached : obj;
  }

  private scheduleResourceGone(obj: Resource): void {
    const m = obj.metadata ?? {};
    this.retry.schedule(`resource ${m.namespace}/${m.name} (${m.uid})`, () => this.onResourceGone(obj));
  }

  private scheduleDeployment(d: k8s.V1Deployment, exists: boolean): void {
    this.retry.schedule(`deployment ${d.metadata?.namespace}/${d.metadata?.name}`, () => this.onDeployment(d, exists));
  }

  /**
   * `force`: send the spec even if this generation was sent already (resync). Control annotations are scheduled
   * after the spec was sent, so a promote set together with a new template finds the new build as the target.
   */
  private async onResource(obj: Resource, force: boolean): Promise<void> {
    if (await this.claimedElsewhere(obj)) return;
    const buildId = await this.handOver(obj, force);
    if (!obj.metadata!.deletionTimestamp) this.controls.schedule(obj, buildId);
  }

  /** Hands the spec (or the deletion) to the workflow; the build ID once the spec is valid. */
  private async handOver(obj: Resource, force: boolean): Promise<string | undefined> {
    const meta = obj.metadata!;
    const [ns, name, uid] = [meta.namespace!, meta.name!, meta.uid!];
    if (meta.deletionTimestamp) {
      // With our finalizer the workflow must run to remove it (start it if need be); without, only tell a running one.
      await this.signalDeleted(obj, { start: !!meta.finalizers?.includes(finalizer), force });
      return undefined;
    }
    const kind = kindOf(obj);
    // desiredOf looks the connection up only once the spec parsed and before the build ID: the namesake is checked
    // there, so a parse problem still comes before a refused namesake, and that before its connection or build ID.
    const seen: { namesake?: Resource } = {};
    const result = await desiredOf(obj, kind, (ref, namespace) => {
      seen.namesake = this.olderNamesake(obj);
      return seen.namesake ? { ok: false, problem: '' } : this.connectionOf(ref, namespace);
    });
    if (seen.namesake) {
      const why = `${seen.namesake.kind} ${ns}/${name} already rolls out the Temporal worker deployment ${ns}/${name}; this ${kind} would be the same one, so it is refused while that exists (delete one of the two)`;
      return this.reports.reportProblem(obj, 'InvalidSpec', 'InvalidSpec', why);
    }
    if (!result.ok) return this.reports.reportProblem(obj, result.phase, result.reason, result.problem);
    const { desired } = result;
    const key = `${desired.generation}/${desired.connectionVersion}`;
    if (force || this.signalled.get(uid) !== key) {
      const workflowId = rolloutWorkflowId(this.options.installation, ns, name);
      const owner: Owner = { namespace: ns, name, uid, kind };
      const claimed = meta.annotations?.[installationAnnotation] === this.options.installation;
      const handedOver = claimed && !!meta.finalizers?.includes(finalizer);
      const firstSight =
        !handedOver && obj.status === undefined && !this.hasDeployments(ns, name) && this.firstApplies.available;
      // A wake-up, not the spec: the workflow reads the resource itself before it acts.
      const hint: SpecChangedHint = {
        uid,
        kind,
        generation: desired.generation,
        resourceVersion: meta.resourceVersion ?? '',
        connectionVersion: desired.connectionVersion,
      };
      // allSettled: a retry must not start while the other call is still in flight. On first sight the claim (with
      // the finalizer) fences the first apply (see applyFirstDeployment). The signal waits for the claim only.
      // The connection it rolls out with goes on the resource with the claim, for a deletion that outlives it
      // (kube/read-resource.ts), and is kept current (one its author claimed gets no write for it).
      const connection = canonicalJson(desired.connection);
      const recorded = meta.annotations?.[connectionAnnotation];
      const stale = recorded !== undefined && recorded !== connection;
      const claim = handedOver ? (stale ? this.claim(obj, connection, false) : undefined) : this.claim(obj, connection);
      const results = await Promise.allSettled([
        claim && firstSight && !handedOver ? this.firstApplies.apply(obj, owner, desired, claim) : claim,
        (claimed ? Promise.resolve() : claim!).then(() => this.signals.specChanged(owner, hint)),
      ]);
      for (const r of results) if (r.status === 'rejected') throw r.reason;
      // Set only once sent: work for one resource never runs twice at once, and a failure is retried.
      this.signalled.set(uid, key);
      this.log('signalled specChanged', { workflowId, generation: desired.generation, buildId: desired.buildId });
    }
    // Checked on every event, not only after a signal: the object that shows our condition may come after it.
    if (holdsProblemStatus(meta.managedFields, watcherManager)) await this.reports.releaseProblem(obj);
    return desired.buildId;
  }

  /**
   * The resource of the other kind with this one's namespace and name, if it came first: both would roll out the
   * same Temporal worker deployment (`<namespace>/<name>`, one RolloutWorkflow), so the later one is refused for as
   * long as the first exists. When the first goes, the other is handed over (see `onResourceGone`).
   */
  private olderNamesake(obj: Resource): Resource | undefined {
    const { namespace = '', name = '', uid } = obj.metadata ?? {};
    const other: ResourceKind = kindOf(obj) === 'WorkerDeployment' ? 'TemporalWorkerDeployment' : 'WorkerDeployment';
    const namesake = this.informers.scopeOf(namespace)?.resources[other].get(name, namespace);
    if (!namesake || namesake.metadata?.uid === uid) return undefined;
    return firstCreated(namesake, obj) === namesake ? { ...namesake, kind: other } : undefined;
  }

  /** The connection a resource names, parsed; or why it cannot be used: missing, invalid, or not watched here. */
  private connectionOf(ref: { kind: ConnectionKind; name: string }, namespace: string): ConnectionLookupResult {
    let obj: Resource | undefined;
    if (ref.kind === 'ClusterConnection') {
      if (!this.informers.clusterConnections) return clusterConnectionsUnreadable(ref.name, namespace);
      obj = this.informers.clusterConnections.get(ref.name);
    } else {
      obj = this.informers.scopeOf(namespace)?.connections[ref.kind].get(ref.name, namespace);
    }
    return connectionFromObject(obj, ref, namespace);
  }

  /** The resource is gone (deleted before our finalizer was on it, or after someone removed it). */
  private async onResourceGone(obj: Resource): Promise<void> {
    const uid = obj.metadata!.uid!;
    const holder = obj.metadata?.annotations?.[installationAnnotation];
    if (holder === undefined || holder === this.options.installation)
      await this.signalDeleted(obj, { start: false, force: true });
    this.signalled.delete(uid);
    this.reports.forget(uid);
    this.controls.forget(uid);
    // A namesake of the other kind refused while this one existed is handed over now.
    const { namespace = '', name = '' } = obj.metadata ?? {};
    const other: ResourceKind = kindOf(obj) === 'WorkerDeployment' ? 'TemporalWorkerDeployment' : 'WorkerDeployment';
    const namesake = this.informers.scopeOf(namespace)?.resources[other].get(name, namespace);
    if (namesake) this.scheduleResource(namesake.kind ? namesake : { ...namesake, kind: other }, { force: true });
  }

  /** Tells the workflow to clean up and end (`RolloutSignals.deleted`), once unless `force`. */
  private async signalDeleted(obj: Resource, opts: { start: boolean; force: boolean }): Promise<void> {
    const meta = obj.metadata!;
    const [ns, name, uid] = [meta.namespace!, meta.name!, meta.uid!];
    if (!opts.force && this.signalled.get(uid) === 'deleted') return;
    const workflowId = rolloutWorkflowId(this.options.installation, ns, name);
    if (!(await this.signals.deleted({ namespace: ns, name, uid, kind: kindOf(obj) }, opts.start))) return;
    this.signalled.set(uid, 'deleted');
    this.log('signalled deleted', { workflowId, uid });
  }

  /** A connection changed: every resource that uses it hears about it (of a ClusterConnection: in every namespace). */
  private onConnection(conn: Resource, kind: ConnectionKind): void {
    const clusterScoped = connectionKinds[kind].clusterScoped;
    const ns = conn.metadata?.namespace ?? '';
    const scopes = clusterScoped ? this.informers.scopes() : [this.informers.scopeOf(ns)];
    for (const scope of scopes) {
      for (const resourceKind of resourceKindList) {
        for (const obj of scope?.resources[resourceKind].list(clusterScoped ? undefined : ns) ?? []) {
          const ref = connectionRefOf(obj);
          if (ref.kind === kind && ref.name === conn.metadata?.name) this.scheduleResource(obj);
        }
      }
    }
  }

  private async onDeployment(d: k8s.V1Deployment, exists: boolean): Promise<void> {
    const ns = d.metadata?.namespace ?? '';
    const owner = d.metadata?.labels?.[Labels.workerDeployment];
    if (!owner) return;
    const obs = { ...observeDeployment(d), exists: exists && !d.metadata?.deletionTimestamp };
    const key = `${ns}/${obs.name}`;
    const readiness = readinessOf(obs);
    if (wakesRollout(this.observed.get(key), readiness)) await this.signals.deploymentObserved(ns, owner, obs);
    if (exists) this.observed.set(key, readiness);
    else this.observed.delete(key);
  }

  /** Whether the name has a Deployment, Glidepath's (of any incarnation) or temporal-worker-controller's (the caches'). */
  private hasDeployments(namespace: string, name: string): boolean {
    const scope = this.informers.scopeOf(namespace);
    if (!scope) return true;
    const named = (cache: Cache<k8s.V1Deployment>, label: string) =>
      cache.list(namespace).some((d) => d.metadata?.labels?.[label] === name);
    return (
      named(scope.deployments, Labels.workerDeployment) || named(scope.foreignDeployments, ForeignLabels.deploymentName)
    );
  }

  /**
   * The claim: this installation's annotation and the finalizer, fenced on the resourceVersion seen (of two
   * installations claiming at once, the second is refused with 409 and then sees the first's claim); with the
   * connection it rolls out with. `claiming` false: the connection alone (claimed already, the connection changed).
   */
  private async claim(obj: Resource, connection: string, claiming = true): Promise<void> {
    const meta = obj.metadata!;
    const finalizers = meta.finalizers?.includes(finalizer) ? meta.finalizers : [...(meta.finalizers ?? []), finalizer];
    const annotations = { [installationAnnotation]: this.options.installation, [connectionAnnotation]: connection };
    await this.custom.patchNamespacedCustomObject(
      {
        group,
        version,
        plural: pluralOf(kindOf(obj)),
        namespace: meta.namespace!,
        name: meta.name!,
        body: {
          metadata: claiming
            ? { finalizers, annotations, resourceVersion: meta.resourceVersion }
            : { annotations: { [connectionAnnotation]: connection } },
        },
        fieldManager: claimManager, // its own: managedFields say who claimed it, apart from the watcher's other writes
      },
      asMergePatch,
    );
  }

  /**
   * Whether another installation's annotation is on the resource: then this one touches nothing and says so once,
   * in an Event (Normal: the rule is working).
   */
  private async claimedElsewhere(obj: Resource): Promise<boolean> {
    const meta = obj.metadata!;
    const holder = meta.annotations?.[installationAnnotation];
    if (holder === undefined || holder === this.options.installation) return false;
    this.signalled.delete(meta.uid!); // claimed back one day, the spec is sent again
    await this.reports.claimedElsewhere(obj, holder);
    return true;
  }
}
