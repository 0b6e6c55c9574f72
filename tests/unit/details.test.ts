/**
 * The words the Temporal Web UI shows for a RolloutWorkflow (workflows/details.ts): where a rollout stands, from
 * its state and the time, in the order people ask (the version coming, the one serving, the ones leaving).
 */
import {
  TemporalWorkerDeploymentSpec,
  type TemporalWorkerDeploymentSpecInput,
} from '../../api/temporal-worker-deployment.js';
import {
  currentDetails,
  headline,
  maxSummaryLength,
  staticDetails,
  staticSummary,
  summaryLine,
} from '../../workflows/details.js';
import { type RolloutState, type StepProgress, type SunsetVersion, type Target } from '../../workflows/state.js';
import { defaultTimings } from '../../api/timings.js';

const now = new Date('2026-11-23T14:01:40Z');
const ago = (ms: number) => new Date(now.getTime() - ms).toISOString();
const second = 1000;
const minute = 60 * second;

type RolloutInput = TemporalWorkerDeploymentSpecInput['rollout'];
const progressive: RolloutInput = {
  strategy: 'Progressive',
  steps: [
    { rampPercentage: 25, pauseDuration: '2m' },
    { rampPercentage: 50, pauseDuration: '5m' },
    { rampPercentage: 75 },
  ],
};

function state(over: Partial<RolloutState> = {}, rollout: RolloutInput = progressive): RolloutState {
  const spec = TemporalWorkerDeploymentSpec.parse({
    template: { spec: { containers: [{ name: 'worker', image: 'orders:2.0.0' }] } },
    rollout,
    sunset: { scaledownDelay: '1m', deleteDelay: '10m' },
    workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'orders' },
  });
  return {
    owner: { namespace: 'shop', name: 'orders', uid: 'u-1' },
    desired: { generation: 2, spec, buildId: 'v2', connection: { hostPort: 'temporal:7233' }, connectionVersion: '1' },
    deprecated: [],
    phase: 'Ramping',
    reason: 'Ramping',
    message: 'step 1/3: ramp 25% for 2m',
    since: ago(20 * second),
    deleting: false,
    deployments: {},
    timings: defaultTimings,
    ...over,
  };
}

const current = { buildId: 'v1', since: '2026-11-20T09:00:00Z' };
/** The target in `routing` (or the stage `t` says), with a step of `step`'s fields when given. */
const target = (t: Partial<Target> = {}, step?: Partial<StepProgress>): Target => ({
  buildId: 'v2',
  generation: 2,
  stage: 'routing',
  ...(step
    ? { step: { startedAt: ago(5 * minute), heldMs: 0, done: false, analysed: false, analysisWaitMs: 0, ...step } }
    : {}),
  ...t,
});
const sunset = (v: Partial<SunsetVersion>): SunsetVersion => ({
  buildId: 'v0',
  deprecatedSince: ago(10 * minute),
  ...v,
});

describe('headline: where the rollout stands, in one sentence', () => {
  test.each<[string, Partial<RolloutState>, RolloutInput | undefined, string]>([
    [
      'a step whose timer runs: time left and when it ends, the current version, a version draining with its pinned executions',
      {
        target: target({ rampPercentage: 25 }, { index: 0, heldMs: 0, heldSince: ago(20 * second) }),
        current,
        deprecated: [sunset({ status: 'Draining', openExecutions: { count: 3, at: ago(10 * minute) } })],
      },
      undefined,
      'v2 ramping 25 % — step 1 of 3, 1m40s left (until 14:03:20 UTC); v1 current; v0 draining, 3 pinned executions open at 13:51:40 UTC',
    ],
    [
      'a step resumed after a pause: the time held before counts',
      {
        target: target({ rampPercentage: 50 }, { index: 1, heldMs: 3 * minute, heldSince: ago(minute) }),
        current,
      },
      undefined,
      'v2 ramping 50 % — step 2 of 3, 1m left (until 14:02:40 UTC); v1 current',
    ],
    [
      'a step between its transition and its timer: the whole pause is left',
      { target: target({ rampPercentage: 25 }, { index: 0, heldMs: 0 }), current },
      undefined,
      'v2 ramping 25 % — step 1 of 3, 2m left; v1 current',
    ],
    [
      'a paused step: its clock stands still',
      {
        phase: 'Paused',
        reason: 'Paused',
        target: target({ rampPercentage: 25 }, { index: 0, heldMs: 78 * second }),
        current,
      },
      undefined,
      'v2 paused at 25 % — step 1 of 3, 42s left when resumed; v1 current',
    ],
    [
      'a step without a pause waits for promote',
      {
        phase: 'AwaitingPromotion',
        reason: 'AwaitingPromotion',
        target: target({ rampPercentage: 75 }, { index: 2 }),
        current,
      },
      undefined,
      'v2 at 75 % awaiting promote — step 3 of 3; v1 current',
    ],
    [
      'Manual: waits for promote',
      { phase: 'AwaitingPromotion', reason: 'AwaitingPromotion', target: target(), current },
      { strategy: 'Manual' },
      'v2 awaiting promote; v1 current',
    ],
    [
      'the analysis window of AllAtOnce counts down',
      {
        phase: 'Gating',
        reason: 'Gating',
        target: target({ stage: 'analysing' }, { heldMs: 0, heldSince: ago(minute) }),
        current,
      },
      { strategy: 'AllAtOnce', analysis: { window: '5m', maxFailurePercentage: 5 } },
      'v2 being checked — 4m left (until 14:05:40 UTC); v1 current',
    ],
    [
      'a gate workflow runs',
      {
        phase: 'Gating',
        reason: 'Gating',
        target: target({ rampPercentage: 25 }, { index: 0, heldMs: 2 * minute }),
        current,
      },
      undefined,
      'v2 at 25 % being checked — step 1 of 3; v1 current',
    ],
    [
      'deploying',
      { phase: 'Deploying', reason: 'Deploying', target: target(), current },
      undefined,
      'v2 deploying: waiting for its Deployment to be available; v1 current',
    ],
    [
      'the version cap',
      { phase: 'Deploying', reason: 'VersionLimitReached', target: target(), current },
      undefined,
      'v2 waiting for room under the version cap; v1 current',
    ],
    [
      'waiting for pollers',
      { phase: 'WaitingForPollers', reason: 'WaitingForPollers', target: target(), current },
      undefined,
      'v2 waiting for its workers to poll Temporal; v1 current',
    ],
    [
      'no pollers within the deadline',
      { phase: 'Failed', reason: 'NoPollers', target: target(), current },
      undefined,
      'v2 failed (NoPollers); v1 current',
    ],
    [
      'a rollback',
      {
        phase: 'Deploying',
        reason: 'Deploying',
        target: target({ buildId: 'v1', rollback: { reason: 'p99 doubled', who: 'alice' } }),
        current: { buildId: 'v2', since: ago(minute) },
      },
      undefined,
      'v1 becoming current again (rollback: p99 doubled); v2 current',
    ],
    [
      'done: current since, the old version drained and waiting for its scale-down',
      {
        phase: 'Ready',
        reason: 'RolloutComplete',
        current: { buildId: 'v2', since: ago(2 * minute) },
        deprecated: [sunset({ buildId: 'v1', status: 'Drained', drainedSince: ago(20 * second) })],
      },
      undefined,
      'v2 current since 13:59:40 UTC; v1 drained, scaling to 0 in 40s',
    ],
    [
      'scaled to 0, waiting for its deletion; a version current since another day shows the date',
      {
        phase: 'Ready',
        reason: 'RolloutComplete',
        current,
        deprecated: [sunset({ status: 'Drained', drainedSince: ago(2 * minute), scaledDown: true })],
      },
      undefined,
      'v1 current since 2026-11-20 09:00 UTC; v0 scaled to 0, deleting in 8m',
    ],
    [
      'a sunset just begun, one with no pinned executions, one blocked',
      {
        phase: 'Ready',
        reason: 'RolloutComplete',
        current,
        deprecated: [
          sunset({ buildId: 'va' }),
          sunset({ buildId: 'vb', status: 'Draining', openExecutions: { count: 0, at: ago(0) } }),
          sunset({ buildId: 'vc', blocked: 'forbidden' }),
        ],
      },
      undefined,
      'v1 current since 2026-11-20 09:00 UTC; va retiring; vb draining, no pinned executions open at 14:01:40 UTC; vc sunset blocked',
    ],
    [
      'aborted',
      {
        phase: 'Aborted',
        reason: 'Aborted',
        current,
        aborted: { buildId: 'v2', reason: 'p99 doubled', cause: 'Aborted' },
      },
      undefined,
      'v2 aborted; v1 current since 2026-11-20 09:00 UTC',
    ],
    [
      'nothing yet',
      { phase: 'Pending', reason: 'Deploying', desired: undefined },
      undefined,
      'no version yet: waiting for a spec',
    ],
    [
      'deleting',
      { phase: 'Deleting', reason: 'Deleting', deleting: true, current },
      undefined,
      'deleting: Deployments and versions are cleaned up',
    ],
  ])('%s', (_, over, rollout, expected) => {
    const s = state(over, rollout);
    if (over.desired === undefined && 'desired' in over) delete s.desired;
    expect(headline(s, now)).toBe(expected);
  });
});

describe('currentDetails', () => {
  test('the headline in bold, then the phase and its message, then what else the status knows', () => {
    const details = currentDetails(
      state({
        phase: 'Paused',
        reason: 'AnalysisFailed',
        message: 'analysis step 1/3: v2: 3 of 20 failed (15 %) — over 5 %',
        target: target({ rampPercentage: 25 }, { index: 0, heldMs: 2 * minute }),
        current,
        lastAnalysis: 'step 1/3: v2: 3 of 20 failed (15 %) — over 5 %',
        retrying: { what: 'write the status', message: 'connection refused', since: ago(40 * second) },
        deprecated: [sunset({ blocked: 'Deployment v0: forbidden' })],
      }),
      now,
    );
    expect(details.split('\n\n')).toEqual([
      '**v2 paused at 25 % — step 1 of 3; v1 current; v0 sunset blocked**',
      'Paused (AnalysisFailed): analysis step 1 of 3: v2: 3 of 20 failed (15 %) — over 5 %', // the UI typesets 1/3 as a fraction
      'retrying write the status since 14:01:00 UTC: connection refused',
      'last analysis: step 1 of 3: v2: 3 of 20 failed (15 %) — over 5 %',
      'the sunset of v0 is blocked: Deployment v0: forbidden',
    ]);
  });

  test('a phase whose reason is its name says it once; an abort says why', () => {
    const details = currentDetails(
      state({
        phase: 'Aborted',
        reason: 'Aborted',
        message: 'p99 doubled',
        current,
        aborted: { buildId: 'v2', reason: 'p99 doubled' },
      }),
      now,
    );
    expect(details).toBe(
      '**v2 aborted; v1 current since 2026-11-20 09:00 UTC**\n\nAborted: p99 doubled\n\naborted: v2: p99 doubled',
    );
  });

  test('the time left follows the clock it is given (the same state later says less is left)', () => {
    const s = state({
      target: target({ rampPercentage: 25 }, { index: 0, heldMs: 0, heldSince: ago(20 * second) }),
      current,
    });
    expect(headline(s, new Date(now.getTime() + 90 * second))).toContain('10s left (until 14:03:20 UTC)');
    expect(headline(s, new Date(now.getTime() + 5 * minute))).toContain('0s left (until 14:03:20 UTC)');
  });
});

describe('the static summary and details the watcher starts a workflow with', () => {
  test('name the resource', () => {
    const owner = { namespace: 'shop', name: 'orders', uid: 'u-1' };
    expect(staticSummary(owner)).toBe('Rollouts of TemporalWorkerDeployment shop/orders');
    expect(staticSummary(owner)).not.toContain('\n'); // the UI's summary is one line
    expect(staticDetails(owner)).toContain('**shop/orders** (uid u-1)');
    expect(staticDetails(owner)).toContain('kubectl -n shop describe twd orders');
  });
  test('name a WorkerDeployment by its kind and short name', () => {
    const owner = { namespace: 'shop', name: 'orders', uid: 'u-1', kind: 'WorkerDeployment' as const };
    expect(staticSummary(owner)).toBe('Rollouts of WorkerDeployment shop/orders');
    expect(staticDetails(owner)).toContain('kubectl -n shop describe gwd orders');
  });
});

describe('summaryLine', () => {
  test.each([
    ['ramp v2 to 25%', 'ramp v2 to 25%'],
    ['Warning Event Blocked: line one\n  line two', 'Warning Event Blocked: line one line two'],
    ['x'.repeat(500), `${'x'.repeat(maxSummaryLength - 1)}…`],
  ])('%j → one short line', (text, expected) => {
    expect(summaryLine(text)).toBe(expected);
    expect(summaryLine(text).length).toBeLessThanOrEqual(maxSummaryLength);
  });
});
