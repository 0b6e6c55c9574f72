/**
 * Simulated pods: there is no kubelet here, so for every Deployment Glidepath owns (or temporal-worker-controller
 * made: its labels, a worker deployment's version before Glidepath adopts it) this starts as many real
 * versioned Temporal workers as it has replicas, from the pod template's env, stops them on scale-down or
 * delete, and writes the Deployment's status as the deployment controller and kubelet would.
 * `EXAMPLE_NEVER_READY=true` in the env keeps its pods from ever becoming ready.
 * With `light`, each pod is a LightPod (light-pod.ts) instead: a bare versioned poller that completes tiny
 * workflows, so a thousand of them fit in one process (the scale benchmark).
 * Run on its own with `npm run pods` (simulator/main.ts); the integration tests and the demo run it in process.
 */
import * as k8s from '@kubernetes/client-node';
import { asMergePatch, ignoreNotFound } from '../kube/client.js';
import { ForeignLabels } from '../kube/foreign-deployments.js';
import { Labels, managerName } from '../kube/versioned-deployment.js';
import { createExampleWorker } from '../examples/worker/worker.js';
import { LightPod, LightPodConnections } from './light-pod.js';

/** A running simulated pod, real worker or light. */
interface Pod {
  stop(): Promise<void>;
}

interface SimulatedDeployment {
  templateKey: string;
  pods: Pod[];
  /** Serialises reconciles of one Deployment. */
  queue: Promise<void>;
  /** The deletion of this Deployment was reported to `beforeDelete` already (it may be seen twice: Terminating, then gone). */
  deletionSeen?: boolean;
}

/** Scale events the simulator saw, for tests to check ordering against drainage. */
export interface ScaleEvent {
  namespace: string;
  name: string;
  buildId: string;
  from: number;
  to: number;
  at: number;
}

export class PodSimulator {
  private readonly apps: k8s.AppsV1Api;
  private readonly informer: k8s.Informer<k8s.V1Deployment> & k8s.ObjectCache<k8s.V1Deployment>;
  private readonly deployments = new Map<string, SimulatedDeployment>();
  private stopped = false;
  readonly scaleEvents: ScaleEvent[] = [];

  private readonly log: (message: string) => void;
  /** Shared by every light pod of this simulator (light mode only). */
  private readonly lightConnections?: LightPodConnections;

  constructor(
    kc: k8s.KubeConfig,
    private readonly options: {
      log?: (message: string) => void;
      /** Only these namespaces (default: all). */
      namespaces?: string[];
      /**
       * Called before a Deployment that has pods is scaled to 0 (not deleted), while its pods still run: tests check
       * drainage here. The scale-down goes ahead whatever it does (an error is logged): it observes, as a test's
       * checker must, and never holds Kubernetes back.
       */
      beforeScaleToZero?: (deployment: k8s.V1Deployment) => Promise<void>;
      /**
       * Called once for a Deployment that is deleted (gone, or Terminating), before its pods are stopped, with
       * the number of pods it had. Same contract as `beforeScaleToZero`.
       */
      beforeDelete?: (deployment: k8s.V1Deployment, pods: number) => Promise<void>;
      /** Light pods (LightPod) instead of real example workers. */
      light?: boolean;
    } = {},
  ) {
    this.log = options.log ?? (() => {});
    if (options.light) this.lightConnections = new LightPodConnections();
    this.apps = kc.makeApiClient(k8s.AppsV1Api);
    // Every Deployment (one label selector cannot say "ours or the other controller's"); `enqueue` picks.
    this.informer = k8s.makeInformer(kc, '/apis/apps/v1/deployments', () => this.apps.listDeploymentForAllNamespaces());
    this.informer.on('add', (d) => this.enqueue(d, false));
    this.informer.on('update', (d) => this.enqueue(d, false));
    this.informer.on('delete', (d) => this.enqueue(d, true));
    this.informer.on('error', () => {
      if (!this.stopped) setTimeout(() => void this.informer.start().catch(() => {}), 1000);
    });
  }

  async start(): Promise<void> {
    await this.informer.start();
  }

  /** Workers running for a Deployment now. */
  podCount(namespace: string, name: string): number {
    return this.deployments.get(`${namespace}/${name}`)?.pods.length ?? 0;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
    await Promise.allSettled([...this.deployments.values()].map((d) => d.queue));
    await Promise.allSettled([...this.deployments.values()].flatMap((d) => d.pods.map((p) => p.stop())));
    this.deployments.clear();
    await this.lightConnections?.close();
  }

  private enqueue(d: k8s.V1Deployment, deleted: boolean) {
    if (this.options.namespaces && !this.options.namespaces.includes(d.metadata?.namespace ?? '')) return;
    const labels = d.metadata?.labels ?? {};
    if (labels[Labels.managedBy] !== managerName && !labels[ForeignLabels.buildId]) return;
    const key = `${d.metadata!.namespace}/${d.metadata!.name}`;
    let sim = this.deployments.get(key);
    if (!sim) {
      sim = { templateKey: '', pods: [], queue: Promise.resolve() };
      this.deployments.set(key, sim);
    }
    const s = sim;
    s.queue = s.queue
      .then(() => (this.stopped ? undefined : this.reconcile(key, s, d, deleted)))
      .catch((err: Error) => this.log(`pod simulator: ${key}: ${err.message}`));
  }

  private async reconcile(key: string, sim: SimulatedDeployment, d: k8s.V1Deployment, deleted: boolean) {
    const container = d.spec?.template?.spec?.containers?.[0];
    const env: Record<string, string> = {};
    for (const e of container?.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
    const neverReady = env.EXAMPLE_NEVER_READY === 'true';
    const want = deleted || d.metadata?.deletionTimestamp || neverReady ? 0 : (d.spec?.replicas ?? 1);
    const templateKey = JSON.stringify(d.spec?.template);
    const before = sim.pods.length;
    const deleting = deleted || !!d.metadata?.deletionTimestamp;

    // Hooks first, while the pods still run (a template change below would stop them too).
    if (deleting && !sim.deletionSeen) {
      sim.deletionSeen = true;
      await this.observe(key, 'beforeDelete', () => this.options.beforeDelete?.(d, before));
    } else if (!deleting && want === 0 && before > 0) {
      await this.observe(key, 'beforeScaleToZero', () => this.options.beforeScaleToZero?.(d));
    }
    if (templateKey !== sim.templateKey) {
      // A new template rolls every pod (the simulator does it all at once).
      await Promise.all(sim.pods.splice(0).map((p) => p.stop()));
      sim.templateKey = templateKey;
    }
    while (sim.pods.length > want) await sim.pods.pop()!.stop();
    while (sim.pods.length < want) sim.pods.push(await this.startPod(key, env));
    if (before !== sim.pods.length) {
      this.scaleEvents.push({
        namespace: d.metadata!.namespace!,
        name: d.metadata!.name!,
        buildId: d.metadata?.labels?.[Labels.buildId] ?? d.metadata?.labels?.[ForeignLabels.buildId] ?? '',
        from: before,
        to: sim.pods.length,
        at: Date.now(),
      });
      this.log(`pod simulator: ${key} pods ${before} → ${sim.pods.length}`);
    }
    if (deleted) {
      this.deployments.delete(key);
      return;
    }
    await this.writeStatus(d, sim.pods.length);
  }

  /** Pods whose workers wait before they poll (`holdWorkers`), each with the wait. */
  private readonly holds: { held: (env: Record<string, string>) => boolean; released: Promise<void> }[] = [];

  /**
   * Pods that run (their Deployment is Available) while their workers do not poll Temporal until `release()`: a
   * worker that is broken or slow to start, as Kubernetes sees it ready and Temporal sees it absent.
   */
  holdWorkers(held: (env: Record<string, string>) => boolean): { release(): void; held(): number } {
    let release!: () => void;
    const hold = { held, released: new Promise<void>((resolve) => (release = resolve)), count: 0 };
    this.holds.push(hold);
    return {
      release: () => {
        const at = this.holds.indexOf(hold);
        if (at >= 0) this.holds.splice(at, 1);
        release();
      },
      held: () => hold.count,
    };
  }

  private async startPod(key: string, env: Record<string, string>): Promise<Pod> {
    const hold = this.holds.find((h) => h.held(env)) as { released: Promise<void>; count: number } | undefined;
    if (hold) {
      hold.count++;
      let stopped = false;
      const later = hold.released.then(() => (stopped ? undefined : this.startPod(key, env)));
      later.catch(() => undefined); // met in stop()
      return {
        async stop() {
          stopped = true;
          await (await later.catch(() => undefined))?.stop();
        },
      };
    }
    if (this.lightConnections) return new LightPod(env, this.lightConnections, this.log);
    const worker = await createExampleWorker(env);
    const running = worker.run().catch((err: Error) => this.log(`worker of ${key} stopped: ${err.message}`));
    return {
      async stop() {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running;
      },
    };
  }

  private async observe(key: string, hook: string, call: () => Promise<void> | undefined) {
    try {
      await call();
    } catch (err) {
      this.log(`pod simulator: ${key}: ${hook} failed: ${(err as Error).message}`);
    }
  }

  /** Writes what the deployment controller and kubelet would, unless it already says so. */
  private async writeStatus(d: k8s.V1Deployment, ready: number) {
    const replicas = d.spec?.replicas ?? 1;
    const available = ready >= replicas;
    const status = {
      observedGeneration: d.metadata?.generation,
      replicas: ready,
      updatedReplicas: ready,
      readyReplicas: ready,
      availableReplicas: ready,
      unavailableReplicas: Math.max(0, replicas - ready),
    };
    const current = d.status ?? {};
    const same = (Object.keys(status) as (keyof typeof status)[]).every((k) => (current[k] ?? 0) === (status[k] ?? 0));
    const availableNow =
      current.conditions?.find((c) => c.type === 'Available')?.status === (available ? 'True' : 'False');
    if (same && availableNow) return;
    const now = new Date().toISOString();
    const conditions = [
      {
        type: 'Available',
        status: available ? 'True' : 'False',
        reason: available ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
        message: `${ready}/${replicas} ready`,
        lastUpdateTime: now,
        lastTransitionTime: now,
      },
      {
        type: 'Progressing',
        status: 'True',
        reason: available ? 'NewReplicaSetAvailable' : 'ReplicaSetUpdated',
        message: 'simulated',
        lastUpdateTime: now,
        lastTransitionTime: now,
      },
    ];
    await ignoreNotFound(
      this.apps.patchNamespacedDeploymentStatus(
        { name: d.metadata!.name!, namespace: d.metadata!.namespace!, body: { status: { ...status, conditions } } },
        asMergePatch,
      ),
    );
  }
}
