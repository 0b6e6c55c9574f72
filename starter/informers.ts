/**
 * The watcher's informers: per watched namespace (or the whole cluster, namespace ''), the resources of both kinds,
 * their connections, the Deployments Glidepath owns and temporal-worker-controller's; ClusterConnections when RBAC
 * lets them be listed. A failed watch is started again with backoff; nothing counts as synced until every informer
 * has listed once, so nothing is judged or written from a cache that has not.
 */
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../api/common.js';
import { connectionKinds, resourceKinds, type ConnectionKind, type ResourceKind } from '../api/kinds.js';
import { statusCode } from '../kube/client.js';
import { ForeignLabels } from '../kube/foreign-deployments.js';
import { Labels, managerName } from '../kube/versioned-deployment.js';
import { makeTrimmedInformer, trimDeployment, trimResource } from './trimmed-cache.js';

export type Resource = k8s.KubernetesObject & { spec?: unknown; status?: unknown };

/** An informer and its cache; `latestResourceVersion` is '' until its list has succeeded. */
export type Cache<T extends k8s.KubernetesObject> = k8s.Informer<T> &
  k8s.ObjectCache<T> & { latestResourceVersion(): string };

type NamespacedConnectionKind = Exclude<ConnectionKind, 'ClusterConnection'>;

/** The informers of one namespace, or of the whole cluster (namespace ''). */
export interface Scope {
  /** TemporalWorkerDeployments and WorkerDeployments. */
  resources: Record<ResourceKind, Cache<Resource>>;
  /** TemporalConnections and Connections. */
  connections: Record<NamespacedConnectionKind, Cache<Resource>>;
  deployments: Cache<k8s.V1Deployment>;
  /** temporal-worker-controller's versioned Deployments (by their label): a name with any is the workflow's to adopt. */
  foreignDeployments: Cache<k8s.V1Deployment>;
}

/** What the informers report. Each object of a resource kind says its kind. */
export interface InformerEvents {
  resource(o: Resource): void;
  resourceGone(o: Resource): void;
  connection(o: Resource, kind: ConnectionKind): void;
  /** Deployment changes (undefined: not watched for signals). */
  deployment?: (d: k8s.V1Deployment, exists: boolean) => void;
  /** Each sighting of a resource (undefined status: it is gone), after the event is handled. */
  seen?: (resource: { namespace: string; name: string }, status: Record<string, unknown> | undefined) => void;
  /** Every informer has listed once. */
  synced(): void;
  log(message: string): void;
}

const resourceKindList = Object.keys(resourceKinds) as ResourceKind[];

export class Informers {
  /** Every informer has listed once: nothing is judged or written from a cache that has not. */
  synced = false;
  /**
   * ClusterConnections, cluster-wide: watched when this watcher may list them (always when it watches every
   * namespace; a namespaced install's Role cannot grant them, and then a resource naming one says so).
   */
  clusterConnections?: Cache<Resource>;
  /** Keyed by namespace; '' holds the cluster-wide informers. */
  private readonly byNamespace = new Map<string, Scope>();
  private readonly custom: k8s.CustomObjectsApi;
  /** The informers whose list has succeeded. */
  private readonly listed = new Set<Cache<k8s.KubernetesObject>>();
  /** Informers whose last list or watch failed, with the error (readiness says so). */
  private readonly failingWatches = new Map<Cache<k8s.KubernetesObject>, string>();
  private stopped = false;

  constructor(
    private readonly kc: k8s.KubeConfig,
    namespaces: string[],
    private readonly events: InformerEvents,
  ) {
    this.custom = kc.makeApiClient(k8s.CustomObjectsApi);
    for (const ns of namespaces) this.byNamespace.set(ns, this.makeScope(ns));
  }

  scopes(): Scope[] {
    return [...this.byNamespace.values()];
  }

  scopeOf(namespace: string): Scope | undefined {
    return this.byNamespace.get(namespace) ?? this.byNamespace.get('');
  }

  /** Every informer, in start order: connections first, so resources find their connection on first sight. */
  private all(): Cache<k8s.KubernetesObject>[] {
    const scopes = this.scopes();
    return [
      ...(this.clusterConnections ? [this.clusterConnections] : []),
      ...scopes.flatMap((s) => Object.values(s.connections)),
      ...scopes.flatMap((s) => Object.values(s.resources)),
      ...scopes.flatMap((s) => [s.deployments, s.foreignDeployments]),
    ] as Cache<k8s.KubernetesObject>[];
  }

  /**
   * Starts the informers: connections first, so resources find their connection on first sight. Resources are
   * handled only once every informer has listed: a resource judged against a cache still empty (its namesake of the
   * other kind not listed yet) could be taken for the only one.
   */
  async start(): Promise<void> {
    if (await this.mayListClusterConnections()) this.clusterConnections = this.makeClusterConnections();
    for (const informer of this.all()) {
      await informer.start();
      this.noteListed(informer);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled(this.all().map((informer) => informer.stop()));
  }

  /** Why the watcher cannot see everything now (a watch failing: a missing CRD, RBAC, the apiserver away), if so. */
  problems(): string | undefined {
    if (this.failingWatches.size === 0) return this.synced ? undefined : 'the informers have not all listed yet';
    const [first] = this.failingWatches.values();
    return `${this.failingWatches.size} watch(es) failing, e.g. ${first}`;
  }

  /**
   * An informer's list succeeded (a failed one leaves it empty, not synced: it is listed again by `restartOnError`).
   * Once every informer has, the watcher is synced and handles every cached resource.
   */
  private noteListed(informer: Cache<k8s.KubernetesObject>): void {
    if (informer.latestResourceVersion() === '') return;
    this.listed.add(informer);
    if (this.synced || !this.all().every((i) => this.listed.has(i))) return;
    this.synced = true;
    this.events.synced();
  }

  private makeScope(namespace: string): Scope {
    const kc = this.kc;
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    // Listing and watching inside the namespace: a namespaced Role allows nothing cluster-wide.
    const at = namespace ? `/namespaces/${namespace}` : '';
    const listCustom = (p: string, kind: string) => async () => {
      const list = (await (namespace
        ? this.custom.listNamespacedCustomObject({ group, version, namespace, plural: p })
        : this.custom.listClusterCustomObject({ group, version, plural: p }))) as k8s.KubernetesListObject<Resource>;
      // A list's items may come without their kind: every object in a cache says which kind it is.
      for (const item of list.items) item.kind ??= kind;
      return list;
    };
    const informerOf = (kind: ResourceKind | NamespacedConnectionKind, p: string) =>
      new k8s.ListWatch(`/apis/${group}/${version}${at}/${p}`, new k8s.Watch(kc), listCustom(p, kind), false);
    const resourceInformerOf = (kind: ResourceKind) =>
      makeTrimmedInformer(
        kc,
        `/apis/${group}/${version}${at}/${resourceKinds[kind].plural}`,
        listCustom(resourceKinds[kind].plural, kind),
        trimResource,
      );
    const selector = `${Labels.managedBy}=${managerName}`;
    const scope: Scope = {
      resources: {
        TemporalWorkerDeployment: resourceInformerOf('TemporalWorkerDeployment'),
        WorkerDeployment: resourceInformerOf('WorkerDeployment'),
      },
      connections: {
        TemporalConnection: informerOf('TemporalConnection', connectionKinds.TemporalConnection.plural),
        Connection: informerOf('Connection', connectionKinds.Connection.plural),
      },
      deployments: makeTrimmedInformer(
        kc,
        `/apis/apps/v1${at}/deployments`,
        () =>
          namespace
            ? apps.listNamespacedDeployment({ namespace, labelSelector: selector })
            : apps.listDeploymentForAllNamespaces({ labelSelector: selector }),
        trimDeployment,
        selector,
      ),
      foreignDeployments: makeTrimmedInformer(
        kc,
        `/apis/apps/v1${at}/deployments`,
        () =>
          namespace
            ? apps.listNamespacedDeployment({ namespace, labelSelector: ForeignLabels.deploymentName })
            : apps.listDeploymentForAllNamespaces({ labelSelector: ForeignLabels.deploymentName }),
        trimDeployment,
        ForeignLabels.deploymentName,
      ),
    };
    // After the event is scheduled, and never throwing into the informer: a gauge must not cost an event.
    const seen = (o: Resource, gone = false) => {
      try {
        this.events.seen?.(
          { namespace: o.metadata!.namespace!, name: o.metadata!.name! },
          gone ? undefined : ((o as { status?: Record<string, unknown> }).status ?? {}),
        );
      } catch (err) {
        this.events.log(`resource gauges not set: ${String(err)}`);
      }
    };
    for (const kind of resourceKindList) {
      const resources = scope.resources[kind];
      const ofKind = (o: Resource) => (o.kind ? o : { ...o, kind });
      resources.on('add', (o) => {
        this.events.resource(ofKind(o));
        seen(o);
      });
      resources.on('update', (o) => {
        this.events.resource(ofKind(o));
        seen(o);
      });
      resources.on('delete', (o) => {
        this.events.resourceGone(ofKind(o));
        seen(o, true);
      });
    }
    for (const kind of ['TemporalConnection', 'Connection'] as const) {
      scope.connections[kind].on('add', (o) => this.events.connection(o, kind));
      scope.connections[kind].on('update', (o) => this.events.connection(o, kind));
    }
    const deployment = this.events.deployment;
    if (deployment) {
      scope.deployments.on('add', (d) => deployment(d, true));
      scope.deployments.on('update', (d) => deployment(d, true));
      scope.deployments.on('delete', (d) => deployment(d, false));
    }
    for (const informer of [
      ...Object.values(scope.connections),
      ...Object.values(scope.resources),
      scope.deployments,
      scope.foreignDeployments,
    ] as Cache<k8s.KubernetesObject>[]) {
      this.restartOnError(informer);
    }
    return scope;
  }

  /**
   * An informer stops on a watch error; start it again after a pause that doubles while the errors go on (1 s to
   * 30 s: a kind whose CRD is missing is not listed ten times a second), back to 1 s after a quiet minute.
   */
  private restartOnError(informer: Cache<k8s.KubernetesObject>): void {
    let delayMs = 1000;
    let lastError = 0;
    let errors = 0;
    informer.on('error', (err) => {
      if (this.stopped) return;
      errors++;
      const now = Date.now();
      delayMs = now - lastError > 60_000 ? 1000 : Math.min(delayMs * 2, 30_000);
      lastError = now;
      this.failingWatches.set(informer, String(err).split('\n')[0]!.slice(0, 200));
      this.events.log(`watch error, restarting in ${delayMs / 1000} s: ${String(err)}`);
      setTimeout(() => {
        const before = errors;
        // A start that lists without a new error is a watch working again.
        void informer.start().then(
          () => {
            this.noteListed(informer);
            if (errors === before) this.failingWatches.delete(informer);
          },
          () => {},
        );
      }, delayMs).unref();
    });
  }

  /** Cluster-wide: yes. Namespaced: whether RBAC lets it list ClusterConnections (one list call, at start). */
  private async mayListClusterConnections(): Promise<boolean> {
    if (this.byNamespace.has('')) return true;
    try {
      await this.custom.listClusterCustomObject({
        group,
        version,
        plural: connectionKinds.ClusterConnection.plural,
        limit: 1,
      });
      return true;
    } catch (err) {
      if (statusCode(err) !== 403 && statusCode(err) !== 404) throw err;
      this.events.log(
        'ClusterConnections are not readable here (a namespaced install): resources that name one are reported, not rolled out',
      );
      return false;
    }
  }

  /** ClusterConnections, cluster-wide: a change re-handles every resource that names it, in any namespace. */
  private makeClusterConnections(): Cache<Resource> {
    const { plural: p } = connectionKinds.ClusterConnection;
    const informer = new k8s.ListWatch(
      `/apis/${group}/${version}/${p}`,
      new k8s.Watch(this.kc),
      async () => {
        const list = (await this.custom.listClusterCustomObject({
          group,
          version,
          plural: p,
        })) as k8s.KubernetesListObject<Resource>;
        for (const item of list.items) item.kind ??= 'ClusterConnection';
        return list;
      },
      false,
    );
    informer.on('add', (o) => this.events.connection(o, 'ClusterConnection'));
    informer.on('update', (o) => this.events.connection(o, 'ClusterConnection'));
    this.restartOnError(informer as Cache<k8s.KubernetesObject>);
    return informer;
  }
}
