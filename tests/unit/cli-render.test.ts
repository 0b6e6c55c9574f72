/**
 * What `glidepath status`, `history` and `list` show, from a workflow status: the view (step, time left,
 * versions with traffic and open executions) and the lines a person reads in the terminal.
 */
import type { RolloutStatus, StepProgress, Target, TemporalPlace } from '../../workflows/state.js';
import {
  age,
  formatData,
  progressBar,
  renderHistory,
  renderList,
  renderRollout,
  stepLine,
  stepTrack,
} from '../../cli/render.js';
import { rolloutView, stepView, versionPlaces } from '../../cli/view.js';

const now = Date.parse('2026-11-23T12:00:00Z');
const iso = (msBefore: number) => new Date(now - msBefore).toISOString();
const ref = { namespace: 'prod', name: 'orders' };
const place: TemporalPlace = { connection: { hostPort: 'temporal:7233' }, temporalNamespace: 'workers' };
const steps = [
  { rampPercentage: 10, pauseDuration: '1m' },
  { rampPercentage: 25, pauseDuration: '5m' },
  { rampPercentage: 50 },
];

/** Target fields over the default target's; `step` fields over its step's. */
type TargetOver = Omit<Partial<Target>, 'step'> & { step?: Partial<StepProgress> };

function status(over: Partial<RolloutStatus> = {}, { step, ...target }: TargetOver = {}): RolloutStatus {
  return {
    phase: 'Ramping',
    reason: 'Ramping',
    message: 'step 2/3: ramp 25% for 5m',
    paused: false,
    current: 'v1',
    target: {
      buildId: 'v2',
      generation: 4,
      stage: 'routing',
      rampPercentage: 25,
      rampingSince: iso(90_000),
      step: {
        index: 1,
        startedAt: iso(200_000),
        heldMs: 60_000,
        heldSince: iso(140_000),
        done: false,
        analysed: false,
        analysisWaitMs: 0,
        ...step,
      },
      ...target,
    },
    deprecated: [{ buildId: 'v0', deprecatedSince: iso(3_600_000), status: 'Draining' }],
    generation: 4,
    strategy: 'Progressive',
    steps,
    currentPlace: place,
    ...over,
  };
}

describe('stepView: the step in force and the time left in its pause', () => {
  test('held time so far plus the hold counting now: 5m − 1m − 2m20s = 1m40s left', () => {
    expect(stepView(status(), now)).toEqual({
      number: 2,
      count: 3,
      rampPercentage: 25,
      pauseMs: 300_000,
      leftMs: 100_000,
      counting: true,
    });
  });

  test('paused: the clock stands at what was held before the pause', () => {
    expect(stepView(status({ paused: true, phase: 'Paused' }, { step: { heldSince: undefined } }), now)).toMatchObject({
      leftMs: 240_000,
      counting: false,
    });
  });

  test('a pause that is over shows 0 left; a step without pauseDuration waits for promote; other strategies have no step', () => {
    expect(stepView(status({}, { step: { heldSince: iso(10 * 60_000) } }), now)).toMatchObject({
      leftMs: 0,
      counting: false,
    });
    expect(stepView(status({}, { step: { done: true } }), now)).toMatchObject({ leftMs: 0 });
    expect(stepView(status({}, { step: { index: 2 }, rampPercentage: 50 }), now)).toEqual({
      number: 3,
      count: 3,
      rampPercentage: 50,
      counting: false,
    });
    expect(stepView(status({ strategy: 'AllAtOnce' }), now)).toBeUndefined();
    expect(stepView(status({}, { step: { index: undefined } }), now)).toBeUndefined();
  });
});

describe('rolloutView', () => {
  test('versions: the target with its ramp, current with the rest, sunset ones with their drainage, each with its open executions', () => {
    const view = rolloutView(
      ref,
      { ...status(), workflowId: 'glidepath/1a2b3c4d/prod/orders' },
      { v2: 0, v1: 12, v0: null },
      now,
    );
    expect(view).toMatchObject({
      namespace: 'prod',
      name: 'orders',
      workflowId: 'glidepath/1a2b3c4d/prod/orders',
      phase: 'Ramping',
      strategy: 'Progressive',
      steps: [10, 25, 50],
      rampPercentage: 25,
    });
    expect(view.versions).toEqual([
      { buildId: 'v2', role: 'target', status: 'Ramping', traffic: 25, openExecutions: 0, since: iso(90_000) },
      { buildId: 'v1', role: 'current', status: 'Current', traffic: 75, openExecutions: 12 },
      { buildId: 'v0', role: 'sunset', status: 'Draining', traffic: 0, openExecutions: null, since: iso(3_600_000) },
    ]);
  });

  test('the target is Ramping once it has a step with traffic; before that NotRegistered, then Inactive, with none', () => {
    const registration = { taskQueues: ['q'], unversionedPollers: false };
    const early = rolloutView(
      ref,
      status({ phase: 'Deploying' }, { step: { index: undefined }, rampPercentage: undefined }),
      {},
      now,
    );
    expect(early.versions[0]).toMatchObject({ status: 'NotRegistered', traffic: 0 });
    const deploying = rolloutView(
      ref,
      status({ phase: 'WaitingForPollers' }, { step: { index: undefined }, rampPercentage: undefined, registration }),
      {},
      now,
    );
    expect(deploying.rampPercentage).toBe(0);
    expect(deploying.versions.slice(0, 2)).toEqual([
      { buildId: 'v2', role: 'target', status: 'Inactive', traffic: 0, since: iso(90_000) },
      { buildId: 'v1', role: 'current', status: 'Current', traffic: 100 },
    ]);
  });

  test('nothing in flight: no ramp, current takes all; scaled down and blocked sunsets say so', () => {
    const view = rolloutView(
      ref,
      status({
        phase: 'Ready',
        target: undefined,
        deprecated: [
          { buildId: 'v0', deprecatedSince: iso(0), status: 'Drained', scaledDown: true, blocked: 'Secret missing' },
        ],
      }),
      {},
      now,
    );
    expect(view.rampPercentage).toBeUndefined();
    expect(view.step).toBeUndefined();
    expect(view.versions).toEqual([
      { buildId: 'v1', role: 'current', status: 'Current', traffic: 100 },
      {
        buildId: 'v0',
        role: 'sunset',
        status: 'Drained',
        traffic: 0,
        since: iso(0),
        scaledDown: true,
        blocked: 'Secret missing',
      },
    ]);
  });

  test('versionPlaces: where each version lives (its own place, else the current one)', () => {
    const own: TemporalPlace = { connection: { hostPort: 'old:7233' }, temporalNamespace: 'old' };
    const s = status({ deprecated: [{ buildId: 'v0', deprecatedSince: iso(0), place: own }] });
    expect(versionPlaces(s)).toEqual([
      { buildId: 'v2', place },
      { buildId: 'v1', place },
      { buildId: 'v0', place: own },
    ]);
  });
});

describe('progressBar / stepTrack / stepLine', () => {
  test('the bar fills with the percentage, at the width asked for', () => {
    expect(progressBar(0, 10)).toBe('░░░░░░░░░░');
    expect(progressBar(25, 8)).toBe('██░░░░░░');
    expect(progressBar(50, 10)).toBe('█████░░░░░');
    expect(progressBar(100, 10)).toBe('██████████');
    expect(progressBar(140, 4)).toBe('████');
  });

  test('the step track marks done steps, the one in force, and ends at 100%', () => {
    const view = rolloutView(ref, status(), {}, now);
    expect(stepTrack(view)).toBe('10% ✔ › 25% ◀ › 50% › 100%');
    expect(stepTrack(rolloutView(ref, status({}, { step: { heldSince: iso(10 * 60_000) } }), {}, now))).toBe(
      '10% ✔ › 25% ✔ › 50% › 100%',
    );
  });

  test('the step line says the time left, the time left when paused, or that the step waits for promote', () => {
    expect(stepLine(rolloutView(ref, status(), {}, now))).toBe('step 2 of 3 · 1m40s left of 5m');
    expect(stepLine(rolloutView(ref, status({ paused: true }, { step: { heldSince: undefined } }), {}, now))).toBe(
      'step 2 of 3 · paused with 4m left of 5m',
    );
    expect(stepLine(rolloutView(ref, status({}, { step: { index: 2 }, rampPercentage: 50 }), {}, now))).toBe(
      'step 3 of 3 · until promoted',
    );
  });
});

describe('renderRollout: what a person sees', () => {
  test('name, phase and strategy; the ramp bar with % and time left; the steps; the message; the versions table', () => {
    const lines = renderRollout(rolloutView(ref, status(), { v2: 0, v1: 12, v0: 3 }, now), { now, barSize: 20 });
    expect(lines).toEqual([
      'prod/orders   Ramping   Progressive, generation 4',
      '  ramp    █████░░░░░░░░░░░░░░░    25%   step 2 of 3 · 1m40s left of 5m',
      '  steps   10% ✔ › 25% ◀ › 50% › 100%',
      '  step 2/3: ramp 25% for 5m',
      '',
      '  BUILD   ROLE      STATUS     TRAFFIC   OPEN   SINCE',
      '  v2      target    Ramping        25%      0   1m',
      '  v1      current   Current        75%     12',
      '  v0      sunset    Draining        0%      3   1h',
    ]);
  });

  test('paused, aborted, retrying, held and refused are said; uncountable executions are "?"', () => {
    const view = rolloutView(
      ref,
      status({
        phase: 'Aborted',
        reason: 'Aborted',
        message: 'v2 aborted',
        target: undefined,
        paused: true,
        lastAbortReason: 'p99 doubled',
        retrying: { what: 'setRamping', message: 'UNAVAILABLE', since: iso(0) },
        managerHeldBy: 'someone-else',
        refused: { count: 1, last: { control: 'resume', why: 'not paused' } },
      }),
      { v1: null },
      now,
    );
    const text = renderRollout(view, { now }).join('\n');
    expect(text).toContain('prod/orders   Aborted   (paused)');
    expect(text).toContain('  aborted: p99 doubled');
    expect(text).toContain('  retrying setRamping: UNAVAILABLE');
    expect(text).toContain("someone-else holds the worker deployment's manager identity");
    expect(text).toContain('last refused: resume: not paused');
    expect(text).toMatch(/v1 +current +Current +100% +\?\n/);
    expect(text).not.toContain('ramp ');
  });
});

describe('history, list and data output', () => {
  test('history: aligned columns at, who, what, why; refused ones say so', () => {
    const text = renderHistory([
      {
        at: '2026-11-23T12:00:00.000Z',
        kind: 'control',
        what: 'pause',
        who: 'alice (kube context dev)',
        why: 'looking at errors',
        buildId: 'v2',
      },
      { at: '2026-11-23T12:01:00.000Z', kind: 'refused', what: 'resume', who: 'bob', why: 'not paused' },
      { at: '2026-11-23T12:02:00.000Z', kind: 'transition', what: 'Ramping', who: 'glidepath', why: '' },
    ]);
    expect(text.split('\n').map((l) => l.split(/\s{2,}/))).toEqual([
      ['AT', 'WHO', 'WHAT', 'WHY'],
      ['2026-11-23T12:00:00.000Z', 'alice (kube context dev)', 'pause v2', 'looking at errors'],
      ['2026-11-23T12:01:00.000Z', 'bob', 'refused resume', 'not paused'],
      ['2026-11-23T12:02:00.000Z', 'glidepath', 'Ramping'],
    ]);
    expect(renderHistory([])).toBe('no history yet');
  });

  test('list: one row per rollout', () => {
    const text = renderList(
      [{ namespace: 'prod', name: 'orders', phase: 'Ready', current: 'v1', started: iso(2 * 3_600_000 + 5 * 60_000) }],
      { now },
    );
    expect(text.split('\n')).toEqual([
      'NAMESPACE   NAME     PHASE   CURRENT   TARGET   AGE',
      'prod        orders   Ready   v1                 2h5m',
    ]);
    expect(renderList([], { now })).toBe('no rollouts running');
  });

  test('ages the kubectl way', () => {
    expect(age(iso(42_000), now)).toBe('42s');
    expect(age(iso(5 * 60_000 + 59_000), now)).toBe('5m');
    expect(age(undefined, now)).toBe('');
  });

  test('json and yaml are the same data', () => {
    const view = rolloutView(ref, status(), { v1: 1 }, now);
    expect(JSON.parse(formatData(view, 'json'))).toEqual(JSON.parse(JSON.stringify(view)));
    expect(formatData({ a: [1, 2], b: 'x' }, 'yaml')).toBe('a:\n  - 1\n  - 2\nb: x');
  });
});
