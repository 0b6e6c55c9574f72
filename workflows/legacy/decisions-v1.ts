/** The pure decisions of the frozen RolloutWorkflow (./rollout-v1.ts), frozen with it. */
import { formatDuration, parseDuration } from '../../api/duration.js';
import { versionedDeploymentName } from '../../api/names.js';
import type { Condition } from '../../api/common.js';
import type { RolloutStep, TemporalWorkerDeploymentStatus } from '../../api/temporal-worker-deployment.js';
import type { Desired, RolloutState, SunsetVersion } from './state-v1.js';

/** What a new spec means for the versions the workflow knows. */
export interface SpecDecision {
  state: RolloutState;
  /** The in-flight target this spec replaces; it is sunset like any other non-current version. */
  superseded?: string;
  /** Re-apply live Deployments: the connection changed (all of them), or the Deployment settings of the desired build. */
  reapply: boolean;
  /** The spec is older than (or the same as) what the workflow already has. */
  ignored: boolean;
}

/**
 * Folds a new spec into the state: the same build re-applies, a new build becomes the target (superseding
 * an in-flight one), a deprecated build brought back stops being sunset.
 */
export function planSpecChange(state: RolloutState, desired: Desired, now: Date): SpecDecision {
  const known = state.desired;
  if (known && (desired.generation < known.generation || (desired.generation === known.generation && desired.connectionVersion === known.connectionVersion))) {
    return { state, reapply: false, ignored: true };
  }
  const next: RolloutState = { ...state, desired, deprecated: [...state.deprecated] };
  let superseded: string | undefined;
  const retire = (buildId: string) => {
    if (!next.deprecated.some((v) => v.buildId === buildId)) next.deprecated.push({ buildId, deprecatedSince: now.toISOString() });
  };
  if (next.target && next.target.buildId !== desired.buildId) {
    superseded = next.target.buildId;
    retire(superseded);
    next.target = undefined;
  }
  const isCurrent = next.current?.buildId === desired.buildId;
  const isTarget = next.target?.buildId === desired.buildId;
  if (next.aborted && next.aborted.buildId !== desired.buildId) next.aborted = undefined;
  if (!isCurrent && !isTarget && next.aborted?.buildId !== desired.buildId) {
    next.deprecated = next.deprecated.filter((v) => v.buildId !== desired.buildId);
    next.target = { buildId: desired.buildId, generation: desired.generation };
  }
  next.templates = { ...state.templates, [desired.buildId]: desired.spec.template };
  // A new connection reaches every live Deployment; new Deployment settings reach the desired build's.
  const changedConnection = known !== undefined && known.connectionVersion !== desired.connectionVersion;
  const changedSettings = known !== undefined && deploymentSettings(known) !== deploymentSettings(desired);
  return { state: next, superseded, reapply: changedConnection || ((isCurrent || isTarget) && changedSettings), ignored: false };
}

/** What of a spec, besides the template, shapes a versioned Deployment. */
function deploymentSettings(d: Desired): string {
  const { replicas, minReadySeconds, progressDeadlineSeconds, workerOptions } = d.spec;
  return JSON.stringify([replicas, minReadySeconds, progressDeadlineSeconds, workerOptions.temporalNamespace]);
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
export function sunsetAction(version: SunsetVersion, sunset: { scaledownDelay: string; deleteDelay: string }, now: Date): SunsetAction {
  if (!version.drainedSince) return { kind: 'waitForDrained' };
  const drained = Date.parse(version.drainedSince);
  const scaleAt = drained + parseDuration(sunset.scaledownDelay);
  const deleteAt = Math.max(scaleAt, drained + parseDuration(sunset.deleteDelay));
  if (!version.scaledDown) return now.getTime() < scaleAt ? { kind: 'waitUntil', atMs: scaleAt, then: 'scaleDown' } : { kind: 'scaleDown' };
  return now.getTime() < deleteAt ? { kind: 'waitUntil', atMs: deleteAt, then: 'delete' } : { kind: 'delete' };
}

/** Drainage as the server reports it, reduced to what sunset needs. */
export function isDrained(status: string | undefined): boolean {
  return status === 'Drained' || status === 'Inactive' || status === 'NotRegistered';
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

const progressingPhases = new Set(['Pending', 'Deploying', 'WaitingForPollers', 'Gating', 'Ramping', 'AwaitingPromotion', 'Deleting']);

/** The resource's status, rendered from the state: conditions, versions, phase. */
export function renderStatus(state: RolloutState): TemporalWorkerDeploymentStatus {
  const owner = state.owner.name;
  const generation = state.desired?.generation;
  const condition = (type: string, ok: boolean): Condition => ({
    type,
    status: ok ? 'True' : 'False',
    reason: state.reason,
    message: state.message,
    lastTransitionTime: state.since,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  });
  const target = state.target;
  return {
    observedGeneration: generation,
    phase: state.phase,
    message: state.message,
    conditions: [condition('Ready', state.phase === 'Ready'), condition('Progressing', progressingPhases.has(state.phase))],
    currentVersion: state.current
      ? { buildID: state.current.buildId, deploymentName: versionedDeploymentName(owner, state.current.buildId), status: 'Current', since: state.current.since }
      : undefined,
    targetVersion: target
      ? {
          buildID: target.buildId,
          deploymentName: versionedDeploymentName(owner, target.buildId),
          status: target.rampPercentage !== undefined ? 'Ramping' : 'Inactive',
          rampPercentage: target.rampPercentage,
          stepIndex: target.stepIndex,
          rampingSince: target.rampingSince,
        }
      : undefined,
    deprecatedVersions: state.deprecated.length
      ? state.deprecated.map((v) => ({
          buildID: v.buildId,
          deploymentName: versionedDeploymentName(owner, v.buildId),
          status: v.status,
          deprecatedSince: v.deprecatedSince,
          drainedSince: v.drainedSince,
        }))
      : undefined,
    lastAbortReason: state.aborted?.reason,
  };
}
