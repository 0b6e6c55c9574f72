/**
 * An in-memory "world" for RolloutWorkflow tests: fake Kubernetes Deployments and fake Temporal routing
 * behind the real activity signatures. Every activity call is recorded (name, arguments, wall-clock time),
 * and the world talks back the way the real watcher does: each change to a versioned Deployment is sent to
 * the workflow as a `deploymentObserved` signal (a new one becomes available shortly after it is applied).
 */
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import {
  Client,
  Connection,
  WorkflowNotFoundError,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { NativeConnection, Worker } from '@temporalio/worker';
import type {
  Activities,
  GateRequest,
  RegistrationCheck,
  Routing,
  RoutingCallOptions,
  RoutingCallResult,
  TemporalRef,
  VersionRegistration,
} from '../../activities/index.js';
import { gateOf } from '../../activities/guarded-temporal.js';
import type { KubeEvent, Report } from '../../activities/resource-writes.js';
import { rolloutWorkflowId, versionedDeploymentName, workerDeploymentName } from '../../api/names.js';
import {
  TemporalWorkerDeploymentSpec,
  type TemporalWorkerDeploymentSpecInput,
} from '../../api/temporal-worker-deployment.js';
import { type TemporalWorkerDeploymentStatus, type VersionStatus } from '../../api/rollout-status.js';
import { waitsTaskQueue } from '../../workflows/task-queues.js';
import { deleted, deploymentObserved, specChanged, type SpecChangedHint } from '../../workflows/messages.js';
import type { RolloutWorkflow } from '../../workflows/rollout-workflow.js';
import type { DeploymentObservation, Desired, Owner } from '../../api/resource.js';
import type { Timings } from '../../api/timings.js';

/** The installation the fake controller answers its reads with (workflow IDs carry it). */
export const testInstallation = 'wftest';
export interface Call {
  name: string;
  args: unknown[];
  /** Date.now() when the activity ran. */
  at: number;
  /** A Temporal call's server and namespace: `hostPort/namespace`. */
  where?: string;
}

interface FakeDeployment {
  name: string;
  replicas: number;
  generation: number;
  available: boolean;
  /** Pods still stopping after a scale-down, counted available until they are gone. */
  stopping?: number;
}

/** Calls that change routing in Temporal. */
export const routingCalls = ['setRamping', 'setCurrent', 'clearRampIf', 'routeAway'];

export class FakeWorld {
  readonly calls: Call[] = [];
  readonly statuses: TemporalWorkerDeploymentStatus[] = [];
  readonly events: KubeEvent[] = [];
  /** The spec generation each Deployment was last applied from (a new template under one build ID re-applies). */
  readonly appliedAt = new Map<string, number>();
  /** Kubernetes: versioned Deployments by build ID. */
  readonly deployments = new Map<string, FakeDeployment>();
  /** Temporal: routing of the worker deployment, and the status of each registered version. */
  current?: string;
  ramping?: string;
  rampPercentage = 0;
  readonly versions = new Map<string, VersionStatus>();

  /** What awaitVersionRegistered answers. */
  registration: VersionRegistration = {
    taskQueues: ['example'],
    workflowTaskQueues: ['example'],
    unversionedPollers: false,
  };
  /** While set, awaitVersionRegistered answers only once it resolves (the version's workers do not poll yet). */
  registrationHold?: Promise<void>;
  /** While it returns a promise, adoptOrApplyDeployment's apply lands only once the promise resolves. */
  applyHold?: () => Promise<void> | undefined;
  /** While it returns a promise for a report, that report is written only once the promise resolves. */
  reportHold?: (report: Report) => Promise<void> | undefined;
  /** What a held awaitVersionRegistered heartbeats, as the real one does: its last check's outcome. */
  registrationCheck?: RegistrationCheck;
  /** Who else holds the worker deployment's manager identity (undefined: nobody, or us). A set-manager write. */
  get managerHeldBy(): string | undefined {
    return this.heldBy;
  }
  set managerHeldBy(holder: string | undefined) {
    this.heldBy = holder;
    this.managerOurs = false;
    this.routingToken++;
  }
  private heldBy?: string;
  /** What countOutcomes answers per build. */
  readonly outcomes = new Map<string, { closed: number; failed: number }>();
  /** Executions pinned to a build that movePinned moved elsewhere, and actOnPinned's actions. */
  readonly moved: { from: string; to: string; count: number }[] = [];
  /** Results runGate hands out, first to last; then every gate passes. */
  gateResults: { passed: boolean; message: string }[] = [];
  /** The next this many resync repairs fail (an apiserver brownout). */
  brownout = 0;
  /** A newly applied Deployment becomes available on its own (as pods come up). */
  autoAvailable = true;
  /** The status a version gets when it stops being current or ramping (the test flips it to Drained). */
  statusWhenRoutedAway: VersionStatus = 'Draining';
  /** While set, versionStatus answers only once it resolves: holds a drainage check in flight. */
  versionStatusHold?: Promise<void>;
  /** While set, scaleDeployment answers only once it resolves (a write the workflow waits for, even when cancelled). */
  scaleHold?: Promise<void>;
  /** Drainage checks started and not yet answered. */
  versionStatusInFlight = 0;
  /** The conflict token: changed by every routing or manager write that changes something, as the server's is. */
  routingToken = 1;
  /** The options of each setRamping / setCurrent (their conflict tokens and claims). */
  readonly routingOptions: RoutingCallOptions[] = [];
  /** Writes that carried a stale token; describes and claims the real activity would have made. */
  staleTokens = 0;
  describes = 0;
  claims = 0;
  /** We hold the manager identity (claimed on the way); `managerHeldBy` is someone else. */
  managerOurs = false;
  /** How long setCurrent takes (to race signals against the final routing change). */
  setCurrentDelayMs = 0;
  /** setCurrent answers as on a 1.30+ server: the versions it read as draining after the write. */
  routingUpdateState = false;
  /** …and the server was still passing the routing to the task queues when it stopped reading. */
  propagationSlow = false;
  /**
   * Versions temporal-worker-controller left (build ID → its Deployment's name and whether its template is the
   * spec's): adoptForeignDeployments reports them, and their Deployments exist, available.
   */
  readonly foreign = new Map<
    string,
    { deploymentName: string; matchesTemplate: boolean; templateUnchecked?: string }
  >();

  constructor(
    readonly owner: Owner,
    readonly workflowId: string,
    readonly client: Client,
  ) {}

  private resourceVersion = 0;
  /** Activities that fail (by name) until the test deletes the entry: always, or for the arguments a function picks. */
  readonly failWith = new Map<string, Error | ((args: unknown[]) => Error | undefined)>();
  /** Pinned executions open on each version (what countOpenExecutions answers). */
  readonly openExecutions = new Map<string, number>();
  /** The resource was deleted without the workflow being told (its finalizer removed by hand). */
  resourceGone = false;
  /** The installation the resource's `glidepath.dev/installation` annotation names, if any. */
  claimedBy?: string;
  /** The controller's timings, as readResource hands them to the workflow. */
  timings?: Partial<Timings>;
  /** The resource as the apiserver has it (what readResource answers): its spec, set by `applySpec`. */
  spec?: Desired;
  /** The UID the apiserver has under the owner's name (another: a namesake replaced it). */
  resourceUid?: string;
  /** The resource has a deletionTimestamp (`deleteResource`). */
  resourceDeleting = false;
  /** A live object under the name with another UID (what findSuccessor answers). */
  successor?: Owner;
  /** Bumped by every change of the resource: its resourceVersion. */
  private specVersion = 0;

  /** The resource's resourceVersion as read. */
  get resourceRevision(): string {
    return `rv-${this.specVersion}`;
  }

  /** `kubectl apply`: the resource's spec becomes `d`, and the watcher wakes the workflow (a hint, not the spec). */
  async applySpec(d: Desired): Promise<void> {
    this.setSpec(d);
    await this.wake();
  }

  /** The resource's spec becomes `d` (a new resourceVersion) with no word to the workflow (a watch event missed). */
  setSpec(d: Desired): void {
    this.spec = d;
    this.specVersion++;
  }

  /** What the watcher sends for the resource as it is now: which object, its generation and resourceVersion. */
  hint(): SpecChangedHint {
    const d = this.spec;
    return {
      uid: this.resourceUid ?? this.owner.uid,
      kind: d?.kind ?? this.owner.kind ?? 'TemporalWorkerDeployment',
      generation: d?.generation ?? 1,
      resourceVersion: this.resourceRevision,
      ...(d ? { connectionVersion: d.connectionVersion } : {}),
    };
  }

  /** The watcher's wake-up, `hint` (default: the resource as it is now; sent again, a duplicate). */
  async wake(hint: SpecChangedHint = this.hint()): Promise<void> {
    await this.client.workflow.getHandle(this.workflowId).signal(specChanged, hint);
  }

  /** Another installation's annotation on the resource (a new resourceVersion), and the watcher's wake-up. */
  async claim(installation: string): Promise<void> {
    this.claimedBy = installation;
    this.specVersion++;
    await this.wake();
  }

  /** `kubectl delete` of a resource with our finalizer: it is being deleted, and the watcher says so (of the object under the name now). */
  async deleteResource(): Promise<void> {
    this.resourceDeleting = true;
    this.specVersion++;
    await this.client.workflow.getHandle(this.workflowId).signal(deleted, { uid: this.resourceUid ?? this.owner.uid });
  }
  /** The watcher's signals are lost: the workflow learns of a Deployment only by reading it. */
  signalsLost = false;

  record(name: string, args: unknown[], where?: string): void {
    this.calls.push({ name, args, at: Date.now(), ...(where ? { where } : {}) });
    const failWith = this.failWith.get(name);
    const failure = typeof failWith === 'function' ? failWith(args) : failWith;
    if (failure) throw failure;
  }

  callsOf(name: string): Call[] {
    return this.calls.filter((c) => c.name === name);
  }

  /** Names of the calls in order, optionally only the given ones (and only those about `buildId`). */
  sequence(names: string[], buildId?: string): string[] {
    return this.calls
      .filter((c) => names.includes(c.name) && (buildId === undefined || c.args.includes(buildId)))
      .map((c) => c.name);
  }

  /** The watcher's view of a Deployment (what `observeDeployment` reads off it). */
  observation(buildId: string): DeploymentObservation {
    const d = this.deployments.get(buildId);
    const name = versionedDeploymentName(this.owner.name, buildId);
    const resourceVersion = String(++this.resourceVersion);
    if (!d) return { buildId, name, exists: false, resourceVersion };
    return {
      resourceVersion,
      buildId,
      name,
      exists: true,
      generation: d.generation,
      observedGeneration: d.available ? d.generation : d.generation - 1,
      replicas: d.replicas,
      availableReplicas: d.available ? Math.max(d.replicas, d.stopping ?? 0) : 0,
    };
  }

  /** Sends the current observation of a Deployment to the workflow, as the watcher does on every change. */
  async notify(buildId: string): Promise<void> {
    if (this.signalsLost) return;
    try {
      await this.client.workflow.getHandle(this.workflowId).signal(deploymentObserved, this.observation(buildId));
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }

  /** Pods of a Deployment are up: it reports all replicas available. */
  async makeAvailable(buildId: string): Promise<void> {
    const d = this.deployments.get(buildId);
    if (!d) throw new Error(`no Deployment for ${buildId}`);
    d.available = true;
    this.record('available', [buildId]);
    await this.notify(buildId);
  }

  apply(buildId: string, replicas: number, generation?: number): DeploymentObservation {
    const existing = this.deployments.get(buildId);
    if (
      existing &&
      existing.replicas === replicas &&
      (generation === undefined || this.appliedAt.get(buildId) === generation)
    )
      return this.observation(buildId);
    if (generation !== undefined) this.appliedAt.set(buildId, generation);
    this.deployments.set(buildId, {
      name: versionedDeploymentName(this.owner.name, buildId),
      replicas,
      generation: (existing?.generation ?? 0) + 1,
      available: false,
    });
    const seen = this.observation(buildId);
    if (this.autoAvailable) {
      setTimeout(() => void this.makeAvailable(buildId).catch(() => {}), 50);
    }
    return seen;
  }

  /** As the real routing activities do: someone else holds the manager identity → a non-retryable ManagerIdentityHeld. */
  refuseIfManaged(): void {
    if (this.managerHeldBy) {
      throw ApplicationFailure.create({
        type: 'ManagerIdentityHeld',
        message: `the manager identity is held by ${this.managerHeldBy}`,
        nonRetryable: true,
        details: [this.managerHeldBy],
      });
    }
  }

  /**
   * A routing write as the activity makes it: with a fresh token at once; else (no token, a stale one) after a
   * describe, claiming an unheld identity when asked.
   */
  routingWrite(o: RoutingCallOptions | undefined, changes: boolean): RoutingCallResult {
    this.routingOptions.push(o ?? {});
    const fresh = !!o?.conflictToken && o.conflictToken === String(this.routingToken);
    if (!fresh) {
      if (o?.conflictToken) this.staleTokens++;
      this.describes++;
      if (o?.claim && !this.managerHeldBy && !this.managerOurs) {
        this.managerOurs = true;
        this.claims++;
        this.routingToken++;
      }
    }
    if (changes) {
      this.refuseIfManaged();
      this.routingToken++;
    }
    return { conflictToken: String(this.routingToken) };
  }

  routedAway(buildId: string | undefined): void {
    if (buildId && this.versions.has(buildId)) this.versions.set(buildId, this.statusWhenRoutedAway);
  }
}

/** The worlds of one test file, found by owner (Kubernetes activities) or worker deployment (Temporal ones). */
export class FakeWorlds {
  private readonly byKey = new Map<string, FakeWorld>();

  constructor(private readonly client: Client) {}

  /** `timings`: the controller's configuration, which the workflow gets in its read of the resource. */
  create(owner: Owner, workflowId: string, timings?: Partial<Timings>): FakeWorld {
    const world = new FakeWorld(owner, workflowId, this.client);
    world.timings = timings;
    this.byKey.set(workerDeploymentName(owner.namespace, owner.name), world);
    return world;
  }

  private of(owner: Owner): FakeWorld {
    return this.at(workerDeploymentName(owner.namespace, owner.name));
  }

  private at(key: string): FakeWorld {
    const world = this.byKey.get(key);
    if (!world) throw new Error(`no fake world for ${key}`);
    return world;
  }

  /** Activities with the real signatures, acting on the world they are about. */
  activities(): Activities {
    const kube = (owner: Owner, name: string, args: unknown[]) => {
      const w = this.of(owner);
      w.record(name, args);
      return w;
    };
    const temporal = (t: TemporalRef, name: string, args: unknown[]) => {
      const w = this.at(workerDeploymentName(t.owner.namespace, t.owner.name));
      w.record(name, args, `${t.hostPort}/${t.temporalNamespace}`);
      return w;
    };
    // As the activities: the spec is the one the apiserver has (the world's), never the caller's.
    const specOf = (owner: Owner) => this.of(owner).spec;
    const fake: Activities = {
      // ---- Kubernetes ----
      ensureVersionedDeployment: async (input) => {
        const desired = specOf(input.owner)!;
        const w = kube(input.owner, 'ensureVersionedDeployment', [input.buildId, desired.generation]);
        return w.apply(input.buildId, desired.spec.replicas, desired.generation);
      },
      reconcileDeployments: async (input) => {
        const w = kube(input.owner, 'reconcileDeployments', [input.versions.map((v) => v.buildId)]);
        if (w.brownout > 0 && w.brownout--) throw new Error('the apiserver is not answering');
        const recreated: string[] = [];
        for (const v of input.versions) {
          if (w.deployments.has(v.buildId)) continue;
          w.apply(v.buildId, v.replicas);
          recreated.push(versionedDeploymentName(input.owner.name, v.buildId));
        }
        return { recreated, healed: [] };
      },
      removeStrayDeployments: async (owner, live, seenWithPods) => {
        const w = kube(owner, 'removeStrayDeployments', [live, seenWithPods]);
        const sweep = { deleted: [] as string[], scaledDown: [] as string[], withPods: [] as string[] };
        for (const [buildId, d] of [...w.deployments].filter(([b]) => !live.includes(b))) {
          if (d.replicas === 0) {
            w.deployments.delete(buildId);
            sweep.deleted.push(d.name);
          } else if (seenWithPods.includes(d.name)) {
            d.replicas = 0;
            sweep.scaledDown.push(d.name);
          } else sweep.withPods.push(d.name); // a fake Deployment's name is its uid
        }
        return sweep;
      },
      scaleDeployment: async (owner, buildId, replicas) => {
        const w = kube(owner, 'scaleDeployment', [buildId, replicas]);
        await w.scaleHold;
        const d = w.deployments.get(buildId);
        if (d) {
          d.replicas = replicas;
          void w.notify(buildId).catch(() => {});
        }
      },
      deleteDeployment: async (owner, buildId) => {
        const w = kube(owner, 'deleteDeployment', [buildId]);
        if (w.deployments.delete(buildId)) await w.notify(buildId); // the watcher's DELETE event
      },
      scaleOwnedDeployments: async (owner, replicas) => {
        const w = kube(owner, 'scaleOwnedDeployments', [replicas]);
        for (const d of w.deployments.values()) d.replicas = replicas;
      },
      deleteOwnedDeployments: async (owner) => {
        kube(owner, 'deleteOwnedDeployments', []).deployments.clear();
      },
      writeStatus: async (owner, status) => {
        const w = this.of(owner);
        w.statuses.push(status);
        return !w.resourceGone;
      },
      readResource: async (owner) => {
        const w = kube(owner, 'readResource', []);
        const timings = { installation: testInstallation, ...(w.timings ? { timings: w.timings } : {}) };
        if (w.resourceGone) return { found: false as const, ...timings };
        const uid = w.resourceUid ?? owner.uid;
        const kind = w.spec?.kind ?? owner.kind ?? 'TemporalWorkerDeployment';
        return {
          found: true as const,
          uid,
          kind,
          resourceVersion: w.resourceRevision,
          generation: w.spec?.generation ?? 1,
          deleting: w.resourceDeleting,
          ...(w.claimedBy ? { claimedBy: w.claimedBy } : {}),
          ...timings,
          ...(w.spec ? { desired: { ...w.spec, uid } } : {}),
        };
      },
      // As the activity: a live object under the name other than the owner's own (none while it is being deleted).
      findSuccessor: async (owner) => {
        const w = kube(owner, 'findSuccessor', []);
        const next = w.successor;
        if (!next || w.resourceGone || next.uid === owner.uid) return undefined;
        return next.uid === (w.resourceUid ?? w.owner.uid) && w.resourceDeleting ? undefined : next;
      },
      recordEvent: async (owner, event) => {
        this.of(owner).events.push(event);
      },
      report: async (owner, report) => {
        const w = kube(owner, 'report', [report]);
        await w.reportHold?.(report);
        // As the activity: Events are recorded for a resource that is gone too (they name it by uid).
        if (report.status) w.statuses.push(report.status);
        w.events.push(...report.events);
        return report.status === undefined || !w.resourceGone;
      },
      readDeployment: async (owner, buildId) => kube(owner, 'readDeployment', [buildId]).observation(buildId),
      removeFinalizer: async (owner) => {
        kube(owner, 'removeFinalizer', []);
      },
      adoptForeignDeployments: async (input) => {
        const w = kube(input.owner, 'adoptForeignDeployments', []);
        return [...w.foreign].map(([buildId, f]) => {
          const d = w.deployments.get(buildId);
          return {
            buildId,
            deploymentName: f.deploymentName,
            matchesTemplate: f.matchesTemplate,
            ...(f.templateUnchecked ? { templateUnchecked: f.templateUnchecked } : {}),
            replicas: d?.replicas ?? 0,
            availableReplicas: d?.available ? d.replicas : 0,
          };
        });
      },
      // As the activity: the adoption's look, then the apply when there is nothing to adopt (both recorded).
      adoptOrApplyDeployment: async (input) => {
        const w = kube(input.owner, 'adoptOrApplyDeployment', [input.buildId, specOf(input.owner)!.generation]);
        const adopted = await fake.adoptForeignDeployments({ owner: input.owner });
        if (adopted.length) return { adopted };
        // As the activity: its request is tied to the attempt, so an attempt past its timeout applies nothing.
        const hold = w.applyHold?.();
        if (hold) await Promise.race([hold, Context.current().cancelled]);
        return { adopted, applied: await fake.ensureVersionedDeployment(input) };
      },
      updateAdoptedDeployment: async (input) => {
        const replicas = specOf(input.owner)!.spec.replicas;
        const w = kube(input.owner, 'updateAdoptedDeployment', [input.buildId, replicas]);
        const d = w.deployments.get(input.buildId);
        if (d) d.replicas = replicas;
        return w.observation(input.buildId);
      },

      // ---- Temporal ----
      describeRouting: async (t): Promise<Routing> => {
        const w = this.at(workerDeploymentName(t.owner.namespace, t.owner.name));
        return {
          current: w.current,
          ramping: w.ramping,
          rampPercentage: w.rampPercentage,
          versions: [...w.versions].map(([buildId, status]) => ({ buildId, status })),
          propagating: false,
        };
      },
      awaitVersionRegistered: async (t, buildId) => {
        const w = temporal(t, 'awaitVersionRegistered', [buildId]);
        if (w.registrationHold) {
          if (w.registrationCheck) Context.current().heartbeat(w.registrationCheck);
          await Promise.race([w.registrationHold, Context.current().cancelled]);
        }
        if (!w.versions.has(buildId)) w.versions.set(buildId, 'Inactive');
        return w.registration;
      },
      claimManager: async (t) => {
        const w = temporal(t, 'claimManager', []);
        return w.managerHeldBy ? { heldBy: w.managerHeldBy } : {};
      },
      countOutcomes: async (t, buildId) =>
        temporal(t, 'countOutcomes', [buildId]).outcomes.get(buildId) ?? { closed: 0, failed: 0 },
      countPinned: async (t, buildId) => temporal(t, 'countPinned', [buildId]).openExecutions.get(buildId) ?? 0,
      actOnPinned: async (t, buildId, action) => {
        const w = temporal(t, 'actOnPinned', [buildId, action.kind]);
        const matched = w.openExecutions.get(buildId) ?? 0;
        w.openExecutions.set(buildId, 0);
        return { matched, acted: matched };
      },
      movePinned: async (t, from, to) => {
        const w = temporal(t, 'movePinned', [from, to]);
        const matched = w.openExecutions.get(from) ?? 0;
        w.openExecutions.set(from, 0);
        w.openExecutions.set(to, (w.openExecutions.get(to) ?? 0) + matched);
        w.moved.push({ from, to, count: matched });
        return { matched, moved: matched, oneTime: true };
      },
      setRamping: async (t, buildId, percentage, o) => {
        const w = temporal(t, 'setRamping', [buildId, percentage]);
        const result = w.routingWrite(o, w.ramping !== buildId || w.rampPercentage !== percentage);
        if (w.ramping !== buildId) w.routedAway(w.ramping);
        w.ramping = buildId || undefined;
        w.rampPercentage = percentage;
        if (buildId) w.versions.set(buildId, 'Ramping');
        return result;
      },
      setCurrent: async (t, buildId, o) => {
        const w = temporal(t, 'setCurrent', [buildId]);
        const result = w.routingWrite(o, w.current !== buildId);
        if (w.setCurrentDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, w.setCurrentDelayMs));
        if (w.current === buildId) return result;
        w.routedAway(w.current);
        w.current = buildId;
        w.versions.set(buildId, 'Current');
        if (w.ramping === buildId) {
          w.ramping = undefined;
          w.rampPercentage = 0;
        }
        if (!w.routingUpdateState) return result;
        // A 1.30+ server: the activity read the deployment after the write.
        const draining = [...w.versions].filter(([, s]) => s === 'Draining').map(([b]) => b);
        return {
          ...result,
          ...(draining.length ? { draining } : {}),
          ...(w.propagationSlow ? { propagating: true } : {}),
        };
      },
      clearRampIf: async (t, buildId) => {
        const w = temporal(t, 'clearRampIf', [buildId]);
        if (w.ramping !== buildId) return;
        w.routingToken++;
        w.ramping = undefined;
        w.rampPercentage = 0;
        w.routedAway(buildId);
      },
      awaitDrained: async (t, buildId) => {
        // Polls as the real one does (each poll is a recorded versionStatus call), until drained or cancelled.
        const ctx = Context.current();
        for (;;) {
          const status = await fake.versionStatus(t, buildId);
          if (status === 'Drained' || status === 'Inactive' || status === 'NotRegistered') return status;
          ctx.heartbeat();
          await ctx.sleep(100);
        }
      },
      countOpenExecutions: async (t, buildIds) => {
        const w = temporal(t, 'countOpenExecutions', [buildIds]);
        return Object.fromEntries(buildIds.map((b) => [b, w.openExecutions.get(b) ?? 0]));
      },
      versionStatus: async (t, buildId) => {
        const w = temporal(t, 'versionStatus', [buildId]);
        w.versionStatusInFlight++;
        try {
          // Held in flight, but not past a cancellation (a held check must not keep the worker from shutting down).
          await Promise.race([
            w.versionStatusHold,
            inActivity() ? Context.current().cancelled : new Promise<never>(() => {}),
          ]);
        } finally {
          w.versionStatusInFlight--;
        }
        return w.versions.get(buildId) ?? 'NotRegistered';
      },
      deleteVersion: async (t, buildId) => {
        temporal(t, 'deleteVersion', [buildId]).versions.delete(buildId);
      },
      routeAway: async (t) => {
        const w = temporal(t, 'routeAway', []);
        w.routedAway(w.ramping);
        w.routedAway(w.current);
        w.ramping = undefined;
        w.rampPercentage = 0;
        w.current = undefined;
      },
      deleteWorkerDeployment: async (t) => {
        temporal(t, 'deleteWorkerDeployment', []).versions.clear();
      },
      cancelGate: async (t, workflowId) => {
        temporal(t, 'cancelGate', [workflowId]);
      },
      // As the activity: what runs, with what input, is the spec's gate the request names (recorded resolved).
      runGate: async (t, request: GateRequest) => {
        const gate = gateOf(specOf(t.owner)!.spec, request.gate);
        const resolved = {
          ...request,
          workflowType: gate?.workflowType,
          ...(gate?.inputFrom ? { inputFrom: gate.inputFrom } : { input: gate?.input }),
        };
        const w = temporal(t, 'runGate', [request.buildId, resolved]);
        return w.gateResults.shift() ?? { passed: true, message: `${gate?.workflowType} completed` };
      },
    };
    return fake;
  }
}

const inActivity = () => {
  try {
    Context.current();
    return true;
  } catch {
    return false;
  }
};

/** A fully defaulted spec, as the watcher parses it. Sunset: scale to 0 as soon as drained, delete 1s later. */
export function desired(
  generation: number,
  buildId: string,
  rollout: TemporalWorkerDeploymentSpecInput['rollout'] = { strategy: 'AllAtOnce' },
): Desired {
  const spec = TemporalWorkerDeploymentSpec.parse({
    replicas: 2,
    template: { spec: { containers: [{ name: 'worker', image: `worker:${buildId}` }] } },
    rollout,
    sunset: { scaledownDelay: '0s', deleteDelay: '1s' },
    workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'default' },
  } satisfies TemporalWorkerDeploymentSpecInput);
  return { generation, spec, buildId, connection: { hostPort: 'x:1' }, connectionVersion: '1' };
}

/** RolloutWorkflow on the real dev server, its activities played by fake worlds, on a task queue of its own. */
export interface FakeRig {
  client: Client;
  worlds: FakeWorlds;
  taskQueue: string;
  /** Starts the owner's RolloutWorkflow as the watcher does (ended by `stop`). */
  start(workflowId: string, owner: Owner): Promise<WorkflowHandleWithFirstExecutionRunId<typeof RolloutWorkflow>>;
  /** Terminates the workflows it started and the given ones (their latest runs), stops the workers, closes the connections. */
  stop(workflowIds?: string[]): Promise<void>;
}

export async function startFakeRig(taskQueue: string): Promise<FakeRig> {
  const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const worlds = new FakeWorlds(client);
  const nativeConnection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace,
    taskQueue,
    workflowsPath: fileURLToPath(new URL('../../workflows/index.ts', import.meta.url)),
    activities: worlds.activities(),
  });
  // Long waits (registration, gates, drainage) run on their own task queue, as in the controller.
  const waits = await Worker.create({
    connection: nativeConnection,
    namespace,
    taskQueue: waitsTaskQueue(taskQueue),
    activities: worlds.activities(),
  });
  const running = Promise.all([worker.run(), waits.run()]);
  const started: string[] = [];
  return {
    client,
    worlds,
    taskQueue,
    async start(workflowId, owner) {
      started.push(workflowId);
      return client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', {
        taskQueue,
        workflowId,
        args: [{ owner }],
      });
    },
    async stop(workflowIds = []) {
      // Nothing of one test file may linger: end every rollout still open.
      await Promise.all(
        [...started, ...workflowIds].map((id) =>
          client.workflow
            .getHandle(id)
            .terminate('test file done')
            .catch(() => {}),
        ),
      );
      worker.shutdown();
      waits.shutdown();
      await running;
      await nativeConnection.close();
      await connection.close();
    },
  };
}

/**
 * One test file's rig on a task queue of its own: started before the file's tests, stopped after them, ending
 * every rollout it started. `world(owner)` makes the owner's fake world (set it up before `start`); `start(owner)`
 * starts the owner's RolloutWorkflow as the watcher does.
 */
export function fakeRigForFile(label: string, timings: Partial<Timings>) {
  const taskQueue = `${label}-test-${randomUUID().slice(0, 8)}`;
  const handles: WorkflowHandle<typeof RolloutWorkflow>[] = [];
  let rig: FakeRig | undefined;
  beforeAll(async () => {
    rig = await startFakeRig(taskQueue);
  });
  afterAll(async () => {
    await rig?.stop(handles.map((h) => h.workflowId));
  });
  const started = () => {
    if (!rig) throw new Error('the rig starts in beforeAll');
    return rig;
  };
  return {
    get client() {
      return started().client;
    },
    world: (owner: Owner) =>
      started().worlds.create(owner, rolloutWorkflowId(testInstallation, owner.namespace, owner.name), timings),
    async start(
      owner: Owner,
      options: Pick<WorkflowStartOptions, 'staticSummary' | 'staticDetails' | 'workflowTaskTimeout'> = {},
    ) {
      const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
      const handle = await started().client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', {
        taskQueue,
        workflowId,
        args: [{ owner }],
        ...options,
      });
      handles.push(handle);
      return handle;
    },
  };
}
