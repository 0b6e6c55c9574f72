/**
 * Temporal activities: Worker Versioning calls through WorkflowService, no decisions. Routing changes carry
 * the conflict token of a describe made just before, and the controller's identity.
 */
import { Context } from '@temporalio/activity';
import {
  CancelledFailure,
  Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  isGrpcServiceError,
  type Connection,
  type WorkflowHandle,
} from '@temporalio/client';
import proto from '@temporalio/proto';
import type { VersionStatus } from '../api/rollout-status.js';
import { GrpcStatus, classifyTemporalError, managerIdentityHeld } from './errors.js';
import type { GateInputReader, GateInputSource } from '../kube/gate-input.js';
import { chargedHeartbeat, type Charge } from './heartbeats.js';
import type { TemporalConnections, TemporalTarget } from '../temporal/connections.js';
import { pinnedRunningOn } from '../temporal/pinned.js';
import {
  describeDeploymentSettled,
  describeVersionSettled,
  isNamespaceNotFound,
  isNotFound,
  refusedPollDelay,
  registrationPollDelay,
} from '../temporal/describe.js';

const { temporal } = proto; // a CommonJS module: no named exports under ESM

/**
 * Temporal's version statuses as TWC names them. CREATED (seen, never routed to) and UNSPECIFIED are 'Unknown',
 * never 'Inactive': drainage is never decided from a status that does not say it.
 */
const VersionStatusName: Record<number, VersionStatus> = {
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'Inactive',
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'Current',
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'Ramping',
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'Draining',
  [temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'Drained',
};
/** The status name of a proto enum value; anything not listed above (CREATED, UNSPECIFIED, newer values) is 'Unknown'. */
const versionStatusName = (status: number | null | undefined): VersionStatus =>
  VersionStatusName[status ?? 0] ?? 'Unknown';

/** Routing of a worker deployment as the workflow needs it. */
export interface Routing {
  current?: string;
  ramping?: string;
  rampPercentage: number;
  versions: { buildId: string; status: VersionStatus }[];
}

/**
 * A routing change's options. `conflictToken`: the token our last routing write returned
 * (base64). The server changes it with every routing or manager write, so while it holds nobody else wrote since
 * and the write needs no describe first; a refused token (someone wrote) falls back to a describe. `claim`: take
 * the manager identity on the way when nobody holds it (one activity instead of a claim's and the write's).
 */
export interface RoutingCallOptions {
  conflictToken?: string;
  claim?: boolean;
}

/** The conflict token after a routing write (base64), for the next one. */
export interface RoutingCallResult {
  conflictToken?: string;
  /** Inside a workflow task (a local activity) the write was not made: the budget is busy; it goes as an activity. */
  deferred?: true;
}

const tokenText = (token: Uint8Array | null | undefined): RoutingCallResult =>
  token?.length ? { conflictToken: Buffer.from(token).toString('base64') } : {};
/** How long a local routing write may wait for the budget before it goes as an activity instead (`deferred`). */
const deferLocalWritesAfterMs = 100;
const isConflict = (err: unknown) =>
  isGrpcServiceError(err) &&
  err.code === GrpcStatus.FAILED_PRECONDITION &&
  /conflict token/i.test(err.details || err.message);

/** What the registration wait's heartbeats carry: the last check's refusal, if the server refused it. */
export interface RegistrationCheck {
  lastCheckFailure?: string;
}

/** A registered version: its task queues, and whether unversioned workers still poll them. */
export interface VersionRegistration {
  /** Every task queue the version polls (workflow and activity). */
  taskQueues: string[];
  /** Its workflow task queues only: a gate (a workflow) is never started on an activity-only queue. */
  workflowTaskQueues: string[];
  unversionedPollers: boolean;
}

/** A gate workflow to run on a build. */
export interface GateRun {
  buildId: string;
  workflowType: string;
  taskQueue: string;
  /** Inline input (the spec's `gate.input`, which the workflow's history holds anyway). */
  input?: unknown;
  /**
   * Where the input is (the spec's `gate.inputFrom`): read by the activity, so a Secret's content never
   * enters RolloutWorkflow's history. Wins over `input`.
   */
  inputFrom?: GateInputSource;
  workflowId: string;
  timeoutMs: number;
}

/**
 * Runs `fn`'s calls on `connection` so that the activity's cancellation aborts them, and fails as cancelled then (an
 * aborted call fails with CANCELLED). The signal is `fn`'s own: the SDK leaves a listener on the signal for each
 * call, which on the activity's own signal would pile up over an hour of describes.
 */
async function cancellableCalls<T>(connection: Connection, ctx: Context, fn: () => Promise<T>): Promise<T> {
  const own = new AbortController();
  const abort = () => own.abort();
  ctx.cancellationSignal.addEventListener('abort', abort, { once: true });
  try {
    return await connection.withAbortSignal(own.signal, fn);
  } catch (err) {
    if (ctx.cancellationSignal.aborted)
      throw new CancelledFailure('the activity was cancelled', [], err instanceof Error ? err : undefined);
    throw err;
  } finally {
    ctx.cancellationSignal.removeEventListener('abort', abort);
  }
}

/**
 * Runs `fn`, heartbeating every 2 s meanwhile while `alive()`: an activity that waits on something else says it
 * is alive, and stops saying so when what it waits on has stopped answering.
 */
async function heartbeating<T>(
  ctx: Context,
  charge: Charge,
  alive: () => boolean,
  fn: () => Promise<T>,
  details?: () => unknown,
): Promise<T> {
  const heartbeat = chargedHeartbeat(ctx, charge);
  const beat = setInterval(() => alive() && heartbeat(details?.()), 2000);
  try {
    return await fn();
  } finally {
    clearInterval(beat);
  }
}

/**
 * The Temporal activities. `readGateInput` reads a gate's input from its ConfigMap or Secret (the Kubernetes
 * activities' reader, with the same JSON rules).
 */
export function createTemporalActivities(
  connections: TemporalConnections,
  identity: string,
  readGateInput: GateInputReader,
  chargeHeartbeat: Charge = () => {},
  budgetWaitMs: () => number = () => 0,
) {
  /**
   * A routing write inside a workflow task (a local activity) holds that task and its worker slot until it is
   * done: while the budget would make it wait its turn (a thousand rollouts moving), it is not made there but
   * answered `deferred`, and goes as an activity (an answer, not a failure: nothing to log or retry).
   */
  const deferred = (): boolean => budgetWaitMs() > deferLocalWritesAfterMs && Context.current().info.isLocal;

  async function service(t: TemporalTarget) {
    return (await connections.get(t)).workflowService;
  }

  /** The worker deployment, or `undefined` when it does not exist (read through the server's continue-as-new). */
  async function describe(t: TemporalTarget) {
    return describeDeploymentSettled(await service(t), t.temporalNamespace, t.deploymentName);
  }

  /**
   * Refuses a routing change while another client holds the manager identity: the server would refuse it too
   * (FAILED_PRECONDITION), and only a person handing it back can change that.
   */
  function assertManageable(res: Awaited<ReturnType<typeof describe>>): void {
    const heldBy = res?.workerDeploymentInfo?.managerIdentity;
    if (heldBy && heldBy !== identity) throw managerIdentityHeld(heldBy);
  }

  function routingOf(res: Awaited<ReturnType<typeof describe>>): Routing {
    const info = res?.workerDeploymentInfo;
    const rc = info?.routingConfig;
    return {
      current: rc?.currentDeploymentVersion?.buildId || undefined,
      ramping: rc?.rampingDeploymentVersion?.buildId || undefined,
      rampPercentage: rc?.rampingVersionPercentage ?? 0,
      versions: (info?.versionSummaries ?? []).map((v) => ({
        buildId: v.deploymentVersion?.buildId ?? '',
        status: versionStatusName(v.status),
      })),
    };
  }

  /**
   * Sets the ramp with the conflict token of the describe the decision was made on (`described`): if the
   * routing changed since, the server refuses and the retry decides again on fresh facts.
   */
  async function setRampingVersion(
    t: TemporalTarget,
    buildId: string,
    percentage: number,
    described?: Awaited<ReturnType<typeof describe>>,
  ) {
    const res = described ?? (await describe(t));
    assertManageable(res);
    await (
      await service(t)
    ).setWorkerDeploymentRampingVersion({
      namespace: t.temporalNamespace,
      deploymentName: t.deploymentName,
      buildId,
      percentage,
      conflictToken: res?.conflictToken,
      identity,
      ignoreMissingTaskQueues: buildId === '',
    });
  }

  /**
   * Takes the manager identity with the conflict token of the describe that found nobody holding it: if someone
   * claimed it since, the server refuses and the retry sees them. Returns the token after the claim.
   */
  async function claimWith(t: TemporalTarget, conflictToken: Uint8Array | undefined): Promise<Uint8Array | undefined> {
    const res = await (
      await service(t)
    ).setWorkerDeploymentManager({
      namespace: t.temporalNamespace,
      deploymentName: t.deploymentName,
      self: true,
      conflictToken,
      identity,
    });
    return res.conflictToken ?? undefined;
  }

  /**
   * A routing write on fresh facts: with our last write's token, at once (a refused token means someone wrote
   * since: then as without one); without, after a describe that says whether it is done already (`done`). With
   * `claim`, that describe's path claims the manager identity when nobody holds it, done or not (every later write
   * carries a token and skips the claim). Returns the token after the write.
   */
  async function routingWrite(
    t: TemporalTarget,
    o: RoutingCallOptions,
    done: (routing: Routing) => boolean,
    write: (conflictToken: Uint8Array | undefined) => Promise<{ conflictToken?: Uint8Array | null }>,
  ): Promise<RoutingCallResult> {
    if (o.conflictToken) {
      try {
        return tokenText((await write(Buffer.from(o.conflictToken, 'base64'))).conflictToken);
      } catch (err) {
        if (!isConflict(err)) throw err;
      }
    }
    const res = await describe(t);
    let token = res?.conflictToken ?? undefined;
    if (o.claim && res && !res.workerDeploymentInfo?.managerIdentity) token = await claimWith(t, token);
    if (done(routingOf(res))) return tokenText(token);
    assertManageable(res);
    return tokenText((await write(token)).conflictToken);
  }

  /** Whether executions without a deployment version started on any of the queues within the last week. */
  async function unversionedWorkSeen(connection: Connection, t: TemporalTarget, queues: string[]): Promise<boolean> {
    const client = new Client({ connection, namespace: t.temporalNamespace });
    const since = new Date(Date.now() - 7 * 24 * 3_600_000).toISOString();
    for (const queue of queues) {
      const { count } = await client.workflow.count(
        `TaskQueue = "${queue}" AND TemporalWorkerDeploymentVersion IS NULL AND StartTime > "${since}"`,
      );
      if (count > 0) return true;
    }
    return false;
  }

  return {
    async describeRouting(t: TemporalTarget): Promise<Routing> {
      return routingOf(await describe(t));
    },

    /**
     * Polls (with backoff, heartbeating) until the version is registered: its workers poll a workflow task
     * queue and, for up to `coverageWaitMs` more, every task queue the current version has (the server refuses
     * to route to a version that would leave one of those queues unversioned). The backoff ends at 1 s, later while
     * the server answers slowly (`registrationPollDelay`): a new version's first ramp takes the server ≈ 2 s after
     * its registration anyway.
     */
    async awaitVersionRegistered(
      t: TemporalTarget,
      buildId: string,
      coverageWaitMs = 30_000,
    ): Promise<VersionRegistration> {
      const connection = await connections.get(t);
      const svc = connection.workflowService;
      const ctx = Context.current();
      const queueKey = (q: { name?: string | null; type?: number | null }) => `${q.type}/${q.name}`;
      const isWorkflowQueue = (q: { type?: number | null }) =>
        q.type === temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW;
      // Heartbeats go out while the server answers, a busy one after up to 30 s (an attempt timed out meanwhile
      // would only add a new one's describes), not for a call that hangs: that attempt times out.
      let answeredAt = Date.now();
      const answered = () => void (answeredAt = Date.now());
      // The server's answer time, not the waits of a read through its continue-as-new window: a version that just
      // registered is in that window, and the server is not slow for it.
      let slept = 0;
      const sleep = (ms: number) => (answered(), (slept += ms), ctx.sleep(ms));
      const describeVersion = (b: string) =>
        describeVersionSettled(svc, t.temporalNamespace, t.deploymentName, b, { sleep });
      // A cancellation (a new target, a deletion) also ends the calls in flight, which a busy server answers late.
      const round = <R>(fn: () => Promise<R>) => cancellableCalls(connection, ctx, fn);
      let refusals = 0;
      // What the heartbeats carry: the last check's refusal (the previous attempt's at first), until an answer. At the
      // progress deadline the workflow says it instead of blaming the workers (it reads the timeout's heartbeat).
      let check: RegistrationCheck = (ctx.info.heartbeatDetails as RegistrationCheck | undefined) ?? {};
      /**
       * The version's task queues; `undefined` when a busy server refused (deadline exceeded, unavailable, our own
       * budget): a slow answer, asked again later. The third in a row is thrown: the attempt fails and the retry
       * policy takes over.
       */
      const versionQueues = async () => {
        try {
          const queues = (await round(() => describeVersion(buildId)))?.versionTaskQueues ?? [];
          refusals = 0;
          check = {};
          return queues;
        } catch (err) {
          if (classifyTemporalError(err)?.kind !== 'transient') throw err;
          check = { lastCheckFailure: err instanceof Error ? err.message : String(err) };
          if (++refusals >= 3) throw err;
          return undefined;
        }
      };
      let registeredAt: number | undefined;
      return heartbeating(
        ctx,
        chargeHeartbeat,
        () => Date.now() - answeredAt < 60_000,
        async () => {
          const current = routingOf(
            await round(() => describeDeploymentSettled(svc, t.temporalNamespace, t.deploymentName)),
          ).current;
          const required =
            current && current !== buildId
              ? ((await round(() => describeVersion(current)))?.versionTaskQueues ?? []).map(queueKey)
              : [];
          for (let delay: number | undefined; ;) {
            const asked = Date.now();
            slept = 0;
            const found = await versionQueues();
            answered();
            delay = found ? registrationPollDelay(delay, Date.now() - asked - slept) : refusedPollDelay;
            const queues = found ?? [];
            const workflowQueues = queues.filter(isWorkflowQueue);
            if (workflowQueues.length > 0) {
              registeredAt ??= Date.now();
              const have = new Set(queues.map(queueKey));
              if (required.every((k) => have.has(k)) || Date.now() - registeredAt > coverageWaitMs) {
                const registration = {
                  taskQueues: [...new Set(queues.map((q) => q.name ?? ''))],
                  workflowTaskQueues: [...new Set(workflowQueues.map((q) => q.name ?? ''))],
                };
                // Unversioned workers matter only to a first version (whether to ramp onto it or make it current at
                // once): with a current version they are not asked about, and the rollout moves at once.
                if (current) return { ...registration, unversionedPollers: false };
                let unversionedPollers = false;
                for (const q of workflowQueues) {
                  const tq = await round(() =>
                    svc.describeTaskQueue({
                      namespace: t.temporalNamespace,
                      taskQueue: { name: q.name, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
                      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
                    }),
                  );
                  if ((tq.pollers ?? []).some((p) => !p.deploymentOptions?.buildId)) unversionedPollers = true;
                }
                // The poller list forgets an idle long-polling worker after `matching.PollerHistoryTTL`: unversioned
                // executions on the queue in the last week say as well that unversioned workers serve it.
                if (!unversionedPollers)
                  unversionedPollers = await round(() =>
                    unversionedWorkSeen(
                      connection,
                      t,
                      workflowQueues.map((q) => q.name ?? ''),
                    ),
                  );
                return { ...registration, unversionedPollers };
              }
            }
            await ctx.sleep(delay);
          }
        },
        () => check,
      );
    },

    async setRamping(
      t: TemporalTarget,
      buildId: string,
      percentage: number,
      o: RoutingCallOptions = {},
    ): Promise<RoutingCallResult> {
      if (deferred()) return { deferred: true };
      return routingWrite(
        t,
        o,
        (r) => r.ramping === buildId && r.rampPercentage === percentage,
        async (conflictToken) =>
          (await service(t)).setWorkerDeploymentRampingVersion({
            namespace: t.temporalNamespace,
            deploymentName: t.deploymentName,
            buildId,
            percentage,
            conflictToken,
            identity,
            ignoreMissingTaskQueues: buildId === '',
          }),
      );
    },

    async setCurrent(t: TemporalTarget, buildId: string, o: RoutingCallOptions = {}): Promise<RoutingCallResult> {
      if (deferred()) return { deferred: true };
      return routingWrite(
        t,
        o,
        (r) => r.current === buildId,
        async (conflictToken) =>
          (await service(t)).setWorkerDeploymentCurrentVersion({
            namespace: t.temporalNamespace,
            deploymentName: t.deploymentName,
            buildId,
            conflictToken,
            identity,
          }),
      );
    },

    /** Clears the ramp if (and only if) this build holds it: a superseded or aborted target gets no new work. */
    async clearRampIf(t: TemporalTarget, buildId: string): Promise<void> {
      const res = await describe(t);
      if (routingOf(res).ramping === buildId) await setRampingVersion(t, '', 0, res);
    },

    /**
     * Drainage of a version. Inactive (never routed to) and unknown-to-the-server versions can still have pinned
     * executions (a gate is started with a versioning override): for those, visibility decides.
     */
    async versionStatus(t: TemporalTarget, buildId: string): Promise<VersionStatus> {
      // Not found: never registered, or deleted and registered anew (seen when a build ID comes back after its
      // worker deployment was deleted).
      const res = await describeVersionSettled(await service(t), t.temporalNamespace, t.deploymentName, buildId);
      const status: VersionStatus = res ? versionStatusName(res.workerDeploymentVersionInfo?.status) : 'NotRegistered';
      if (status !== 'Inactive' && status !== 'NotRegistered') return status;
      const client = new Client({ connection: await connections.get(t), namespace: t.temporalNamespace });
      const open = await client.workflow.count(pinnedRunningOn(t, buildId));
      return open.count > 0 ? 'Draining' : status;
    },

    /**
     * Claims the worker deployment's manager identity for the controller when nobody holds it, so a person's
     * `temporal worker deployment set-current-version` cannot fight a rollout unnoticed. Returns who holds it when
     * that is someone else (nothing is changed then). A worker deployment that does not exist yet has nothing to
     * claim (the server answers NOT_FOUND): `{}`, and the next call claims it once its first worker polls.
     */
    async claimManager(t: TemporalTarget): Promise<{ heldBy?: string }> {
      const res = await describe(t);
      if (!res) return {};
      const heldBy = res.workerDeploymentInfo?.managerIdentity;
      if (heldBy) return heldBy === identity ? {} : { heldBy };
      await claimWith(t, res.conflictToken ?? undefined);
      return {};
    },

    /** Deletes a version; fails (and is retried) while its pollers are still remembered by the server. */
    async deleteVersion(t: TemporalTarget, buildId: string): Promise<void> {
      try {
        await (
          await service(t)
        ).deleteWorkerDeploymentVersion({
          namespace: t.temporalNamespace,
          deploymentVersion: { deploymentName: t.deploymentName, buildId },
          skipDrainage: true,
          identity,
        });
      } catch (err) {
        if (!isNotFound(err) && !isNamespaceNotFound(err)) throw err;
      }
    },

    /** Deletion of the resource: no ramp, and new work goes to unversioned workers (none to route in a namespace that does not exist). */
    async routeAway(t: TemporalTarget): Promise<void> {
      const res = await describe(t).catch((err: unknown) => {
        if (isNamespaceNotFound(err)) return undefined;
        throw err;
      });
      if (!res) return;
      const routing = routingOf(res);
      if (routing.ramping) await setRampingVersion(t, '', 0);
      if (routing.current) {
        const now = await describe(t);
        assertManageable(now);
        await (
          await service(t)
        ).setWorkerDeploymentCurrentVersion({
          namespace: t.temporalNamespace,
          deploymentName: t.deploymentName,
          buildId: '',
          conflictToken: now?.conflictToken,
          identity,
          ignoreMissingTaskQueues: true,
        });
      }
    },

    /** Deletes every version, then the worker deployment; fails (and is retried) while pollers linger. */
    async deleteWorkerDeployment(t: TemporalTarget): Promise<void> {
      const svc = await service(t);
      const described = await describe(t).catch((err: unknown) => {
        if (isNamespaceNotFound(err)) return null; // no namespace: nothing of ours there
        throw err;
      });
      if (described === null) return;
      const routing = routingOf(described);
      for (const v of routing.versions) {
        try {
          await svc.deleteWorkerDeploymentVersion({
            namespace: t.temporalNamespace,
            deploymentVersion: { deploymentName: t.deploymentName, buildId: v.buildId },
            skipDrainage: true,
            identity,
          });
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
      try {
        await svc.deleteWorkerDeployment({
          namespace: t.temporalNamespace,
          deploymentName: t.deploymentName,
          identity,
        });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    },

    /** Runs a gate workflow pinned to the target version and reports whether it completed. */
    /** Cancels a gate workflow (an abort, a superseding spec): at once, not at the waiting activity's next heartbeat. */
    async cancelGate(t: TemporalTarget, workflowId: string): Promise<void> {
      const client = new Client({ connection: await connections.get(t), namespace: t.temporalNamespace });
      await client.workflow
        .getHandle(workflowId)
        .cancel()
        .catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err; // closed already: nothing to cancel
        });
    },

    async runGate(t: TemporalTarget, gate: GateRun): Promise<{ passed: boolean; message: string }> {
      const input = gate.inputFrom ? await readGateInput(t.k8sNamespace, gate.inputFrom) : gate.input;
      const client = new Client({ connection: await connections.get(t), namespace: t.temporalNamespace });
      // One run per gate ID: a retry after a crash waits on the running one (USE_EXISTING) or reads the outcome of
      // the one that ended meanwhile (REJECT_DUPLICATE), never starts it again. `retry` and `resume` get a new ID.
      let handle: WorkflowHandle;
      try {
        handle = await client.workflow.start(gate.workflowType, {
          workflowId: gate.workflowId,
          taskQueue: gate.taskQueue,
          args: input === undefined ? [] : [input],
          versioningOverride: { pinnedTo: { deploymentName: t.deploymentName, buildId: gate.buildId } },
          workflowExecutionTimeout: gate.timeoutMs,
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
        });
      } catch (err) {
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
        handle = client.workflow.getHandle(gate.workflowId);
      }
      const ctx = Context.current();
      return heartbeating(
        ctx,
        chargeHeartbeat,
        () => true,
        async () => {
          try {
            await Promise.race([handle.result(), ctx.cancelled]);
            return { passed: true, message: `${gate.workflowType} completed` };
          } catch (err) {
            if (err instanceof WorkflowFailedError)
              return { passed: false, message: err.cause?.message ?? err.message };
            // The workflow cancelled the gate (a new spec, an abort): the gate workflow goes too. Not on a worker
            // shutdown or a heartbeat timeout: the retry finds the same gate running (USE_EXISTING) and waits on.
            if (err instanceof CancelledFailure && ctx.cancellationDetails?.cancelRequested) {
              await handle.cancel().catch((cancelErr: unknown) => {
                if (!(cancelErr instanceof WorkflowNotFoundError)) throw cancelErr; // closed already: nothing to cancel
              });
            }
            throw err;
          }
        },
      );
    },
  };
}

export type TemporalActivities = ReturnType<typeof createTemporalActivities>;
