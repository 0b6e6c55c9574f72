/**
 * What `glidepath status` shows of one resource, derived purely from the workflow's `status` query, the open
 * executions counted on each version, and `now` (passed in: the time left in a step counts down between two
 * queries). It is also the `--output json|yaml` form of `status`.
 */
import { parseDuration } from '../api/duration.js';
import type { RolloutStatus, TemporalPlace } from '../workflows/state.js';
import type { ResourceRef } from './config.js';

/** A version Glidepath knows, as a row of the versions table. */
export interface VersionView {
  buildId: string;
  /** `target`: being rolled out; `current`: routed to; `sunset`: on its way out (draining, drained, scaled down). */
  role: 'target' | 'current' | 'sunset';
  /** Temporal's status of the version, as the workflow last saw it. */
  status: string;
  /** Percentage of new executions routed to it. */
  traffic: number;
  /** Executions still open on it (pinned ones on a version no longer current); `null`: could not be counted. */
  openExecutions?: number | null;
  /** Since when it has its role (ramping since, deprecated since). */
  since?: string;
  scaledDown?: boolean;
  /** A permanent error stopped its sunset. */
  blocked?: string;
}

/** The Progressive step in force. */
export interface StepView {
  /** 1-based, as people count. */
  number: number;
  count: number;
  rampPercentage: number;
  /** The step's pause; absent: the step waits for promote. */
  pauseMs?: number;
  /** Time left in the pause (paused time excluded); 0 once it elapsed. */
  leftMs?: number;
  /** The pause is counting down now (not paused, not done). */
  counting: boolean;
}

export interface RolloutView {
  namespace: string;
  name: string;
  workflowId: string;
  phase: string;
  reason: string;
  message: string;
  paused: boolean;
  generation?: number;
  strategy?: string;
  /** The ramp percentage of every Progressive step, in order. */
  steps?: number[];
  step?: StepView;
  /** The target's share of new executions (0 before its first step; 100 once promoted fully and current). */
  rampPercentage?: number;
  versions: VersionView[];
  lastAbortReason?: string;
  lastAnalysis?: string;
  retrying?: RolloutStatus['retrying'];
  managerHeldBy?: string;
  refused?: RolloutStatus['refused'];
}

/** Every version the status names, with where in Temporal it lives (its executions are counted there). */
export function versionPlaces(status: RolloutStatus): { buildId: string; place?: TemporalPlace }[] {
  const out: { buildId: string; place?: TemporalPlace }[] = [];
  if (status.target) out.push({ buildId: status.target.buildId, place: status.target.place ?? status.currentPlace });
  if (status.current && status.current !== status.target?.buildId)
    out.push({ buildId: status.current, place: status.currentPlace });
  for (const d of status.deprecated) {
    if (!out.some((v) => v.buildId === d.buildId))
      out.push({ buildId: d.buildId, place: d.place ?? status.currentPlace });
  }
  return out;
}

/**
 * The view of one resource's rollout.
 * @param open executions open on each version by build ID (`null`: could not be counted; absent: not counted)
 */
export function rolloutView(
  ref: ResourceRef,
  status: RolloutStatus & { workflowId?: string },
  open: Record<string, number | null>,
  now: number,
): RolloutView {
  const target = status.target;
  const ramping = target?.step?.index !== undefined && (target.rampPercentage ?? 0) > 0;
  const ramp = target ? (ramping ? target.rampPercentage! : 0) : undefined;
  const versions: VersionView[] = [];
  const counted = (buildId: string) => (buildId in open ? { openExecutions: open[buildId] } : {});
  if (target) {
    versions.push({
      buildId: target.buildId,
      role: 'target',
      status: ramping ? 'Ramping' : target.registration ? 'Inactive' : 'NotRegistered',
      traffic: ramp ?? 0,
      ...counted(target.buildId),
      ...(target.rampingSince ? { since: target.rampingSince } : {}),
    });
  }
  if (status.current && status.current !== target?.buildId) {
    versions.push({
      buildId: status.current,
      role: 'current',
      status: 'Current',
      traffic: 100 - (ramp ?? 0),
      ...counted(status.current),
    });
  }
  for (const d of status.deprecated) {
    if (versions.some((v) => v.buildId === d.buildId)) continue;
    versions.push({
      buildId: d.buildId,
      role: 'sunset',
      status: d.status ?? 'Unknown',
      traffic: 0,
      ...counted(d.buildId),
      since: d.deprecatedSince,
      ...(d.scaledDown ? { scaledDown: true } : {}),
      ...(d.blocked ? { blocked: d.blocked } : {}),
    });
  }
  const view: Omit<RolloutView, 'versions'> & { versions?: VersionView[] } = {
    namespace: ref.namespace,
    name: ref.name,
    workflowId: status.workflowId ?? '',
    phase: status.phase,
    reason: status.reason,
    message: status.message,
    paused: status.paused,
    ...(status.generation !== undefined ? { generation: status.generation } : {}),
    ...(status.strategy ? { strategy: status.strategy } : {}),
    ...(status.strategy === 'Progressive' && status.steps?.length
      ? { steps: status.steps.map((s) => s.rampPercentage) }
      : {}),
    ...(ramp !== undefined ? { rampPercentage: ramp } : {}),
  };
  const step = stepView(status, now);
  if (step) view.step = step;
  view.versions = versions;
  for (const key of ['lastAbortReason', 'lastAnalysis', 'retrying', 'managerHeldBy', 'refused'] as const) {
    if (status[key] !== undefined) (view as Record<string, unknown>)[key] = status[key];
  }
  return view as RolloutView;
}

/** The Progressive step in force and the time left in its pause: held time so far, plus the hold counting now. */
export function stepView(status: RolloutStatus, now: number): StepView | undefined {
  const progress = status.target?.step;
  const steps = status.steps ?? [];
  const index = progress?.index;
  if (status.strategy !== 'Progressive' || !progress || index === undefined || !steps[index]) return undefined;
  const step = steps[index]!;
  const view: StepView = {
    number: index + 1,
    count: steps.length,
    rampPercentage: step.rampPercentage,
    counting: false,
  };
  if (!step.pauseDuration) return view;
  view.pauseMs = parseDuration(step.pauseDuration);
  const since = progress.heldSince ? Date.parse(progress.heldSince) : NaN;
  const counting = !progress.done && !status.paused && !Number.isNaN(since);
  const held = progress.heldMs + (counting ? Math.max(0, now - since) : 0);
  view.leftMs = progress.done ? 0 : Math.max(0, view.pauseMs - held);
  view.counting = counting && view.leftMs > 0;
  return view;
}
