/**
 * Routing activities: reads and changes of a worker deployment's routing through WorkflowService, no decisions.
 * Changes carry the conflict token of a describe made just before (or of our last write), and the controller's
 * identity.
 */
import { isGrpcServiceError } from '@temporalio/client';
import proto from '@temporalio/proto';
import type { VersionStatus } from '../api/rollout-status.js';
import { managerIdentityHeld } from './errors.js';
import { GrpcStatus } from '../temporal/errors.js';
import type { TemporalConnections, TemporalTarget } from '../temporal/connections.js';
import { describeDeploymentSettled, isNamespaceNotFound } from '../temporal/describe.js';
import { serverFeatures } from '../temporal/server-version.js';

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
export const versionStatusName = (status: number | null | undefined): VersionStatus =>
  VersionStatusName[status ?? 0] ?? 'Unknown';

/** Routing of a worker deployment as the workflow needs it. */
export interface Routing {
  current?: string;
  ramping?: string;
  rampPercentage: number;
  versions: { buildId: string; status: VersionStatus }[];
  /** The server is still passing its last routing change to the task queues (1.30+; never said before). */
  propagating: boolean;
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
  /**
   * What let the target past its rollout gate: the gate run's workflow ID (the routing activity reads that run), or
   * `promoted` (activities/gate-evidence.ts).
   */
  gate?: string;
}

/** The conflict token after a routing write (base64), for the next one. */
export interface RoutingCallResult {
  conflictToken?: string;
}

/**
 * A set-current's result. `propagating`: the server was still passing the new routing to the task queues when the
 * activity stopped reading (some new executions may still start on the previous version). `draining`: the
 * versions its last describe read as draining (the previous current's sunset need not read it again).
 */
export interface SetCurrentResult extends RoutingCallResult {
  propagating?: true;
  draining?: string[];
}

/**
 * How long a set-current reads until the server says its routing reached every task queue (a rollback asked
 * meanwhile is refused as for any set-current in flight: kept short).
 */
export const propagationBoundMs = 5_000;

const tokenText = (token: Uint8Array | null | undefined): RoutingCallResult =>
  token?.length ? { conflictToken: Buffer.from(token).toString('base64') } : {};
const isConflict = (err: unknown) =>
  isGrpcServiceError(err) &&
  err.code === GrpcStatus.FAILED_PRECONDITION &&
  /conflict token/i.test(err.details || err.message);

/** The worker deployment, or `undefined` when it does not exist (read through the server's continue-as-new). */
export async function describeWorkerDeployment(connections: TemporalConnections, t: TemporalTarget) {
  return describeDeploymentSettled((await connections.get(t)).workflowService, t.temporalNamespace, t.deploymentName);
}

type Described = Awaited<ReturnType<typeof describeWorkerDeployment>>;

/** The routing a describe of the worker deployment says (none when it does not exist). */
export function routingOf(res: Described): Routing {
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
    propagating:
      info?.routingConfigUpdateState ===
      temporal.api.enums.v1.RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS,
  };
}

export function createRoutingActivities(connections: TemporalConnections, identity: string) {
  async function service(t: TemporalTarget) {
    return (await connections.get(t)).workflowService;
  }

  const describe = (t: TemporalTarget) => describeWorkerDeployment(connections, t);

  /**
   * Refuses a routing change while another client holds the manager identity: the server would refuse it too
   * (FAILED_PRECONDITION), and only a person handing it back can change that.
   */
  function assertManageable(res: Described): void {
    const heldBy = res?.workerDeploymentInfo?.managerIdentity;
    if (heldBy && heldBy !== identity) throw managerIdentityHeld(heldBy);
  }

  /**
   * Sets the ramp with the conflict token of the describe the decision was made on (`described`): if the
   * routing changed since, the server refuses and the retry decides again on fresh facts.
   */
  async function setRampingVersion(t: TemporalTarget, buildId: string, percentage: number, described?: Described) {
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

  /**
   * What a 1.30+ server says after a set-current, read at once (its answer takes it long enough to pass the routing
   * on, mostly), then after 100 ms doubling to 1 s for `propagationBoundMs`: whether the routing still reaches the
   * task queues, and the versions it reads as draining. The write has landed: a failed read says nothing rather
   * than failing it.
   */
  async function afterSetCurrent(
    t: TemporalTarget,
    buildId: string,
  ): Promise<Pick<SetCurrentResult, 'propagating' | 'draining'>> {
    const started = Date.now();
    try {
      for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 1_000)) {
        const r = routingOf(await describe(t));
        const draining = r.versions.filter((v) => v.status === 'Draining').map((v) => v.buildId);
        const read = draining.length ? { draining } : {};
        // Someone else's routing since is theirs: the rollout reads it when it acts next.
        if (!r.propagating || r.current !== buildId) return read;
        if (Date.now() - started + delayMs > propagationBoundMs) return { ...read, propagating: true };
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    } catch {
      return {};
    }
  }

  return {
    async describeRouting(t: TemporalTarget): Promise<Routing> {
      return routingOf(await describe(t));
    },

    async setRamping(
      t: TemporalTarget,
      buildId: string,
      percentage: number,
      o: RoutingCallOptions = {},
    ): Promise<RoutingCallResult> {
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

    /**
     * Makes the build current. A server that passes routing to its task queues after answering (1.30+) is read
     * until it says that is done (`afterSetCurrent`). An older server answers once it is.
     */
    async setCurrent(t: TemporalTarget, buildId: string, o: RoutingCallOptions = {}): Promise<SetCurrentResult> {
      // Asked before the write: once it has landed, only the read after it may fail, and that says nothing.
      const { routingUpdateState } = await serverFeatures(await connections.get(t));
      const written = await routingWrite(
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
      if (!routingUpdateState) return written;
      return { ...written, ...(await afterSetCurrent(t, buildId)) };
    },

    /** Clears the ramp if (and only if) this build holds it: a superseded or aborted target gets no new work. */
    async clearRampIf(t: TemporalTarget, buildId: string): Promise<void> {
      const res = await describe(t);
      if (routingOf(res).ramping === buildId) await setRampingVersion(t, '', 0, res);
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
  };
}
