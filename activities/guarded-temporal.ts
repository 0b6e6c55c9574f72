/**
 * The Temporal activities as RolloutWorkflow (or anyone who can schedule on its queues) calls them: each takes a
 * reference (`TemporalRef`), reads its resource and connection from the apiserver (./authority.ts), and only then
 * calls the adapter with the worker deployment it found. A step that takes something away re-reads Temporal just
 * before it acts and refuses what the read does not support; what the caller says it read is never believed.
 */
import { Context } from '@temporalio/activity';
import proto from '@temporalio/proto';
import { parseDuration } from '../api/duration.js';
import { gateWorkflowIdPrefix, promotedPastGate, rolloutWorkflowId } from '../api/names.js';
import type { Gate } from '../api/temporal-worker-deployment.js';
import type { NormalizedSpec } from '../api/worker-deployment.js';
import type { createAnalysisActivities } from '../temporal/analysis.js';
import type { TemporalConnections, TemporalRef, TemporalTarget } from '../temporal/connections.js';
import { describeVersionSettled, isNotFound } from '../temporal/describe.js';
import type { createDrainageActivities } from '../temporal/drainage.js';
import type { createPinnedActivities, PinnedAction } from '../temporal/pinned.js';
import { gateBefore, gateRunProblem, hadTraffic } from './gate-evidence.js';
import { mustBeDeleting, mustBeDrained, refused, type Authority, type Authorized } from './authority.js';
import type { RoutingCallOptions } from './routing.js';
import type { TemporalActivities } from './temporal.js';

const { temporal } = proto; // a CommonJS module: no named exports under ESM

/** How long a version read with its workers' task queues is taken as polled, for the next routing writes to it. */
const polledFreshMs = 10 * 60_000;

/**
 * A gate to run on a build: which of the spec's gates (`rollout`, or `step-N` for the gate after step N) and the
 * run's workflow ID. Its workflow type, input and timeout are the spec's, read by the activity.
 */
export interface GateRequest {
  buildId: string;
  gate: string;
  workflowId: string;
  /** Where it starts when the spec names no task queue: a workflow task queue the build's workers poll. */
  taskQueue: string;
}

/** The spec's gate a label names: `rollout`, or `step-N`. */
export function gateOf(spec: NormalizedSpec, label: string): Gate | undefined {
  if (label === 'rollout') return spec.rollout.gate;
  const step = /^step-([1-9][0-9]*)$/.exec(label);
  return step ? spec.rollout.steps?.[Number(step[1]) - 1]?.gate : undefined;
}

type Adapter = TemporalActivities &
  ReturnType<typeof createDrainageActivities> &
  ReturnType<typeof createAnalysisActivities> &
  ReturnType<typeof createPinnedActivities>;

/** An adapter taking the worker deployment first, as an activity taking a reference to it. */
type ByRef<F> = F extends (t: TemporalTarget, ...rest: infer A) => infer R
  ? (ref: TemporalRef, ...rest: A) => R
  : never;

export function createGuardedTemporalActivities(
  raw: Adapter,
  authority: Authority,
  connections: TemporalConnections,
  installation: string,
) {
  /** Reads that change nothing: the reference's resource and connection, then the adapter. */
  const read = <K extends keyof Adapter>(name: K): ByRef<Adapter[K]> =>
    (async (ref: TemporalRef, ...rest: unknown[]) =>
      (raw[name] as (...args: unknown[]) => Promise<unknown>)(await authority.temporal(ref), ...rest)) as ByRef<
      Adapter[K]
    >;

  /** A version as the server describes it (undefined: it does not know it). */
  async function versionRead(t: TemporalTarget, buildId: string) {
    const service = (await connections.get(t)).workflowService;
    return describeVersionSettled(service, t.temporalNamespace, t.deploymentName, buildId);
  }
  const versionInfo = async (t: TemporalTarget, buildId: string) =>
    (await versionRead(t, buildId))?.workerDeploymentVersionInfo;
  /** The task queues the version's workers ever polled (what the registration wait reads too). */
  const polledQueues = async (t: TemporalTarget, buildId: string) =>
    (await versionRead(t, buildId))?.versionTaskQueues ?? [];

  /** A workflow execution's info in the resource's Temporal (undefined: there is none under the ID). */
  async function executionInfo(t: TemporalTarget, workflowId: string) {
    const service = (await connections.get(t)).workflowService;
    try {
      return (await service.describeWorkflowExecution({ namespace: t.temporalNamespace, execution: { workflowId } }))
        .workflowExecutionInfo;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Refuses a routing change that gives the spec's build more than it has before the gate it must come after
   * (gateBefore) passed: that gate's own run, read here, passed on the build (`passedBy`: its workflow ID); or a person
   * promoted past it (`promoted`, what `promote` and `rollback` do), said by the resource's own RolloutWorkflow, so
   * the routing change is in its history.
   */
  async function mustHavePassedGate(t: Authorized, buildId: string, share: number, passedBy?: string): Promise<void> {
    const { rollout } = t.desired.spec;
    if (buildId !== t.desired.buildId || !(rollout.gate || rollout.steps?.some((s) => s.gate))) return;
    let no: { problem: string; running: boolean } | undefined;
    const before = gateBefore(rollout, share, hadTraffic(await versionInfo(t, buildId)));
    if (!before) return;
    const label = `${before.label} gate`;
    if (passedBy === promotedPastGate) {
      const scheduler = Context.current().info.workflowExecution?.workflowId;
      if (scheduler === rolloutWorkflowId(installation, t.owner.namespace, t.owner.name)) return;
      no = {
        problem: `a promote past it said by ${scheduler ?? 'no workflow'}, not the resource's rollout`,
        running: false,
      };
    } else {
      const ours = passedBy?.startsWith(gateWorkflowIdPrefix(t.owner, buildId)) ? passedBy : undefined;
      no = ours
        ? gateRunProblem(ours, await executionInfo(t, ours), before.gate.workflowType, {
            deploymentName: t.deploymentName,
            buildId,
          })
        : { problem: `${passedBy ?? 'no run'} is not a run of it`, running: false };
    }
    if (!no) return;
    // A change that gives the build no more than it has needs no gate (a retry, a run that read routing late).
    const r = await raw.describeRouting(t);
    if (r.current === buildId || (r.ramping === buildId && share <= r.rampPercentage)) return;
    // Tried again while the run still runs: it may pass yet.
    throw refused('gate', `routing to ${buildId} before its ${label} passed: ${no.problem}`, { retryable: no.running });
  }

  /** When each version (by server, namespace, worker deployment and build) was last read with its workers' task queues. */
  const seenPolled = new Map<string, number>();
  /**
   * Refuses routing to a version whose workers never polled (the server would take it): whatever a caller says of
   * its registration. Read once, then believed for `polledFreshMs` (the steps of one rollout read it once).
   */
  async function mustBePolled(t: Authorized, buildId: string): Promise<void> {
    const key = JSON.stringify([t.connection.hostPort, t.temporalNamespace, t.deploymentName, buildId]);
    if (Date.now() - (seenPolled.get(key) ?? -Infinity) < polledFreshMs) return;
    if (!(await polledQueues(t, buildId)).length)
      throw refused('not-polled', `no worker of ${buildId} has polled Temporal yet`, { retryable: true });
    seenPolled.set(key, Date.now());
  }

  return {
    describeRouting: read('describeRouting'),
    claimManager: read('claimManager'),
    clearRampIf: read('clearRampIf'),
    awaitVersionRegistered: read('awaitVersionRegistered'),
    versionStatus: read('versionStatus'),
    awaitDrained: read('awaitDrained'),
    countOpenExecutions: read('countOpenExecutions'),
    countOutcomes: read('countOutcomes'),
    countPinned: read('countPinned'),

    /** Ramps a build the resource declares or runs (an empty build ID clears the ramp). */
    async setRamping(ref: TemporalRef, buildId: string, percentage: number, o: RoutingCallOptions = {}) {
      const t = await authority.temporal(ref);
      if (buildId !== '') {
        await authority.mayRouteTo(t, buildId, () => raw.describeRouting(t));
        await mustBePolled(t, buildId);
        await mustHavePassedGate(t, buildId, percentage, o.gate);
      }
      return raw.setRamping(t, buildId, percentage, o);
    },

    /** Makes current a build the resource declares or runs (a rollout, a promote, a rollback). */
    async setCurrent(ref: TemporalRef, buildId: string, o: RoutingCallOptions = {}) {
      const t = await authority.temporal(ref);
      await authority.mayRouteTo(t, buildId, () => raw.describeRouting(t));
      await mustBePolled(t, buildId);
      await mustHavePassedGate(t, buildId, 100, o.gate);
      return raw.setCurrent(t, buildId, o);
    },

    /** Routes every version away: the resource's deletion only. */
    async routeAway(ref: TemporalRef) {
      const t = await authority.temporal(ref);
      mustBeDeleting(t, 'routing new work away from every version');
      return raw.routeAway(t);
    },

    /** Deletes the worker deployment: the resource's deletion only. */
    async deleteWorkerDeployment(ref: TemporalRef) {
      const t = await authority.temporal(ref);
      mustBeDeleting(t, 'deleting the worker deployment');
      return raw.deleteWorkerDeployment(t);
    },

    /**
     * Deletes a retired version (the server would delete a draining one: skipDrainage). While a Deployment of the
     * resource runs it, Temporal must say it is retired; once none does (its sunset deleted it), no worker of it is
     * left to take work.
     */
    async deleteVersion(ref: TemporalRef, buildId: string) {
      const t = await authority.temporal(ref);
      if ((await authority.deploymentsOf(t, buildId)).length)
        mustBeDrained(await raw.versionStatus(t, buildId), buildId, `deleting version ${buildId}`);
      return raw.deleteVersion(t, buildId);
    },

    /** Runs one of the spec's gates on the spec's build: what runs, with what input, is the spec's. */
    async runGate(ref: TemporalRef, run: GateRequest) {
      const t = await authority.temporal(ref);
      const at = `${t.owner.namespace}/${t.owner.name}`;
      const gate = gateOf(t.desired.spec, run.gate);
      if (!gate) throw refused('gate', `${at} declares no gate "${run.gate}"`);
      if (run.buildId !== t.desired.buildId)
        throw refused('gate', `${run.buildId} is not the build ${at} declares (${t.desired.buildId})`);
      if (!run.workflowId.startsWith(gateWorkflowIdPrefix(t.owner, run.buildId, run.gate)))
        throw refused('gate', `${run.workflowId} is not a gate run of ${at} on ${run.buildId}`);
      const taskQueue = gate.taskQueue ?? run.taskQueue;
      if (!gate.taskQueue) {
        const queues = await polledQueues(t, run.buildId);
        if (!queues.some((q) => q.name === taskQueue))
          throw refused('gate', `the workers of ${run.buildId} poll no task queue "${taskQueue}"`);
      }
      return raw.runGate(t, {
        buildId: run.buildId,
        workflowType: gate.workflowType,
        taskQueue,
        ...(gate.inputFrom ? { inputFrom: gate.inputFrom } : { input: gate.input }),
        workflowId: run.workflowId,
        timeoutMs: parseDuration(gate.timeout ?? '10m'),
      });
    },

    /** Cancels one of the resource's own gate runs. */
    async cancelGate(ref: TemporalRef, workflowId: string) {
      const t = await authority.temporal(ref);
      if (!workflowId.startsWith(gateWorkflowIdPrefix(t.owner)))
        throw refused('gate', `${workflowId} is not a gate run of ${t.owner.namespace}/${t.owner.name}`);
      return raw.cancelGate(t, workflowId);
    },

    /**
     * `sunset.onMaxDrain`, as the spec says it, on a version Temporal says has been out of routing for at least
     * `sunset.maxDrainDuration`.
     */
    async actOnPinned(ref: TemporalRef, buildId: string, action: PinnedAction, reason: string) {
      const t = await authority.temporal(ref);
      const { maxDrainDuration, onMaxDrain } = t.desired.spec.sunset;
      const asked = `${action.kind}${action.signalName ? ` ${action.signalName}` : ''}`;
      if (
        !maxDrainDuration ||
        !onMaxDrain ||
        onMaxDrain.action !== action.kind ||
        (action.kind === 'Signal' && onMaxDrain.signalName !== action.signalName)
      )
        throw refused('policy', `${asked} is not what sunset.onMaxDrain of ${t.owner.namespace}/${t.owner.name} says`);
      const info = await versionInfo(t, buildId);
      const { Status } = versionStatuses;
      if (info?.status === Status.CURRENT || info?.status === Status.RAMPING)
        throw refused('live-version', `${buildId} is ${info.status === Status.CURRENT ? 'current' : 'ramping'}`);
      const since = info?.lastDeactivationTime ?? info?.createTime;
      const sinceMs = since?.seconds != null ? Number(since.seconds) * 1000 : undefined;
      if (sinceMs === undefined || Date.now() - sinceMs < parseDuration(maxDrainDuration))
        throw refused(
          'policy',
          `${buildId} has not been out of routing for sunset.maxDrainDuration (${maxDrainDuration})`,
          {
            retryable: true,
          },
        );
      return raw.actOnPinned(t, buildId, action, reason);
    },

    /** `rollout.onAbort.movePinned`: from a build out of routing onto the current one, as Temporal says. */
    async movePinned(ref: TemporalRef, fromBuildId: string, toBuildId: string, reason: string) {
      const t = await authority.temporal(ref);
      if (!t.desired.spec.rollout.onAbort?.movePinned)
        throw refused('policy', `rollout.onAbort.movePinned of ${t.owner.namespace}/${t.owner.name} is not set`);
      const r = await raw.describeRouting(t);
      if (r.current !== toBuildId) throw refused('not-current', `${toBuildId} is not current`);
      if (r.ramping === fromBuildId || r.current === fromBuildId)
        throw refused('live-version', `${fromBuildId} still gets new executions`);
      return raw.movePinned(t, fromBuildId, toBuildId, reason);
    },
  };
}

const versionStatuses = {
  Status: {
    CURRENT: temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT,
    RAMPING: temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING,
  },
};
