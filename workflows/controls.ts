/**
 * The controls people send (pause, resume, abort, promote, rollback, retry), decided as pure functions of the
 * state: whether one makes sense now (an update's validator refuses it with this message; a signal records the
 * refusal), and where a rollback goes. Covered by tests/unit/controls.test.ts.
 */
import { formatDuration, parseDuration } from '../api/duration.js';
import type { ControlName } from './messages.js';
import type { RolloutState } from './state.js';

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** A control's request, checked: only the fields a control reads, each of the right type. */
export interface Control {
  reason?: string;
  identity?: string;
  requestId?: string;
  buildId?: string;
  toBuildId?: string;
  full?: boolean;
}

/** Longest text a control may carry: it is kept in the state, the history and the resource's status. */
export const maxControlText = 1024;

/** The request as a control, or why it cannot be one (a signal or update can come from anyone). */
export function parseControl(req: unknown): Control | string {
  if (req === undefined || req === null) return {};
  if (!isObject(req)) return 'the argument is not an object';
  for (const key of ['reason', 'identity', 'requestId', 'buildId', 'toBuildId'] as const) {
    if (req[key] !== undefined && typeof req[key] !== 'string') return `${key} is not a string`;
    if (typeof req[key] === 'string' && req[key].length > maxControlText)
      return `${key} is longer than ${maxControlText} characters`;
  }
  if (req.full !== undefined && typeof req.full !== 'boolean') return 'full is not a boolean';
  return req as Control;
}

/** `rollout.rollbackWindow` in ms (absent in specs from before it existed: the default, 1h). */
export function rollbackWindowMs(state: RolloutState): number {
  return parseDuration(state.desired?.spec.rollout.rollbackWindow ?? '1h');
}

/** Where a rollback goes: abort the target in flight (back to current), or make an earlier build current again. */
export type RollbackPlan =
  { kind: 'abortTarget'; buildId: string } | { kind: 'toVersion'; buildId: string } | { kind: 'refused'; why: string };

/**
 * A build can be rolled back to when it was current within the window and its Deployment still has available
 * pods (then Temporal can route to it at once). Without `toBuildId`: the target in flight if there is one, else
 * the build current before the current one.
 */
export function planRollback(
  state: RolloutState,
  toBuildId: string | undefined,
  now: Date,
  windowMs: number,
): RollbackPlan {
  const current = state.current?.buildId;
  const target = state.target?.buildId;
  if (target && state.aborted?.buildId !== target && (toBuildId === undefined || toBuildId === current)) {
    return current
      ? { kind: 'abortTarget', buildId: target }
      : { kind: 'refused', why: 'no build is current to roll back to' };
  }
  if (toBuildId !== undefined && toBuildId === current)
    return { kind: 'refused', why: `${toBuildId} is already current` };
  const wasCurrent = state.deprecated
    .filter((v) => v.currentUntil)
    .sort((a, b) => Date.parse(b.currentUntil!) - Date.parse(a.currentUntil!));
  const version = toBuildId === undefined ? wasCurrent[0] : state.deprecated.find((v) => v.buildId === toBuildId);
  if (!version)
    return {
      kind: 'refused',
      why: toBuildId
        ? `${toBuildId} is not a build that was current and is still deployed`
        : 'no earlier build to roll back to',
    };
  const problem = problemWithRollbackTo(state, version.buildId, now, windowMs);
  return problem ? { kind: 'refused', why: problem } : { kind: 'toVersion', buildId: version.buildId };
}

/** Why routing cannot go back to this retired build at once (undefined: it can). */
export function problemWithRollbackTo(
  state: RolloutState,
  buildId: string,
  now: Date,
  windowMs: number,
): string | undefined {
  const version = state.deprecated.find((v) => v.buildId === buildId);
  if (!version?.currentUntil) return `${buildId} was never current`;
  const ago = now.getTime() - Date.parse(version.currentUntil);
  if (windowMs <= 0) return 'rollout.rollbackWindow is 0s (rollbacks are off)';
  if (ago > windowMs)
    return `${buildId} was current ${formatDuration(ago)} ago, beyond rollout.rollbackWindow (${formatDuration(windowMs)})`;
  const d = state.deployments[buildId];
  if (version.scaledDown || !d?.exists || (d.availableReplicas ?? 0) === 0)
    return `the Deployment of ${buildId} has no available pods`;
  return undefined;
}

/** A deprecated version's sunset stopped on an error: `resume` and `retry` try it again (as a new spec does). */
export const sunsetBlocked = (state: RolloutState): boolean => state.deprecated.some((v) => v.blocked !== undefined);

/** What `retry` would do now, or why there is nothing to retry. */
export type RetryPlan =
  | { kind: 'rollOutAgain'; buildId: string }
  | { kind: 'unpause'; buildId: string }
  | { kind: 'unblock' }
  | { kind: 'refused'; why: string };

export function planRetry(state: RolloutState, buildId: string | undefined, blocked: boolean): RetryPlan {
  const desired = state.desired?.buildId;
  const meant = (b: string) => buildId === undefined || buildId === b;
  if (desired && state.aborted?.buildId === desired && state.current?.buildId !== desired) {
    return meant(desired)
      ? { kind: 'rollOutAgain', buildId: desired }
      : { kind: 'refused', why: `it names ${buildId}, but the aborted build is ${desired}` };
  }
  const target = state.target?.buildId;
  if (
    target &&
    state.pausedBy?.buildId === target &&
    (state.pausedBy.cause === 'GateFailed' ||
      state.pausedBy.cause === 'AnalysisFailed' ||
      state.pausedBy.cause === 'AnalysisInconclusive')
  ) {
    return meant(target)
      ? { kind: 'unpause', buildId: target }
      : { kind: 'refused', why: `it names ${buildId}, but the target is ${target}` };
  }
  if (blocked || sunsetBlocked(state)) return { kind: 'unblock' };
  return { kind: 'refused', why: 'nothing to retry: no aborted build, failed gate or failed analysis' };
}

export interface ControlFacts {
  /** The final routing change of the target is in flight. */
  promoting: boolean;
  /** The rollout stopped on a permanent error (Failed / Blocked). */
  blocked: boolean;
  now: Date;
}

/** Why a control makes no sense now (refused with this message), or undefined. */
export function problemWithControl(
  name: ControlName,
  control: Control,
  state: RolloutState,
  facts: ControlFacts,
): string | undefined {
  if (state.deleting) return 'the resource is being deleted';
  const target = state.target && state.aborted?.buildId !== state.target.buildId ? state.target : undefined;
  const notTarget = () =>
    control.buildId !== undefined && control.buildId !== target?.buildId
      ? `it names build ${control.buildId}, but the target is ${target?.buildId ?? 'none'}`
      : undefined;
  switch (name) {
    case 'pause':
      if (!target) return 'no rollout is in flight (set spec.rollout.paused: true to hold the next one)';
      if (state.pausedBy) return `already paused: ${state.pausedBy.reason}`;
      return notTarget();
    case 'resume':
      if (state.pausedBy || facts.blocked || sunsetBlocked(state)) return undefined; // paused, or Blocked: try again
      return state.desired?.spec.rollout.paused
        ? 'paused by spec.rollout.paused: set it to false to resume'
        : 'not paused';
    case 'abort':
      if (!target) return 'no rollout is in flight';
      if (facts.promoting) return `${target.buildId} is already being made current`;
      return notTarget();
    case 'promote':
      if (!target) return 'no rollout is in flight';
      return notTarget();
    case 'rollback': {
      if (facts.promoting) return `${state.target?.buildId} is being made current: roll back when it is`;
      const plan = planRollback(state, control.toBuildId, facts.now, rollbackWindowMs(state));
      return plan.kind === 'refused' ? plan.why : undefined;
    }
    case 'retry': {
      const plan = planRetry(state, control.buildId, facts.blocked);
      return plan.kind === 'refused' ? plan.why : undefined;
    }
  }
}
