import { RolloutMetric, pointLabels, transitionMetrics, type TransitionSeen } from '../../workflows/metrics.js';
import { errorKind, resourceGauges } from '../../worker/metrics.js';
import { ApplicationFailure } from '@temporalio/common';
import { TransientError } from '../../activities/errors.js';

const t0 = '2026-11-23T10:00:00.000Z';
const at = (s: number) => new Date(Date.parse(t0) + s * 1000);
const names = (r: ReturnType<typeof transitionMetrics>) =>
  r.points.map((p) => p.metric).filter((m) => m !== RolloutMetric.transitions);

describe('transitionMetrics', () => {
  const base = (over: Partial<TransitionSeen>): TransitionSeen => ({
    before: { phase: 'Ready', reason: 'RolloutComplete', phaseSince: t0 },
    phase: 'Deploying',
    reason: 'Deploying',
    target: { buildId: 'v2' },
    now: at(10),
    ...over,
  });

  test.each<[string, Partial<TransitionSeen>, string[]]>([
    [
      'the first transition of a new target starts a rollout, and times the phase left',
      {},
      [RolloutMetric.phaseSeconds, RolloutMetric.started],
    ],
    [
      'a step counts once per step index',
      {
        before: {
          phase: 'WaitingForPollers',
          reason: 'WaitingForPollers',
          phaseSince: t0,
          measured: { buildId: 'v2', startedAt: t0 },
        },
        phase: 'Ramping',
        reason: 'Ramping',
        target: { buildId: 'v2', stepIndex: 0 },
      },
      [RolloutMetric.phaseSeconds, RolloutMetric.stepTransitions],
    ],
    [
      'the same step again (a new message) is not another step',
      {
        before: {
          phase: 'Ramping',
          reason: 'Ramping',
          phaseSince: t0,
          measured: { buildId: 'v2', startedAt: t0, stepIndex: 0 },
        },
        phase: 'Ramping',
        reason: 'Ramping',
        target: { buildId: 'v2', stepIndex: 0 },
      },
      [],
    ],
    [
      "completion: counted with the rollout's duration",
      {
        before: { phase: 'Ramping', reason: 'Ramping', phaseSince: t0, measured: { buildId: 'v2', startedAt: t0 } },
        phase: 'Ready',
        reason: 'RolloutComplete',
        target: undefined,
      },
      [RolloutMetric.phaseSeconds, RolloutMetric.rolloutSeconds, RolloutMetric.completed],
    ],
    [
      'Ready again without a measured rollout (a resync) is no completion',
      {
        before: { phase: 'Paused', reason: 'Paused', phaseSince: t0 },
        phase: 'Ready',
        reason: 'RolloutComplete',
        target: undefined,
      },
      [RolloutMetric.phaseSeconds],
    ],
    [
      'an abort',
      {
        before: { phase: 'Ramping', reason: 'Ramping', phaseSince: t0, measured: { buildId: 'v2', startedAt: t0 } },
        phase: 'Aborted',
        reason: 'AnalysisFailed',
      },
      [RolloutMetric.phaseSeconds, RolloutMetric.aborted],
    ],
    [
      'a rollback is a rollback, not an abort',
      {
        before: { phase: 'Ramping', reason: 'Ramping', phaseSince: t0, measured: { buildId: 'v2', startedAt: t0 } },
        phase: 'Aborted',
        reason: 'RolledBack',
      },
      [RolloutMetric.phaseSeconds, RolloutMetric.rolledBack],
    ],
    [
      'a failure, by reason',
      {
        before: {
          phase: 'WaitingForPollers',
          reason: 'WaitingForPollers',
          phaseSince: t0,
          measured: { buildId: 'v2', startedAt: t0 },
        },
        phase: 'Failed',
        reason: 'ProgressDeadlineExceeded',
      },
      [RolloutMetric.phaseSeconds, RolloutMetric.failed],
    ],
  ])('%s', (_, over, expected) => {
    expect(names(transitionMetrics(base(over)))).toEqual(expected);
  });

  test('a rollback in two transitions (target aborted, then the old build current) counts once', () => {
    const first = transitionMetrics(
      base({
        before: { phase: 'Ramping', reason: 'Ramping', phaseSince: t0, measured: { buildId: 'v2', startedAt: t0 } },
        phase: 'Aborted',
        reason: 'RolledBack',
      }),
    );
    const second = transitionMetrics(
      base({
        before: { phase: 'Aborted', reason: 'RolledBack', phaseSince: t0, measured: first.measured },
        phase: 'Ready',
        reason: 'RolledBack',
        target: undefined,
      }),
    );
    expect([...names(first), ...names(second)].filter((m) => m === RolloutMetric.rolledBack)).toHaveLength(1);
  });

  test('the same failure again after a pause and resume is not another failure', () => {
    const measured = { buildId: 'v2', startedAt: t0 };
    const failed = transitionMetrics(
      base({
        before: { phase: 'Deploying', reason: 'Deploying', phaseSince: t0, measured },
        phase: 'Failed',
        reason: 'ProgressDeadlineExceeded',
      }),
    );
    const paused = transitionMetrics(
      base({
        before: { phase: 'Failed', reason: 'ProgressDeadlineExceeded', phaseSince: t0, measured: failed.measured },
        phase: 'Paused',
        reason: 'Paused',
      }),
    );
    const again = transitionMetrics(
      base({
        before: { phase: 'Paused', reason: 'Paused', phaseSince: t0, measured: paused.measured },
        phase: 'Failed',
        reason: 'ProgressDeadlineExceeded',
      }),
    );
    expect(names(failed)).toContain(RolloutMetric.failed);
    expect(names(again)).not.toContain(RolloutMetric.failed);
  });

  test('durations are workflow time between transitions, in seconds', () => {
    const r = transitionMetrics(
      base({
        before: {
          phase: 'Ramping',
          reason: 'Ramping',
          phaseSince: at(4).toISOString(),
          measured: { buildId: 'v2', startedAt: t0 },
        },
        phase: 'Ready',
        reason: 'RolloutComplete',
        target: undefined,
        now: at(10),
      }),
    );
    expect(r.points.find((p) => p.metric === RolloutMetric.phaseSeconds)).toEqual({
      metric: RolloutMetric.phaseSeconds,
      value: 6,
      tags: { phase: 'Ramping' },
    });
    expect(r.points.find((p) => p.metric === RolloutMetric.rolloutSeconds)?.value).toBe(10);
    expect(r.measured).toBeUndefined();
  });

  test('every transition is counted by phase and reason; a new message alone is none', () => {
    expect(transitionMetrics(base({})).points[0]).toEqual({
      metric: RolloutMetric.transitions,
      value: 1,
      tags: { phase: 'Deploying', reason: 'Deploying' },
    });
    const sameAgain = transitionMetrics(
      base({
        before: { phase: 'Deploying', reason: 'Deploying', phaseSince: t0, measured: { buildId: 'v2', startedAt: t0 } },
      }),
    );
    expect(sameAgain.points).toEqual([]);
  });
});

describe('resourceGauges', () => {
  test('the phase it is in at 1, the ramp of the target; no series for a phase it never was in', () => {
    const g = resourceGauges({ phase: 'Ramping', targetVersion: { rampPercentage: 25 } }, undefined);
    expect(g).toEqual({ ramp: 25, phases: { Ramping: 1 } });
  });
  test('a phase it left goes to 0', () => {
    expect(resourceGauges({ phase: 'Ready' }, 'Ramping')).toEqual({ ramp: 0, phases: { Ramping: 0, Ready: 1 } });
  });
  test('seen again in the same phase: that phase only, at 1', () => {
    expect(resourceGauges({ phase: 'Ready' }, 'Ready')).toEqual({ ramp: 0, phases: { Ready: 1 } });
  });
  test('a resource gone reports nothing: its last phase 0, ramp 0', () => {
    expect(resourceGauges(undefined, 'Ready')).toEqual({ ramp: 0, phases: { Ready: 0 } });
  });
});

describe('pointLabels', () => {
  const resource = { namespace: 'team-a', name: 'orders' };
  test.each([
    [RolloutMetric.started, { resource_namespace: 'team-a', resource_name: 'orders' }],
    [RolloutMetric.stepTransitions, { resource_namespace: 'team-a', resource_name: 'orders' }],
    [RolloutMetric.transitions, { resource_namespace: 'team-a' }],
    [RolloutMetric.phaseSeconds, { resource_namespace: 'team-a' }],
    [RolloutMetric.rolloutSeconds, { resource_namespace: 'team-a' }],
  ])('%s', (metric, labels) => expect(pointLabels(metric, resource)).toEqual(labels));
});

describe('errorKind', () => {
  test.each<[string, unknown, string]>([
    ['an ApplicationFailure by its type', ApplicationFailure.nonRetryable('no', 'Permanent'), 'Permanent'],
    ['a transient error', new TransientError('later'), 'transient'],
    ['any other error by its name', new TypeError('x'), 'TypeError'],
    ['a thrown string', 'oops', 'string'],
  ])('%s', (_, err, kind) => expect(errorKind(err)).toBe(kind));
});
