/**
 * The rollout metrics (`glidepath_…`), decided from each transition. Emitted through the workflow's metric meter:
 * the SDK drops them while a history replays, so a restart or a cache eviction never counts a transition twice,
 * and durations are workflow time, so they survive restarts of the controller.
 */
import { metricMeter } from '@temporalio/workflow';
import type { Phase, Reason } from '../api/rollout-status.js';

export const RolloutMetric = {
  started: 'glidepath_rollouts_started_total',
  completed: 'glidepath_rollouts_completed_total',
  aborted: 'glidepath_rollouts_aborted_total',
  rolledBack: 'glidepath_rollouts_rolled_back_total',
  failed: 'glidepath_rollouts_failed_total',
  stepTransitions: 'glidepath_step_transitions_total',
  transitions: 'glidepath_transitions_total',
  phaseSeconds: 'glidepath_phase_duration_seconds',
  rolloutSeconds: 'glidepath_rollout_duration_seconds',
} as const;
export type RolloutMetric = (typeof RolloutMetric)[keyof typeof RolloutMetric];

/** Buckets of the two duration histograms, in seconds (1 s to a day). */
export const durationBuckets = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400];

/** The rollout being measured: its build, when its first transition was, the step and failure it last counted. */
export interface MeasuredRollout {
  buildId: string;
  startedAt: string;
  stepIndex?: number;
  /** The reason of the failure counted (the same failure again after a pause is not another). */
  failed?: string;
}

export interface TransitionSeen {
  /** The state before: phase, reason, since when it is in that phase, the rollout measured. */
  before: { phase: Phase; reason: Reason; phaseSince: string; measured?: MeasuredRollout };
  phase: Phase;
  reason: Reason;
  /** The target at this transition (none once it became current). */
  target?: { buildId: string; stepIndex?: number };
  now: Date;
}

export interface MetricPoint {
  metric: RolloutMetric;
  /** 1 for a counter; seconds for a histogram. */
  value: number;
  tags?: Record<string, string>;
}

/** What a transition counts, and the rollout measured after it. Pure: time is passed in. */
export function transitionMetrics(t: TransitionSeen): { points: MetricPoint[]; measured?: MeasuredRollout } {
  const points: MetricPoint[] = [];
  // A new message in the same phase and reason (an analysis wait, the next step) is no transition.
  const changed = t.before.phase !== t.phase || t.before.reason !== t.reason;
  if (changed) points.push({ metric: RolloutMetric.transitions, value: 1, tags: { phase: t.phase, reason: t.reason } });
  if (t.before.phase !== t.phase) {
    points.push({
      metric: RolloutMetric.phaseSeconds,
      value: secondsBetween(t.before.phaseSince, t.now),
      tags: { phase: t.before.phase },
    });
  }
  let measured = t.before.measured;
  if (t.target && measured?.buildId !== t.target.buildId) {
    measured = { buildId: t.target.buildId, startedAt: t.now.toISOString() };
    points.push({ metric: RolloutMetric.started, value: 1 });
  }
  if (t.phase === 'Ramping' && t.target && measured && measured.stepIndex !== t.target.stepIndex) {
    measured = { ...measured, stepIndex: t.target.stepIndex };
    points.push({ metric: RolloutMetric.stepTransitions, value: 1 });
  }
  if (!changed) return { points, measured };
  const ended = (metric: RolloutMetric) => {
    points.push({ metric, value: 1 });
    measured = undefined;
  };
  // A rollback is often two transitions (the target aborted, then the old build current): counted on the first.
  if (t.reason === 'RolledBack') {
    if (t.before.reason !== 'RolledBack') ended(RolloutMetric.rolledBack);
  } else if (t.phase === 'Aborted') ended(RolloutMetric.aborted);
  else if (t.phase === 'Ready' && t.reason === 'RolloutComplete' && measured) {
    points.push({ metric: RolloutMetric.rolloutSeconds, value: secondsBetween(measured.startedAt, t.now) });
    ended(RolloutMetric.completed);
  } else if (t.phase === 'Failed' && measured?.failed !== t.reason) {
    points.push({ metric: RolloutMetric.failed, value: 1, tags: { reason: t.reason } });
    if (measured) measured = { ...measured, failed: t.reason };
  }
  return { points, measured };
}

function secondsBetween(since: string, now: Date): number {
  return Math.max(0, (now.getTime() - Date.parse(since)) / 1000);
}

/** What each metric counts (the Prometheus HELP line). */
export const rolloutMetricDescriptions: Record<RolloutMetric, string> = {
  [RolloutMetric.started]: 'Rollouts of a new build started',
  [RolloutMetric.completed]: 'Rollouts whose build became current',
  [RolloutMetric.aborted]: 'Rollouts aborted (a control, a failed gate or analysis with policy Abort)',
  [RolloutMetric.rolledBack]: 'Rollouts rolled back to the previous current build',
  [RolloutMetric.failed]: 'Rollouts that stopped on a failure (progress deadline, a permanent error)',
  [RolloutMetric.stepTransitions]: 'Progressive steps entered',
  [RolloutMetric.transitions]: 'Phase transitions, by phase and reason',
  [RolloutMetric.phaseSeconds]: 'Time spent in a phase, recorded when the rollout leaves it (workflow time)',
  [RolloutMetric.rolloutSeconds]: 'From the first transition of a build to it being current (workflow time)',
};

/**
 * The labels naming a resource. Not `namespace`: on the same endpoint the SDK's metrics mean the Temporal namespace
 * by it, and Prometheus' Kubernetes discovery sets its own `namespace` (the controller pod's).
 */
export function resourceLabels(resource: { namespace: string; name: string }): {
  resource_namespace: string;
  resource_name: string;
} {
  return { resource_namespace: resource.namespace, resource_name: resource.name };
}

/**
 * The metrics counted per resource: the rollouts' counters, one series each for the resources that had one. The
 * transitions and the two duration histograms are labelled by the resource's namespace only: per resource they
 * were about a hundred series each (a histogram is 16 lines a phase): at a thousand resources, tens of megabytes of
 * the controller's memory and of text a scrape (docs/design/controller-memory.md), and dashboards read them summed.
 */
const perResource: ReadonlySet<RolloutMetric> = new Set([
  RolloutMetric.started,
  RolloutMetric.completed,
  RolloutMetric.aborted,
  RolloutMetric.rolledBack,
  RolloutMetric.failed,
  RolloutMetric.stepTransitions,
]);

/** The labels of one of a resource's points: the resource, or only its namespace (`perResource`). */
export function pointLabels(
  metric: RolloutMetric,
  resource: { namespace: string; name: string },
): Record<string, string> {
  return perResource.has(metric) ? resourceLabels(resource) : { resource_namespace: resource.namespace };
}

/** Emits a transition's points, labelled by `pointLabels`. */
export function emitMetrics(points: MetricPoint[], resource: { namespace: string; name: string }): void {
  for (const p of points) {
    const tags = { ...pointLabels(p.metric, resource), ...p.tags };
    if (p.metric === RolloutMetric.phaseSeconds || p.metric === RolloutMetric.rolloutSeconds) {
      metricMeter.createHistogram(p.metric, 'float', 's', rolloutMetricDescriptions[p.metric]).record(p.value, tags);
    } else {
      metricMeter.createCounter(p.metric, '1', rolloutMetricDescriptions[p.metric]).add(p.value, tags);
    }
  }
}
