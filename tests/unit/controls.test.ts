import {
  parseControl,
  planRetry,
  planRollback,
  problemWithControl,
  problemWithRollbackTo,
} from '../../workflows/controls.js';
import { analysisVerdict, planSpecChange } from '../../workflows/decisions.js';
import { stepAt, type RolloutState } from '../../workflows/state.js';
import type { Desired } from '../../api/resource.js';
import { TemporalWorkerDeploymentSpec } from '../../api/temporal-worker-deployment.js';

const now = new Date('2026-11-22T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms).toISOString();

function desired(
  generation: number,
  buildId: string,
  rollout: Record<string, unknown> = { strategy: 'Progressive', steps: [{ rampPercentage: 25, pauseDuration: '1m' }] },
): Desired {
  const spec = TemporalWorkerDeploymentSpec.parse({
    template: { spec: { containers: [{ name: 'worker', image: `worker:${buildId}` }] } },
    rollout,
    workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'default' },
  });
  return { generation, spec, buildId, connection: { hostPort: 'x:1' }, connectionVersion: '1' };
}

/** v2 current since 10 minutes; v1 retired from current then, its Deployment still running. */
function afterV2(extra: Partial<RolloutState> = {}): RolloutState {
  return {
    owner: { namespace: 'ns', name: 'orders', uid: 'u1' },
    desired: desired(2, 'v2'),
    current: { buildId: 'v2', since: ago(600_000) },
    deprecated: [{ buildId: 'v1', deprecatedSince: ago(600_000), currentUntil: ago(600_000), status: 'Draining' }],
    deployments: {
      v1: { buildId: 'v1', name: 'orders-v1', exists: true, replicas: 1, availableReplicas: 1 },
      v2: { buildId: 'v2', name: 'orders-v2', exists: true, replicas: 1, availableReplicas: 1 },
    },
    phase: 'Ready',
    reason: 'RolloutComplete',
    message: 'v2 is current',
    since: ago(600_000),
    deleting: false,
    timings: { resyncIntervalMs: 1, drainPollMaxMs: 1, maxVersions: 100 },
    ...extra,
  };
}

const facts = { promoting: false, blocked: false, now };

describe('parseControl', () => {
  test.each([
    [undefined, {}],
    [
      { reason: 'x', identity: 'alice' },
      { reason: 'x', identity: 'alice' },
    ],
    ['pause', 'the argument is not an object'],
    [{ reason: 3 }, 'reason is not a string'],
    [{ full: 'yes' }, 'full is not a boolean'],
    [{ toBuildId: ['v1'] }, 'toBuildId is not a string'],
  ])('%j → %j', (req, expected) => expect(parseControl(req)).toEqual(expected));
});

describe('problemWithControl', () => {
  const ramping = afterV2({
    desired: desired(3, 'v3'),
    target: { buildId: 'v3', generation: 3, stage: 'routing', rampPercentage: 25, step: stepAt(now.toISOString(), 0) },
    phase: 'Ramping',
  });
  test.each<[string, Parameters<typeof problemWithControl>[0], object, RolloutState, string | undefined]>([
    [
      'pause with nothing in flight',
      'pause',
      {},
      afterV2(),
      'no rollout is in flight (set spec.rollout.paused: true to hold the next one)',
    ],
    ['pause during a ramp', 'pause', { reason: 'look' }, ramping, undefined],
    ['pause while paused', 'pause', {}, { ...ramping, pausedBy: { reason: 'look' } }, 'already paused: look'],
    ['resume when not paused', 'resume', {}, ramping, 'not paused'],
    [
      'resume while the spec pauses',
      'resume',
      {},
      { ...ramping, desired: desired(3, 'v3', { strategy: 'AllAtOnce', paused: true }) },
      'paused by spec.rollout.paused: set it to false to resume',
    ],
    ['resume while paused', 'resume', {}, { ...ramping, pausedBy: { reason: 'look' } }, undefined],
    ['abort with nothing in flight', 'abort', {}, afterV2(), 'no rollout is in flight'],
    ['abort naming another build', 'abort', { buildId: 'v2' }, ramping, 'it names build v2, but the target is v3'],
    ['promote with nothing in flight', 'promote', {}, afterV2(), 'no rollout is in flight'],
    ['promote naming the target', 'promote', { buildId: 'v3' }, ramping, undefined],
    [
      'promote naming a superseded build',
      'promote',
      { buildId: 'v2' },
      ramping,
      'it names build v2, but the target is v3',
    ],
    ['rollback after a rollout', 'rollback', {}, afterV2(), undefined],
    ['rollback to the current build', 'rollback', { toBuildId: 'v2' }, afterV2(), 'v2 is already current'],
    [
      'retry with nothing to retry',
      'retry',
      {},
      afterV2(),
      'nothing to retry: no aborted build, failed gate or failed analysis',
    ],
    ['anything while deleting', 'promote', {}, { ...ramping, deleting: true }, 'the resource is being deleted'],
  ])('%s', (_, name, control, state, expected) =>
    expect(problemWithControl(name, control, state, facts)).toBe(expected),
  );

  test('resume tries a Blocked rollout again (its message says so)', () => {
    expect(problemWithControl('resume', {}, ramping, { ...facts, blocked: true })).toBeUndefined();
  });
  test('control text is bounded', () => {
    expect(parseControl({ reason: 'x'.repeat(1025) })).toBe('reason is longer than 1024 characters');
  });
  test('abort while the target is being made current is refused', () => {
    expect(problemWithControl('abort', {}, ramping, { ...facts, promoting: true })).toBe(
      'v3 is already being made current',
    );
  });
});

describe('planRollback', () => {
  test('during a rollout: abort the target (back to current)', () => {
    const s = afterV2({ target: { buildId: 'v3', generation: 3, stage: 'routing' } });
    expect(planRollback(s, undefined, now, 3_600_000)).toEqual({ kind: 'abortTarget', buildId: 'v3' });
  });
  test('after a rollout: the build current before, within the window', () => {
    expect(planRollback(afterV2(), undefined, now, 3_600_000)).toEqual({ kind: 'toVersion', buildId: 'v1' });
  });
  test('the most recently retired of several', () => {
    const s = afterV2();
    s.deprecated.push({ buildId: 'v0', deprecatedSince: ago(900_000), currentUntil: ago(900_000) });
    s.deployments.v0 = { buildId: 'v0', name: 'orders-v0', exists: true, availableReplicas: 1 };
    expect(planRollback(s, undefined, now, 3_600_000)).toEqual({ kind: 'toVersion', buildId: 'v1' });
    expect(planRollback(s, 'v0', now, 3_600_000)).toEqual({ kind: 'toVersion', buildId: 'v0' });
  });
  test.each<[string, RolloutState, number, string]>([
    ['beyond the window', afterV2(), 300_000, 'v1 was current 10m ago, beyond rollout.rollbackWindow (5m)'],
    ['window 0 turns it off', afterV2(), 0, 'rollout.rollbackWindow is 0s (rollbacks are off)'],
    [
      'scaled down',
      afterV2({
        deprecated: [{ buildId: 'v1', deprecatedSince: ago(600_000), currentUntil: ago(600_000), scaledDown: true }],
      }),
      3_600_000,
      'the Deployment of v1 has no available pods',
    ],
    [
      'never current',
      afterV2({ deprecated: [{ buildId: 'v1', deprecatedSince: ago(600_000) }] }),
      3_600_000,
      'no earlier build to roll back to',
    ],
  ])('refused: %s', (_, state, windowMs, why) =>
    expect(planRollback(state, undefined, now, windowMs)).toEqual({ kind: 'refused', why }),
  );
  test('a Deployment without available pods cannot take traffic at once', () => {
    const s = afterV2();
    s.deployments.v1 = { ...s.deployments.v1!, availableReplicas: 0 };
    expect(problemWithRollbackTo(s, 'v1', now, 3_600_000)).toBe('the Deployment of v1 has no available pods');
  });
});

describe('planRetry', () => {
  test('an aborted build rolls out again', () => {
    const s = afterV2({ desired: desired(3, 'v3'), aborted: { buildId: 'v3', reason: 'bad' } });
    expect(planRetry(s, undefined, false)).toEqual({ kind: 'rollOutAgain', buildId: 'v3' });
    expect(planRetry(s, 'v4', false)).toEqual({ kind: 'refused', why: 'it names v4, but the aborted build is v3' });
  });
  test('a failed gate or analysis runs again', () => {
    const s = afterV2({
      target: { buildId: 'v3', generation: 3, stage: 'routing' },
      pausedBy: { reason: 'gate failed', buildId: 'v3', cause: 'GateFailed' },
    });
    expect(planRetry(s, undefined, false)).toEqual({ kind: 'unpause', buildId: 'v3' });
  });
  test('a person’s pause is not a failure to retry', () => {
    const s = afterV2({
      target: { buildId: 'v3', generation: 3, stage: 'routing' },
      pausedBy: { reason: 'look', buildId: 'v3' },
    });
    expect(planRetry(s, undefined, false).kind).toBe('refused');
    expect(planRetry(s, undefined, true)).toEqual({ kind: 'unblock' });
  });
});

describe('planSpecChange with controls', () => {
  test('the spec back on a build current moments ago that still runs: a rollback target', () => {
    const next = planSpecChange(afterV2(), desired(3, 'v1'), now).state;
    expect(next.target).toEqual({
      buildId: 'v1',
      generation: 3,
      stage: 'deploying',
      rollback: { reason: 'the spec went back to v1', who: 'spec' },
    });
    expect(next.deprecated.map((v) => v.buildId)).toEqual([]);
  });
  test('beyond the window: an ordinary rollout', () => {
    const late = afterV2({ desired: desired(2, 'v2', { strategy: 'AllAtOnce', rollbackWindow: '5m' }) });
    expect(
      planSpecChange(late, desired(3, 'v1', { strategy: 'AllAtOnce', rollbackWindow: '5m' }), now).state.target,
    ).toEqual({ buildId: 'v1', generation: 3, stage: 'deploying' });
  });
  test('a new generation of an aborted build rolls it out again; the same generation does not', () => {
    const aborted = afterV2({
      desired: desired(3, 'v3'),
      aborted: { buildId: 'v3', reason: 'bad' },
      deprecated: [{ buildId: 'v3', deprecatedSince: ago(1) }],
    });
    expect(planSpecChange(aborted, desired(4, 'v3'), now).state).toMatchObject({
      aborted: undefined,
      target: { buildId: 'v3', generation: 4, stage: 'deploying' },
    });
    expect(planSpecChange(aborted, { ...desired(3, 'v3'), connectionVersion: '2' }, now).state.aborted).toEqual({
      buildId: 'v3',
      reason: 'bad',
    });
  });
  test('a rollback holds the spec’s build until its build changes or retry: an unrelated edit does not bring it back', () => {
    const rolledBack = afterV2({
      current: { buildId: 'v1', since: ago(1000) },
      aborted: { buildId: 'v2', reason: 'errors', cause: 'RolledBack' },
      deprecated: [{ buildId: 'v2', deprecatedSince: ago(1000), currentUntil: ago(1000) }],
    });
    const edited = planSpecChange(
      rolledBack,
      { ...desired(3, 'v2'), spec: { ...desired(3, 'v2').spec, replicas: 3 } },
      now,
    ).state;
    expect(edited.aborted).toEqual({ buildId: 'v2', reason: 'errors', cause: 'RolledBack' });
    expect(edited.target).toBeUndefined();
  });
  test('a pause by a control is for the rollout it held: a new build is not held by it', () => {
    const paused = afterV2({
      desired: desired(3, 'v3'),
      target: { buildId: 'v3', generation: 3, stage: 'routing' },
      pausedBy: { reason: 'look', buildId: 'v3' },
    });
    expect(planSpecChange(paused, desired(4, 'v4'), now).state.pausedBy).toBeUndefined();
  });
  test('a new generation with another gate runs the gate again', () => {
    const gated = afterV2({
      desired: desired(3, 'v3'),
      target: { buildId: 'v3', generation: 3, stage: 'routing', gateKey: 'null' },
    });
    const withGate = desired(4, 'v3', { strategy: 'AllAtOnce', gate: { workflowType: 'check' } });
    expect(planSpecChange(gated, withGate, now).state.target).toMatchObject({ gateKey: undefined, stage: 'routing' });
  });
});

describe('analysisVerdict', () => {
  const analysis = { maxFailurePercentage: 2, maxFailureRatioToCurrent: 2, minExecutions: 10 };
  test.each<
    [string, { closed: number; failed: number }, { closed: number; failed: number } | undefined, string, string]
  >([
    [
      'too few executions',
      { closed: 5, failed: 0 },
      undefined,
      'inconclusive',
      'v2: 0 of 5 failed (0 %) — fewer than 10 closed executions',
    ],
    [
      'over the limit',
      { closed: 120, failed: 3 },
      { closed: 500, failed: 4 },
      'fail',
      'v2: 3 of 120 failed (2.5 %) vs v1 0.8 % — over 2 %',
    ],
    [
      'within the limit',
      { closed: 100, failed: 1 },
      { closed: 100, failed: 1 },
      'pass',
      'v2: 1 of 100 failed (1 %) vs v1 1 % — within limits',
    ],
    [
      'over twice the current rate',
      { closed: 100, failed: 2 },
      { closed: 200, failed: 1 },
      'fail',
      "v2: 2 of 100 failed (2 %) vs v1 0.5 % — over 2× v1's rate (1 %)",
    ],
    [
      'a current without failures: the ratio does not apply',
      { closed: 100, failed: 1 },
      { closed: 100, failed: 0 },
      'pass',
      'v2: 1 of 100 failed (1 %) vs v1 0 % — within limits',
    ],
  ])('%s', (_, target, current, kind, message) => {
    expect(analysisVerdict(analysis, { buildId: 'v2', ...target }, current && { buildId: 'v1', ...current })).toEqual({
      kind,
      message,
    });
  });
});

describe('a sunset that stopped on an error', () => {
  const stuck = afterV2({
    deprecated: [{ buildId: 'v1', deprecatedSince: ago(600_000), blocked: 'scale v1 to 0: forbidden' }],
  });
  test('retry tries it again', () => expect(planRetry(stuck, undefined, false)).toEqual({ kind: 'unblock' }));
  test('resume tries it again', () => expect(problemWithControl('resume', {}, stuck, facts)).toBeUndefined());
  test('without one, there is nothing to retry or resume', () => {
    expect(planRetry(afterV2(), undefined, false).kind).toBe('refused');
    expect(problemWithControl('resume', {}, afterV2(), facts)).toBe('not paused');
  });
});
