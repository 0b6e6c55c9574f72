/**
 * Pure decisions of RolloutWorkflow: functions of (state, input, now) returning plain values. No I/O, no
 * clock: the workflow passes `now` in. Covered by table tests in tests/unit/decisions.test.ts.
 */
import { formatDuration, parseDuration } from '../api/duration.js';
import { rolloutWorkflowId } from '../api/names.js';
import { isDrained } from '../api/version-status.js';
import type { Analysis, Rollout, RolloutStep } from '../api/temporal-worker-deployment.js';
import { problemWithRollbackTo, rollbackWindowMs } from './controls.js';
import type { ResourceRead } from '../activities/index.js';
import type { RolloutState, StepProgress, SunsetVersion, Target, TemporalPlace } from './state.js';
import type { Desired, Owner } from '../api/resource.js';

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** What a new spec means for the versions the workflow knows. */
export interface SpecDecision {
  state: RolloutState;
  /** The in-flight target this spec replaces; it is sunset like any other non-current version. */
  superseded?: string;
  /** Re-apply live Deployments: the connection changed, or the Deployment settings or template of the desired build. */
  reapply: boolean;
  /** The spec is older than (or the same as) what the workflow already has. */
  ignored: boolean;
}

/**
 * What a read of the resource means for this lifecycle. `unconfirmed`: this run's owner was never read as itself
 * and the apiserver has no such object (a run started by hand, a forged owner): it ends, touching nothing.
 * `delete`: the object this lifecycle rolled out is being deleted, is gone, or its name now holds another object.
 * `spec`: the spec to act on. `nothing`: the object is ours and live, but its spec cannot be used (the watcher says
 * why on the resource) and nothing changes.
 */
export type ReadDecision =
  { kind: 'unconfirmed' } | { kind: 'delete'; why: string } | { kind: 'spec'; desired: Desired } | { kind: 'nothing' };

export function planRead(state: RolloutState, read: ResourceRead): ReadDecision {
  const ours = read.found && read.uid === state.owner.uid;
  if (!ours) {
    if (!state.read) return { kind: 'unconfirmed' };
    return {
      kind: 'delete',
      why: read.found
        ? `${state.owner.namespace}/${state.owner.name} is now another object (uid ${read.uid})`
        : 'the resource is gone',
    };
  }
  if (read.deleting) return { kind: 'delete', why: 'the resource is being deleted' };
  return read.desired ? { kind: 'spec', desired: read.desired } : { kind: 'nothing' };
}

/**
 * Why this run must touch nothing, or undefined when it is the resource's rollout for the controller's installation:
 * its ID is the one that installation gives the resource (a run started by hand under another ID is not), and no
 * other installation claimed the resource (`glidepath.dev/installation`).
 */
export function notThisInstallations(workflowId: string, owner: Owner, read: ResourceRead): string | undefined {
  if (!read.installation) return 'the controller named no installation';
  const expected = rolloutWorkflowId(read.installation, owner.namespace, owner.name);
  if (workflowId !== expected) return `its workflow ID is not ${expected}`;
  // Only the object this run rolls out: a new one under the name is another lifecycle, cleaned up after as such.
  if (read.found && read.uid === owner.uid && read.claimedBy !== undefined && read.claimedBy !== read.installation)
    return `installation ${read.claimedBy} rolls out ${owner.namespace}/${owner.name}`;
  return undefined;
}

/** Whether a message's versions are the ones last read: then it asks for nothing new (no read). */
export function alreadyRead(state: RolloutState, hint: unknown): boolean {
  if (!isObject(hint) || !state.read) return false;
  return (
    hint.resourceVersion === state.read.resourceVersion &&
    (hint.connectionVersion ?? undefined) === state.read.connectionVersion
  );
}

/** Where a desired spec puts its versions in Temporal. */
export const placeOf = (d: Desired): TemporalPlace => ({
  connection: d.connection,
  temporalNamespace: d.spec.workerOptions.temporalNamespace,
});

/**
 * Why a spec cannot be taken because it moves the worker deployment to another Temporal (another namespace, or the
 * connection's hostPort) while a build is current or ramping there: in place, nothing would route to the Deployment
 * where it lands, and the pinned work left behind would lose its workers. A target nothing routes to yet (its first
 * rollout still waiting, say on a Temporal it cannot reach) moves freely. Undefined: it can be taken.
 */
export function placeChangeProblem(state: RolloutState, desired: Desired): string | undefined {
  const live = state.current ?? (state.target?.rampPercentage !== undefined ? state.target : undefined);
  if (!live || !state.desired) return undefined;
  const from = live.place ?? placeOf(state.desired);
  const to = placeOf(desired);
  const what =
    from.temporalNamespace !== to.temporalNamespace
      ? `spec.workerOptions.temporalNamespace changed from ${from.temporalNamespace} to ${to.temporalNamespace}`
      : from.connection.hostPort !== to.connection.hostPort
        ? `the connection's hostPort changed from ${from.connection.hostPort} to ${to.connection.hostPort}`
        : undefined;
  if (!what) return undefined;
  return `${what}: a worker deployment is not moved to another Temporal in place (nothing would route to it there, and its pinned work would lose its workers). Create a resource for the new place and delete this one once its work has drained, or set it back`;
}

/**
 * Whether resourceVersion `a` is newer than `b`: compared as numbers when both are (etcd's are), else any change
 * counts as newer (the apiserver's are opaque, and a read is never older than the one before it).
 */
export function newerVersion(a: string, b: string): boolean {
  const [na, nb] = [Number(a), Number(b)];
  if (a !== '' && b !== '' && Number.isSafeInteger(na) && Number.isSafeInteger(nb)) return na > nb;
  return a !== b;
}

/**
 * Folds a new spec into the state: the same build re-applies, a new build becomes the target (superseding
 * an in-flight one), a deprecated build brought back stops being sunset.
 */
export function planSpecChange(state: RolloutState, desired: Desired, now: Date): SpecDecision {
  const known = state.desired;
  if (
    known &&
    (desired.generation < known.generation ||
      (desired.generation === known.generation && !newerVersion(desired.connectionVersion, known.connectionVersion)))
  ) {
    return { state, reapply: false, ignored: true };
  }
  const next: RolloutState = { ...state, desired, deprecated: [...state.deprecated] };
  let superseded: string | undefined;
  const retire = (buildId: string, place: TemporalPlace | undefined) => {
    if (!next.deprecated.some((v) => v.buildId === buildId))
      next.deprecated.push({ buildId, deprecatedSince: now.toISOString(), ...(place ? { place } : {}) });
  };
  if (next.target && next.target.buildId !== desired.buildId) {
    superseded = next.target.buildId;
    const place = next.target.place ?? (known ? placeOf(known) : undefined);
    retire(superseded, place);
    // It may hold the ramp: cleared before anything else, until Temporal confirms.
    next.rampsToClear = [...(state.rampsToClear ?? []), { buildId: superseded, ...(place ? { place } : {}) }];
    next.target = undefined;
    // What was meant for it is not carried to another build: a promote, a pause its failed gate set.
    next.promote = undefined;
    if (next.pausedBy?.buildId === superseded) next.pausedBy = undefined;
  }
  const isCurrent = next.current?.buildId === desired.buildId;
  const isTarget = next.target?.buildId === desired.buildId;
  // A new generation starts the aborted build's rollout again (so does `retry`, without a spec change).
  const newGeneration = known !== undefined && desired.generation > known.generation;
  // (Not a rollback's hold: that lasts until the spec's build changes or `retry`, so an unrelated edit never
  // brings the build just rolled back from straight back.)
  if (
    next.aborted &&
    (next.aborted.buildId !== desired.buildId || (newGeneration && next.aborted.cause !== 'RolledBack'))
  )
    next.aborted = undefined;
  if (!isCurrent && !isTarget && next.aborted?.buildId !== desired.buildId) {
    // Back to a build that was current moments ago and still runs: switch back at once (no gate, no steps).
    const rollback = problemWithRollbackTo(next, desired.buildId, now, rollbackWindowMs(next)) === undefined;
    next.deprecated = next.deprecated.filter((v) => v.buildId !== desired.buildId);
    next.target = {
      buildId: desired.buildId,
      generation: desired.generation,
      stage: 'deploying',
      ...(rollback ? { rollback: { reason: `the spec went back to ${desired.buildId}`, who: 'spec' } } : {}),
    };
    // A signal's pause was for the rollout it held, not for a new one.
    if (next.pausedBy?.buildId !== undefined && next.pausedBy.buildId !== desired.buildId) next.pausedBy = undefined;
  } else if (
    isTarget &&
    next.target &&
    next.target.gateKey !== undefined &&
    next.target.gateKey !== gateKey(desired.spec.rollout.gate)
  ) {
    // Another gate: it runs again, under a new run ID.
    const { rollout: _passed, ...gateRunIds } = next.target.gateRunIds ?? {};
    next.target = { ...next.target, gateKey: undefined, gatePassedBy: undefined, gateRunIds };
  }
  const knownTemplate = state.templates?.[desired.buildId];
  next.templates = { ...state.templates, [desired.buildId]: desired.spec.template };
  // A blocked sunset tries again with a new spec.
  next.deprecated = next.deprecated.map((v) => (v.blocked ? { ...v, blocked: undefined } : v));
  // A new connection reaches the current and target Deployments; new Deployment settings, or a new template
  // under the same (custom) build ID, reach the desired build's: a rolling update of the same version.
  const changedConnection = known !== undefined && known.connectionVersion !== desired.connectionVersion;
  const changedSettings = known !== undefined && deploymentSettings(known) !== deploymentSettings(desired);
  const changedTemplate =
    knownTemplate !== undefined && JSON.stringify(knownTemplate) !== JSON.stringify(desired.spec.template);
  return {
    state: next,
    superseded,
    reapply: changedConnection || ((isCurrent || isTarget) && (changedSettings || changedTemplate)),
    ignored: false,
  };
}

/** A gate's definition, to tell whether a new generation changed it. */
export const gateKey = (gate: unknown): string => JSON.stringify(gate ?? null);

/** What of a spec, besides the template, shapes a versioned Deployment. */
function deploymentSettings(d: Desired): string {
  const { replicas, minReadySeconds, progressDeadlineSeconds, workerOptions, revisionHistoryLimit, strategy } = d.spec;
  const settings: unknown[] = [replicas, minReadySeconds, progressDeadlineSeconds, workerOptions.temporalNamespace];
  // A WorkerDeployment's spec.deployment extras (a TemporalWorkerDeployment has none: its string is as before).
  if (revisionHistoryLimit !== undefined || strategy !== undefined)
    settings.push(revisionHistoryLimit ?? null, strategy ?? null);
  return JSON.stringify(settings);
}

/** What a Progressive, Manual or AllAtOnce rollout does next, from the live ramp (so a spec edited mid-rollout is safe). */
export type RampPlan =
  { kind: 'current' } | { kind: 'awaitPromotion' } | { kind: 'step'; index: number; rampNow: boolean };

/**
 * The next routing step of the target, from the spec in force and where the ramp is now: AllAtOnce → current
 * now; Manual → wait for promote where it is; Progressive → the step at the live ramp if it is not done, else
 * the first step above it, else current. Edited steps so continue from the live ramp, never backwards.
 */
export function nextRampStep(
  rollout: Pick<Rollout, 'strategy' | 'steps'>,
  target: Pick<Target, 'rampPercentage' | 'promotedFully'> & { step?: Pick<StepProgress, 'done'> },
): RampPlan {
  if (rollout.strategy === 'AllAtOnce' || target.promotedFully) return { kind: 'current' };
  if (rollout.strategy === 'Manual') return { kind: 'awaitPromotion' };
  const steps = rollout.steps ?? [];
  const live = target.rampPercentage;
  if (live === undefined) return steps.length ? { kind: 'step', index: 0, rampNow: true } : { kind: 'current' };
  const index = steps.findIndex((s) => s.rampPercentage >= live);
  if (index === -1) return { kind: 'current' };
  if (steps[index]!.rampPercentage > live) return { kind: 'step', index, rampNow: true };
  if (!target.step?.done) return { kind: 'step', index, rampNow: false };
  return index + 1 < steps.length ? { kind: 'step', index: index + 1, rampNow: true } : { kind: 'current' };
}

/**
 * The status when a version's registration wait reached the progress deadline. The workers' settings are the usual
 * cause, unless the wait's last check failed itself (Temporal refused or did not answer): then that is the news.
 * @example noPollersMessage('v2', 600, 'DEADLINE_EXCEEDED') // "… could not tell … the last check failed: DEADLINE_EXCEEDED …"
 */
export function noPollersMessage(buildId: string, deadlineSeconds: number, lastCheckFailure?: string): string {
  if (lastCheckFailure) {
    const failure = lastCheckFailure.length > 300 ? `${lastCheckFailure.slice(0, 300)}…` : lastCheckFailure; // an Event's message stays short
    return `Temporal could not tell within ${deadlineSeconds}s whether workers of ${buildId} poll: the last check failed: ${failure} (the wait goes on)`;
  }
  return `no worker of ${buildId} polled Temporal within ${deadlineSeconds}s: check that the worker uses TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID with worker versioning on (the pods' logs say more)`;
}

/** Delay before backstop read number `attempt` (0-based) of a wait: 1s, 2s, 4s, … up to `maxMs`. */
export function recheckDelay(attempt: number, maxMs: number): number {
  return Math.min(1000 * 2 ** Math.min(attempt, 20), maxMs);
}

/**
 * The fresher of two observations of one Deployment (signals and reads arrive in any order): by
 * resourceVersion when both have one (etcd revisions, compared as numbers), else by observedGeneration.
 */
export function newerObservation<T extends { resourceVersion?: string; observedGeneration?: number }>(
  a: T | undefined,
  b: T,
): T {
  if (!a) return b;
  const [ra, rb] = [Number(a.resourceVersion), Number(b.resourceVersion)];
  if (a.resourceVersion && b.resourceVersion && Number.isFinite(ra) && Number.isFinite(rb)) return ra > rb ? a : b;
  return (a.observedGeneration ?? 0) > (b.observedGeneration ?? 0) ? a : b;
}

/** Whether a rollout should run now: there is a target, and it is not the aborted build. */
export function rolloutPending(state: RolloutState): boolean {
  return !state.deleting && state.target !== undefined && state.aborted?.buildId !== state.target.buildId;
}

/** Paused by a signal or by the spec. */
export function isPaused(state: RolloutState): boolean {
  return state.pausedBy !== undefined || state.desired?.spec.rollout.paused === true;
}

/**
 * How the very first version is routed. With unversioned workers still polling, the strategy ramps work
 * away from them; with none, ramping would strand the unramped share on a queue nobody polls: current now.
 */
export function firstVersionRouting(unversionedPollers: boolean): 'byStrategy' | 'currentNow' {
  return unversionedPollers ? 'byStrategy' : 'currentNow';
}

/** The readable summary of a step's timer, as the Web UI shows it: "ramp 25% for 2m". */
export function stepSummary(step: RolloutStep, remainingMs?: number): string {
  if (!step.pauseDuration) return `ramp ${step.rampPercentage}% until promoted`;
  const full = parseDuration(step.pauseDuration);
  return remainingMs !== undefined && remainingMs < full
    ? `ramp ${step.rampPercentage}% for ${formatDuration(remainingMs)} more (resumed)`
    : `ramp ${step.rampPercentage}% for ${formatDuration(full)}`;
}

/** Delay before drainage check number `attempt` (0-based): 1s, 2s, 4s, … up to `maxMs`. */
export function drainPollDelay(attempt: number, maxMs: number): number {
  return Math.min(1000 * 2 ** Math.min(attempt, 20), maxMs);
}

/** The next thing to do for a version being sunset. */
export type SunsetAction =
  | { kind: 'waitForDrained' }
  | { kind: 'waitUntil'; atMs: number; then: 'scaleDown' | 'delete' }
  | { kind: 'scaleDown' }
  | { kind: 'delete' };

/**
 * Sunset of one version: nothing before it is drained (never an early scale-down), then scale to zero
 * `scaledownDelay` after it drained, then delete `deleteDelay` after it drained.
 */
export function sunsetAction(
  version: SunsetVersion,
  sunset: { scaledownDelay: string; deleteDelay: string },
  now: Date,
): SunsetAction {
  if (!version.drainedSince) return { kind: 'waitForDrained' };
  const drained = Date.parse(version.drainedSince);
  const scaleAt = drained + parseDuration(sunset.scaledownDelay);
  const deleteAt = Math.max(scaleAt, drained + parseDuration(sunset.deleteDelay));
  if (!version.scaledDown)
    return now.getTime() < scaleAt ? { kind: 'waitUntil', atMs: scaleAt, then: 'scaleDown' } : { kind: 'scaleDown' };
  return now.getTime() < deleteAt ? { kind: 'waitUntil', atMs: deleteAt, then: 'delete' } : { kind: 'delete' };
}

/** Versions that can go to make room under the server's cap: drained or inactive, not current, not ours to keep. */
export function versionsToMakeRoom(
  versions: { buildId: string; status: string }[],
  keep: string[],
  maxVersions: number,
): { remove: string[]; atCap: boolean } {
  const room = versions.length - (maxVersions - 1);
  if (room <= 0) return { remove: [], atCap: false };
  const removable = versions.filter((v) => !keep.includes(v.buildId) && isDrained(v.status)).map((v) => v.buildId);
  const remove = removable.slice(0, room);
  return { remove, atCap: remove.length < room };
}

/** Closed executions of one version over a window, and how many of them failed (Failed / TimedOut). */
export interface Outcomes {
  closed: number;
  failed: number;
}

export type AnalysisVerdict = { kind: 'pass' | 'fail' | 'inconclusive'; message: string };

const percent = (o: Outcomes) => (o.closed === 0 ? 0 : (100 * o.failed) / o.closed);
const shown = (p: number) => `${Math.round(p * 10) / 10} %`;

/**
 * The target's failure rate against `maxFailurePercentage` and, when set and the current version has closed
 * executions, against `maxFailureRatioToCurrent` times the current's rate. Fewer than `minExecutions` closed on
 * the target: inconclusive. The message is what people read: "v2: 3 of 120 failed (2.5 %) vs v1 0.8 % — over 2 %".
 */
export function analysisVerdict(
  analysis: Pick<Analysis, 'maxFailurePercentage' | 'maxFailureRatioToCurrent' | 'minExecutions'>,
  target: { buildId: string } & Outcomes,
  current?: { buildId: string } & Outcomes,
): AnalysisVerdict {
  const rate = percent(target);
  const versus = current && current.closed > 0 ? ` vs ${current.buildId} ${shown(percent(current))}` : '';
  const said = `${target.buildId}: ${target.failed} of ${target.closed} failed (${shown(rate)})${versus}`;
  const minExecutions = analysis.minExecutions ?? 10;
  if (target.closed < minExecutions)
    return { kind: 'inconclusive', message: `${said} — fewer than ${minExecutions} closed executions` };
  if (rate > analysis.maxFailurePercentage)
    return { kind: 'fail', message: `${said} — over ${analysis.maxFailurePercentage} %` };
  const ratio = analysis.maxFailureRatioToCurrent;
  if (ratio !== undefined && current && current.failed > 0) {
    const limit = percent(current) * ratio;
    if (rate > limit)
      return { kind: 'fail', message: `${said} — over ${ratio}× ${current.buildId}'s rate (${shown(limit)})` };
  }
  return { kind: 'pass', message: `${said} — within limits` };
}
