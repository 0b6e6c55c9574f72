import { isDrained } from '../../api/version-status.js';
import { versionedDeploymentName } from '../../api/names.js';
import {
  RolloutStep,
  TemporalWorkerDeploymentSpec,
  type TemporalWorkerDeploymentSpecInput,
} from '../../api/temporal-worker-deployment.js';
import { TemporalWorkerDeploymentStatus, type Phase } from '../../api/rollout-status.js';
import {
  drainPollDelay,
  firstVersionRouting,
  newerObservation,
  nextRampStep,
  noPollersMessage,
  recheckDelay,
  isPaused,
  placeChangeProblem,
  planSpecChange,
  rolloutPending,
  stepSummary,
  sunsetAction,
  versionsToMakeRoom,
  type SunsetAction,
} from '../../workflows/decisions.js';
import { renderStatus } from '../../workflows/render-status.js';
import { stepAt, type RolloutState, type SunsetVersion } from '../../workflows/state.js';
import { defaultTimings } from '../../api/timings.js';
import { type Desired } from '../../api/resource.js';

const now = new Date('2026-01-01T00:00:00Z');
const t0 = now.getTime();
const minute = 60_000;
const hour = 60 * minute;
const at = (ms: number) => new Date(t0 + ms);
const iso = (ms: number) => at(ms).toISOString();

function spec(overrides: Partial<TemporalWorkerDeploymentSpecInput> = {}) {
  return TemporalWorkerDeploymentSpec.parse({
    template: { spec: { containers: [{ name: 'worker', image: 'orders:1.0.0' }] } },
    rollout: { strategy: 'AllAtOnce' },
    workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'orders' },
    ...overrides,
  });
}

function desired(
  buildId: string,
  generation: number,
  opts: { connectionVersion?: string; replicas?: number; paused?: boolean } = {},
): Desired {
  return {
    generation,
    buildId,
    spec: spec({
      replicas: opts.replicas,
      rollout: { strategy: 'AllAtOnce', ...(opts.paused !== undefined ? { paused: opts.paused } : {}) },
    }),
    connection: { hostPort: 'temporal-frontend.temporal:7233' },
    connectionVersion: opts.connectionVersion ?? 'c1',
  };
}

function state(overrides: Partial<RolloutState> = {}): RolloutState {
  return {
    owner: { namespace: 'shop', name: 'orders', uid: 'uid-1' },
    deprecated: [],
    phase: 'Ready',
    reason: 'RolloutComplete',
    message: 'v1 is current',
    since: iso(-hour),
    deleting: false,
    deployments: {},
    timings: defaultTimings,
    ...overrides,
  };
}

const earlier = iso(-2 * hour);
const deprecated = (buildId: string, extra: Partial<SunsetVersion> = {}): SunsetVersion => ({
  buildId,
  deprecatedSince: earlier,
  ...extra,
});

describe('placeChangeProblem', () => {
  const moved = (() => {
    const d = desired('v1', 2);
    return { ...d, connection: { hostPort: 'other:7233' } };
  })();
  test('a current build, or a target ramping, keeps the worker deployment where it is, saying why', () => {
    expect(
      placeChangeProblem(state({ desired: desired('v1', 1), current: { buildId: 'v1', since: earlier } }), moved),
    ).toMatch(/^the connection's hostPort changed from temporal-frontend.temporal:7233 to other:7233/);
    expect(
      placeChangeProblem(
        state({
          desired: desired('v1', 1),
          target: { buildId: 'v1', generation: 1, stage: 'routing', rampPercentage: 10 },
        }),
        moved,
      ),
    ).toBeDefined();
  });
  test('a first target nothing routes to yet (a Temporal it cannot reach, say) moves freely', () => {
    expect(
      placeChangeProblem(
        state({ desired: desired('v1', 1), target: { buildId: 'v1', generation: 1, stage: 'routing' } }),
        moved,
      ),
    ).toBeUndefined();
  });
});

describe('planSpecChange', () => {
  interface Expected {
    reapply: boolean;
    superseded?: string;
    target?: string;
    targetGeneration?: number;
    deprecated: SunsetVersion[];
    aborted?: string;
  }
  const current = { buildId: 'v1', since: earlier };

  test.each<{ name: string; before: RolloutState; spec: Desired; expected: Expected }>([
    {
      name: 'the first spec with nothing current makes its build the target',
      before: state({ phase: 'Pending' }),
      spec: desired('v1', 1),
      expected: { reapply: false, target: 'v1', targetGeneration: 1, deprecated: [] },
    },
    {
      name: 'same generation with a new connectionVersion re-applies the current build',
      before: state({ desired: desired('v1', 3), current }),
      spec: desired('v1', 3, { connectionVersion: 'c2' }),
      expected: { reapply: true, deprecated: [] },
    },
    {
      name: 'same generation with a newer numeric connectionVersion re-applies the current build',
      before: state({ desired: desired('v1', 3, { connectionVersion: '99' }), current }),
      spec: desired('v1', 3, { connectionVersion: '120' }),
      expected: { reapply: true, deprecated: [] },
    },
    {
      name: 'a new generation of the current build that changes nothing live does not re-apply',
      before: state({ desired: desired('v1', 3), current }),
      spec: desired('v1', 4),
      expected: { reapply: false, deprecated: [] },
    },
    {
      name: 'a replicas change on the current build re-applies it',
      before: state({ desired: desired('v1', 3, { replicas: 1 }), current }),
      spec: desired('v1', 4, { replicas: 3 }),
      expected: { reapply: true, deprecated: [] },
    },
    {
      name: 'a replicas change on the in-flight target re-applies and keeps the target',
      before: state({
        desired: desired('v2', 3),
        current,
        target: { buildId: 'v2', generation: 3, stage: 'routing', rampPercentage: 10 },
      }),
      spec: desired('v2', 4, { replicas: 5 }),
      expected: { reapply: true, target: 'v2', targetGeneration: 3, deprecated: [] },
    },
    {
      name: 'a new connection re-applies live Deployments even while the desired build is the aborted one',
      before: state({ desired: desired('v2', 3), current, aborted: { buildId: 'v2', reason: 'x' } }),
      spec: desired('v2', 3, { connectionVersion: 'c2' }),
      expected: { reapply: true, aborted: 'v2', deprecated: [] },
    },
    {
      name: 'a new build with no target becomes the target (current stays)',
      before: state({ desired: desired('v1', 1), current }),
      spec: desired('v2', 2),
      expected: { reapply: false, target: 'v2', targetGeneration: 2, deprecated: [] },
    },
    {
      name: 'a new build while a target is in flight supersedes it and deprecates it',
      before: state({
        desired: desired('v2', 2),
        current,
        target: { buildId: 'v2', generation: 2, stage: 'routing', rampPercentage: 25 },
      }),
      spec: desired('v3', 3),
      expected: {
        reapply: false,
        superseded: 'v2',
        target: 'v3',
        targetGeneration: 3,
        deprecated: [
          {
            buildId: 'v2',
            deprecatedSince: now.toISOString(),
            place: { connection: { hostPort: 'temporal-frontend.temporal:7233' }, temporalNamespace: 'orders' },
          },
        ],
      },
    },
    {
      name: 'a superseded target already deprecated keeps a single entry with its original deprecatedSince',
      before: state({
        desired: desired('v2', 2),
        current,
        target: { buildId: 'v2', generation: 2, stage: 'routing' },
        deprecated: [deprecated('v0'), deprecated('v2')],
      }),
      spec: desired('v3', 3),
      expected: {
        reapply: false,
        superseded: 'v2',
        target: 'v3',
        targetGeneration: 3,
        deprecated: [
          { buildId: 'v0', deprecatedSince: earlier },
          { buildId: 'v2', deprecatedSince: earlier },
        ],
      },
    },
    {
      name: 'the desired build equal to current clears the in-flight target (superseded); its Deployment needs no re-apply',
      before: state({
        desired: desired('v2', 2),
        current,
        target: { buildId: 'v2', generation: 2, stage: 'routing', rampPercentage: 50 },
      }),
      spec: desired('v1', 3),
      expected: {
        reapply: false,
        superseded: 'v2',
        deprecated: [
          {
            buildId: 'v2',
            deprecatedSince: now.toISOString(),
            place: { connection: { hostPort: 'temporal-frontend.temporal:7233' }, temporalNamespace: 'orders' },
          },
        ],
      },
    },
    {
      name: 'a deprecated build brought back leaves deprecated and becomes the target',
      before: state({
        desired: desired('v1', 4),
        current,
        deprecated: [deprecated('v0'), deprecated('v9', { drainedSince: earlier })],
      }),
      spec: desired('v0', 5),
      expected: {
        reapply: false,
        target: 'v0',
        targetGeneration: 5,
        deprecated: [{ buildId: 'v9', deprecatedSince: earlier, drainedSince: earlier }],
      },
    },
    {
      name: 'the aborted build in a new generation is rolled out again (an edit is a new attempt)',
      before: state({
        desired: desired('v2', 2),
        current,
        deprecated: [deprecated('v2')],
        aborted: { buildId: 'v2', reason: 'gate failed' },
      }),
      spec: desired('v2', 3, { replicas: 4 }),
      expected: { reapply: false, target: 'v2', targetGeneration: 3, deprecated: [] },
    },
    {
      name: 'a different build clears aborted and becomes the target',
      before: state({
        desired: desired('v2', 2),
        current,
        deprecated: [deprecated('v2')],
        aborted: { buildId: 'v2', reason: 'gate failed' },
      }),
      spec: desired('v3', 3),
      expected: {
        reapply: false,
        target: 'v3',
        targetGeneration: 3,
        deprecated: [{ buildId: 'v2', deprecatedSince: earlier }],
      },
    },
    {
      name: 'going back to the current build clears aborted without a target',
      before: state({
        desired: desired('v2', 2),
        current,
        deprecated: [deprecated('v2')],
        aborted: { buildId: 'v2', reason: 'gate failed' },
      }),
      spec: desired('v1', 3),
      expected: { reapply: false, deprecated: [{ buildId: 'v2', deprecatedSince: earlier }] },
    },
  ])('$name', ({ before, spec: next, expected }) => {
    const snapshot = structuredClone(before);
    const decision = planSpecChange(before, next, now);

    expect(decision.ignored).toBe(false);
    expect(decision.reapply).toBe(expected.reapply);
    expect(decision.superseded).toBe(expected.superseded);
    expect(decision.state.desired).toBe(next);
    expect(decision.state.current).toEqual(before.current);
    expect(decision.state.target?.buildId).toBe(expected.target);
    expect(decision.state.target?.generation).toBe(expected.targetGeneration);
    expect(decision.state.deprecated).toEqual(expected.deprecated);
    expect(decision.state.aborted?.buildId).toBe(expected.aborted);
    // The input state is not mutated: the workflow swaps it in only when the decision is not ignored.
    expect(before).toEqual(snapshot);
  });

  test.each([
    {
      name: 'a stale generation (even with a new build and connection)',
      spec: desired('v9', 4, { connectionVersion: 'c2' }),
    },
    {
      name: 'the same generation and connectionVersion (even with other replicas)',
      spec: desired('v9', 5, { replicas: 7 }),
    },
  ])('ignores $name', ({ spec: next }) => {
    const before = state({ desired: desired('v1', 5), current: { buildId: 'v1', since: earlier } });
    const decision = planSpecChange(before, next, now);
    expect(decision).toEqual({ state: before, reapply: false, ignored: true });
    expect(decision.state).toBe(before);
  });
});

describe('rolloutPending', () => {
  const target = { buildId: 'v2', generation: 2, stage: 'routing' as const };
  test.each<[string, Partial<RolloutState>, boolean]>([
    ['no target: nothing to roll out', {}, false],
    ['a target: roll it out', { target }, true],
    ['the target is the aborted build: not again', { target, aborted: { buildId: 'v2', reason: 'x' } }, false],
    [
      'an older build was aborted: the target still rolls out',
      { target, aborted: { buildId: 'v1', reason: 'x' } },
      true,
    ],
    ['deleting: no rollout even with a target', { target, deleting: true }, false],
  ])('%s', (_name, overrides, expected) => {
    expect(rolloutPending(state(overrides))).toBe(expected);
  });
});

describe('isPaused', () => {
  test.each<[string, Partial<RolloutState>, boolean]>([
    ['neither signal nor spec', { desired: desired('v1', 1) }, false],
    ['no spec yet and no signal', {}, false],
    ['paused by signal', { desired: desired('v1', 1), pausedBy: { reason: 'ops' } }, true],
    ['paused by signal before any spec', { pausedBy: { reason: 'ops' } }, true],
    ['spec.rollout.paused true', { desired: desired('v1', 1, { paused: true }) }, true],
    ['spec.rollout.paused false', { desired: desired('v1', 1, { paused: false }) }, false],
  ])('%s', (_name, overrides, expected) => {
    expect(isPaused(state(overrides))).toBe(expected);
  });
});

describe('firstVersionRouting', () => {
  test.each([
    [true, 'byStrategy'],
    [false, 'currentNow'],
  ] as const)('unversioned pollers %s → %s', (pollers, expected) => {
    expect(firstVersionRouting(pollers)).toBe(expected);
  });
});

describe('stepSummary', () => {
  test.each<[string, { rampPercentage: number; pauseDuration?: string }, number | undefined, string]>([
    ['a timed step', { rampPercentage: 25, pauseDuration: '2m' }, undefined, 'ramp 25% for 2m'],
    ['a timed step with hours', { rampPercentage: 10, pauseDuration: '1h30m' }, undefined, 'ramp 10% for 1h30m'],
    ['an untimed step', { rampPercentage: 25 }, undefined, 'ramp 25% until promoted'],
    ['an untimed step ignores the remaining time', { rampPercentage: 50 }, 30_000, 'ramp 50% until promoted'],
    [
      'a resumed step shows what remains',
      { rampPercentage: 25, pauseDuration: '2m' },
      45_000,
      'ramp 25% for 45s more (resumed)',
    ],
    [
      'a resumed step with minutes left',
      { rampPercentage: 25, pauseDuration: '10m' },
      90_000,
      'ramp 25% for 1m30s more (resumed)',
    ],
    [
      'remaining equal to the full duration is not a resume',
      { rampPercentage: 25, pauseDuration: '2m' },
      120_000,
      'ramp 25% for 2m',
    ],
    [
      'remaining longer than the step is not a resume',
      { rampPercentage: 25, pauseDuration: '2m' },
      300_000,
      'ramp 25% for 2m',
    ],
  ])('%s', (_name, step, remainingMs, expected) => {
    expect(stepSummary(RolloutStep.parse(step), remainingMs)).toBe(expected);
  });
});

describe('drainPollDelay', () => {
  test.each([
    [0, 60_000, 1_000],
    [1, 60_000, 2_000],
    [2, 60_000, 4_000],
    [5, 60_000, 32_000],
    [6, 60_000, 60_000],
    [1_000, 60_000, 60_000],
    [3, 5_000, 5_000],
  ])('attempt %i (max %i ms) waits %i ms', (attempt, maxMs, expected) => {
    expect(drainPollDelay(attempt, maxMs)).toBe(expected);
  });
});

describe('sunsetAction', () => {
  const standard = { scaledownDelay: '1h', deleteDelay: '24h' };
  const drained = (extra: Partial<SunsetVersion> = {}) =>
    deprecated('v1', { drainedSince: now.toISOString(), ...extra });

  test.each<[string, SunsetVersion, { scaledownDelay: string; deleteDelay: string }, Date, SunsetAction]>([
    [
      'not drained: wait for it (never an early scale-down)',
      deprecated('v1', { status: 'Draining' }),
      standard,
      at(48 * hour),
      { kind: 'waitForDrained' },
    ],
    [
      'not drained with zero delays: still wait',
      deprecated('v1'),
      { scaledownDelay: '0s', deleteDelay: '0s' },
      now,
      { kind: 'waitForDrained' },
    ],
    [
      'drained, before scaledownDelay: wait until scale-down time',
      drained(),
      standard,
      at(30 * minute),
      { kind: 'waitUntil', atMs: t0 + hour, then: 'scaleDown' },
    ],
    ['drained, exactly at scaledownDelay: scale down', drained(), standard, at(hour), { kind: 'scaleDown' }],
    ['drained, after scaledownDelay: scale down', drained(), standard, at(2 * hour), { kind: 'scaleDown' }],
    [
      'not scaled down yet although past deleteDelay: scale down first',
      drained(),
      standard,
      at(48 * hour),
      { kind: 'scaleDown' },
    ],
    [
      'scaled down, before deleteDelay: wait until delete time',
      drained({ scaledDown: true }),
      standard,
      at(2 * hour),
      { kind: 'waitUntil', atMs: t0 + 24 * hour, then: 'delete' },
    ],
    ['scaled down, at deleteDelay: delete', drained({ scaledDown: true }), standard, at(24 * hour), { kind: 'delete' }],
    [
      'scaled down, after deleteDelay: delete',
      drained({ scaledDown: true }),
      standard,
      at(30 * hour),
      { kind: 'delete' },
    ],
    [
      'deleteDelay shorter than scaledownDelay: delete waits for the scale-down time',
      drained({ scaledDown: true }),
      { scaledownDelay: '1h', deleteDelay: '10m' },
      at(30 * minute),
      { kind: 'waitUntil', atMs: t0 + hour, then: 'delete' },
    ],
    [
      'deleteDelay shorter than scaledownDelay, not scaled down: wait for scale-down',
      drained(),
      { scaledownDelay: '1h', deleteDelay: '10m' },
      at(30 * minute),
      { kind: 'waitUntil', atMs: t0 + hour, then: 'scaleDown' },
    ],
    [
      'zero scaledownDelay: scale down as soon as drained',
      drained(),
      { scaledownDelay: '0s', deleteDelay: '24h' },
      now,
      { kind: 'scaleDown' },
    ],
  ])('%s', (_name, version, sunset, when, expected) => {
    expect(sunsetAction(version, sunset, when)).toEqual(expected);
  });
});

describe('isDrained', () => {
  test.each([
    ['Drained', true],
    ['Inactive', true],
    ['NotRegistered', true],
    ['Current', false],
    ['Ramping', false],
    ['Draining', false],
    [undefined, false],
  ])('%s → %s', (status, expected) => {
    expect(isDrained(status)).toBe(expected);
  });
});

describe('versionsToMakeRoom', () => {
  const v = (buildId: string, status: string) => ({ buildId, status });

  test.each<[string, { buildId: string; status: string }[], string[], number, { remove: string[]; atCap: boolean }]>([
    ['well under the cap: nothing', [v('a', 'Drained'), v('b', 'Drained')], [], 5, { remove: [], atCap: false }],
    [
      'one below the cap (room for exactly one more): nothing',
      [v('a', 'Drained'), v('b', 'Drained'), v('c', 'Current')],
      [],
      4,
      { remove: [], atCap: false },
    ],
    [
      'at the cap: removes one drained version',
      [v('cur', 'Current'), v('old', 'Drained'), v('idle', 'Inactive'), v('dr', 'Draining')],
      ['cur'],
      4,
      { remove: ['old'], atCap: false },
    ],
    [
      'over the cap: removes oldest-first as listed, as many as needed',
      [v('old1', 'Drained'), v('old2', 'Inactive'), v('old3', 'Drained'), v('cur', 'Current'), v('new', 'Inactive')],
      ['new', 'cur'],
      4,
      { remove: ['old1', 'old2'], atCap: false },
    ],
    [
      'never removes a kept version even if drained',
      [v('kept', 'Drained'), v('other', 'Drained')],
      ['kept'],
      2,
      { remove: ['other'], atCap: false },
    ],
    [
      'never removes Current, Ramping or Draining even if not kept; not enough room → atCap',
      [v('a', 'Current'), v('b', 'Ramping'), v('c', 'Draining'), v('d', 'Drained')],
      [],
      3,
      { remove: ['d'], atCap: true },
    ],
    ['nothing removable → atCap', [v('a', 'Current'), v('b', 'Ramping')], [], 2, { remove: [], atCap: true }],
    [
      'only kept versions are drained → atCap',
      [v('a', 'Inactive'), v('b', 'Drained')],
      ['a', 'b'],
      2,
      { remove: [], atCap: true },
    ],
  ])('%s', (_name, versions, keep, maxVersions, expected) => {
    expect(versionsToMakeRoom(versions, keep, maxVersions)).toEqual(expected);
  });
});

describe('renderStatus', () => {
  const conditionStatus = (s: ReturnType<typeof renderStatus>, type: string) =>
    s.conditions?.find((c) => c.type === type)?.status;

  test('a newer generation that could not be taken: said as the watcher says it, the versions as they run', () => {
    const specProblem = {
      generation: 4,
      phase: 'Pending' as const,
      reason: 'ConnectionNotFound' as const,
      message: 'TemporalConnection shop/missing not found',
    };
    const s = renderStatus(
      state({ desired: desired('v1', 3), current: { buildId: 'v1', since: earlier }, specProblem }),
    );
    expect(s).toMatchObject({
      observedGeneration: 4,
      phase: 'Pending',
      message: specProblem.message,
      currentVersion: { buildID: 'v1' },
    });
    expect(s.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Ready', 'False', 'ConnectionNotFound'],
      ['Progressing', 'False', 'ConnectionNotFound'],
    ]);
    // Once a newer spec is in force, it is not said any more.
    expect(
      renderStatus(state({ desired: desired('v1', 5), current: { buildId: 'v1', since: earlier }, specProblem })).phase,
    ).toBe('Ready');
  });

  test.each<[Phase, 'True' | 'False', 'True' | 'False']>([
    ['Ready', 'True', 'False'],
    ['Pending', 'False', 'True'],
    ['Deploying', 'False', 'True'],
    ['WaitingForPollers', 'False', 'True'],
    ['Gating', 'False', 'True'],
    ['Ramping', 'False', 'True'],
    ['AwaitingPromotion', 'False', 'True'],
    ['Deleting', 'False', 'True'],
    ['Paused', 'False', 'False'],
    ['Aborted', 'False', 'False'],
    ['Failed', 'False', 'False'],
    ['InvalidSpec', 'False', 'False'],
  ])('phase %s: Ready=%s, Progressing=%s', (phase, ready, progressing) => {
    const status = renderStatus(state({ phase, desired: desired('v1', 1) }));
    expect(status.phase).toBe(phase);
    expect(conditionStatus(status, 'Ready')).toBe(ready);
    expect(conditionStatus(status, 'Progressing')).toBe(progressing);
  });

  test('conditions carry reason, message, lastTransitionTime and observedGeneration', () => {
    const status = renderStatus(
      state({
        phase: 'Ramping',
        reason: 'Ramping',
        message: 'ramp 25% for 2m',
        since: iso(-minute),
        desired: desired('v2', 7),
      }),
    );
    expect(status.conditions).toEqual([
      {
        type: 'Ready',
        status: 'False',
        reason: 'Ramping',
        message: 'ramp 25% for 2m',
        lastTransitionTime: iso(-minute),
        observedGeneration: 7,
      },
      {
        type: 'Progressing',
        status: 'True',
        reason: 'Ramping',
        message: 'ramp 25% for 2m',
        lastTransitionTime: iso(-minute),
        observedGeneration: 7,
      },
    ]);
    expect(status.observedGeneration).toBe(7);
    expect(status.message).toBe('ramp 25% for 2m');
  });

  test('without a spec, conditions have no observedGeneration', () => {
    const status = renderStatus(state({ phase: 'Pending', reason: 'Deploying', message: 'waiting' }));
    expect(status.observedGeneration).toBeUndefined();
    for (const c of status.conditions ?? []) expect(c).not.toHaveProperty('observedGeneration');
    expect(status.currentVersion).toBeUndefined();
    expect(status.targetVersion).toBeUndefined();
    expect(status.deprecatedVersions).toBeUndefined();
    expect(status.lastAbortReason).toBeUndefined();
  });

  test.each<
    [
      string,
      RolloutState['target'],
      { status: 'Ramping' | 'Inactive'; rampPercentage?: number; stepIndex?: number; rampingSince?: string },
    ]
  >([
    [
      'a ramping target is Ramping',
      {
        buildId: 'v2',
        generation: 2,
        stage: 'routing',
        rampPercentage: 25,
        step: stepAt(iso(-minute), 1),
        rampingSince: iso(-minute),
      },
      { status: 'Ramping', rampPercentage: 25, stepIndex: 1, rampingSince: iso(-minute) },
    ],
    ['a target without a ramp is Inactive', { buildId: 'v2', generation: 2, stage: 'routing' }, { status: 'Inactive' }],
    [
      'a ramp without a step index (not Progressive) is Ramping',
      { buildId: 'v2', generation: 2, stage: 'routing', rampPercentage: 100 },
      { status: 'Ramping', rampPercentage: 100 },
    ],
    [
      'a step index without a ramp is Inactive',
      { buildId: 'v2', generation: 2, stage: 'routing', step: stepAt(iso(-minute), 0) },
      { status: 'Inactive', stepIndex: 0 },
    ],
  ])('targetVersion: %s', (_name, target, expected) => {
    const status = renderStatus(state({ desired: desired('v2', 2), target }));
    expect(status.targetVersion).toEqual({
      buildID: 'v2',
      deploymentName: versionedDeploymentName('orders', 'v2'),
      ...expected,
    });
  });

  test('versions: current, target and deprecated with their Deployment names, and the abort reason', () => {
    const status = renderStatus(
      state({
        phase: 'Aborted',
        reason: 'GateFailed',
        message: 'gate Smoke failed',
        desired: desired('v3', 4),
        current: { buildId: 'v1', since: earlier },
        target: { buildId: 'v3', generation: 4, stage: 'routing' },
        deprecated: [
          deprecated('V2.0_rc', { status: 'Drained', drainedSince: iso(-hour) }),
          deprecated('v0', { status: 'Draining' }),
        ],
        aborted: { buildId: 'V2.0_rc', reason: 'gate Smoke failed', cause: 'GateFailed' },
      }),
    );
    expect(status.currentVersion).toEqual({
      buildID: 'v1',
      deploymentName: versionedDeploymentName('orders', 'v1'),
      status: 'Current',
      since: earlier,
    });
    expect(status.targetVersion).toEqual({
      buildID: 'v3',
      deploymentName: versionedDeploymentName('orders', 'v3'),
      status: 'Inactive',
    });
    expect(status.deprecatedVersions).toEqual([
      {
        buildID: 'V2.0_rc',
        deploymentName: versionedDeploymentName('orders', 'V2.0_rc'),
        status: 'Drained',
        deprecatedSince: earlier,
        drainedSince: iso(-hour),
      },
      {
        buildID: 'v0',
        deploymentName: versionedDeploymentName('orders', 'v0'),
        status: 'Draining',
        deprecatedSince: earlier,
      },
    ]);
    // A build ID that is not DNS-safe gets a hashed, valid Deployment name, not the raw one.
    expect(status.deprecatedVersions?.[0]?.deploymentName).not.toBe('orders-V2.0_rc');
    expect(status.lastAbortReason).toBe('gate Smoke failed');
    // What is rendered is a valid status for the CRD.
    expect(() => TemporalWorkerDeploymentStatus.parse(status)).not.toThrow();
  });
});

test('planSpecChange: the same generation with an older connectionVersion (by order, not by inequality) is ignored', () => {
  const before = state({
    desired: desired('v1', 3, { connectionVersion: '120' }),
    current: { buildId: 'v1', since: earlier },
  });
  expect(planSpecChange(before, desired('v1', 3, { connectionVersion: '99' }), now)).toMatchObject({
    ignored: true,
    reapply: false,
  });
  expect(planSpecChange(before, desired('v1', 3, { connectionVersion: '120' }), now)).toMatchObject({ ignored: true });
});

describe('planSpecChange keeps each build’s own pod template', () => {
  test('another build is never rendered from the desired template', () => {
    const v1 = desired('v1', 1);
    const base = desired('v2', 2);
    const v2 = { ...base, spec: { ...base.spec, template: { spec: { containers: [{ name: 'w', image: 'img:2' }] } } } };
    const first = planSpecChange(state({}), v1, now).state;
    const second = planSpecChange(first, v2, now).state;
    expect(second.templates?.v1).toBe(v1.spec.template);
    expect(second.templates?.v2).toBe(v2.spec.template);
    expect(second.templates?.v1).not.toEqual(second.templates?.v2);
  });
});

describe('nextRampStep: edits mid-rollout continue from the live ramp', () => {
  const steps = [{ rampPercentage: 10 }, { rampPercentage: 40 }, { rampPercentage: 70 }].map((s) => ({
    ...s,
    pauseDuration: '1m',
  }));
  test.each<
    [string, Parameters<typeof nextRampStep>[0], Parameters<typeof nextRampStep>[1], ReturnType<typeof nextRampStep>]
  >([
    [
      'not ramping yet: the first step',
      { strategy: 'Progressive', steps },
      {},
      { kind: 'step', index: 0, rampNow: true },
    ],
    [
      'at a step not done: hold it',
      { strategy: 'Progressive', steps },
      { rampPercentage: 40 },
      { kind: 'step', index: 1, rampNow: false },
    ],
    [
      'at a step done: the next one',
      { strategy: 'Progressive', steps },
      { rampPercentage: 40, step: { done: true } },
      { kind: 'step', index: 2, rampNow: true },
    ],
    [
      'the last step done: current',
      { strategy: 'Progressive', steps },
      { rampPercentage: 70, step: { done: true } },
      { kind: 'current' },
    ],
    [
      'steps edited, the live ramp between two: the first step above it',
      { strategy: 'Progressive', steps },
      { rampPercentage: 25 },
      { kind: 'step', index: 1, rampNow: true },
    ],
    [
      'steps edited, every step below the live ramp: current',
      { strategy: 'Progressive', steps },
      { rampPercentage: 80 },
      { kind: 'current' },
    ],
    [
      'steps edited to fewer: never backwards',
      { strategy: 'Progressive', steps: [{ rampPercentage: 5 }, { rampPercentage: 50 }] },
      { rampPercentage: 40, step: { done: true } },
      { kind: 'step', index: 1, rampNow: true },
    ],
    [
      'switched to Manual mid-ramp: wait for promote where it is',
      { strategy: 'Manual' },
      { rampPercentage: 40 },
      { kind: 'awaitPromotion' },
    ],
    [
      'switched to AllAtOnce mid-ramp: current now',
      { strategy: 'AllAtOnce' },
      { rampPercentage: 40 },
      { kind: 'current' },
    ],
  ])('%s', (_name, rollout, target, plan) => {
    expect(nextRampStep(rollout, target)).toEqual(plan);
  });
});

describe('newerObservation: an older observation never overwrites a newer one', () => {
  const obs = (resourceVersion?: string, observedGeneration?: number) => ({
    buildId: 'v1',
    name: 'd',
    exists: true,
    resourceVersion,
    observedGeneration,
  });
  test.each([
    ['newer resourceVersion wins, whatever the order', obs('12', 1), obs('9', 2), '12'],
    ['numbers, not strings, are compared', obs('9'), obs('10'), '10'],
    ['without resourceVersions the newer observedGeneration wins', obs(undefined, 3), obs(undefined, 2), undefined],
  ])('%s', (_name, a, b, kept) => {
    expect(newerObservation(a, b).resourceVersion).toBe(kept);
    expect(newerObservation(b, a).resourceVersion).toBe(kept);
  });
  test('the first observation is taken', () => expect(newerObservation(undefined, obs('1'))).toEqual(obs('1')));
});

describe('noPollersMessage', () => {
  test('by default it points at the workers’ settings', () => {
    const m = noPollersMessage('v2', 600);
    expect(m).toMatch(/^no worker of v2 polled Temporal within 600s: check that the worker uses TEMPORAL_ADDRESS/);
  });
  test('when the last check failed, it says so and blames nobody’s settings', () => {
    const m = noPollersMessage('v2', 600, '4 DEADLINE_EXCEEDED: Deadline exceeded');
    expect(m).toBe(
      'Temporal could not tell within 600s whether workers of v2 poll: the last check failed: 4 DEADLINE_EXCEEDED: Deadline exceeded (the wait goes on)',
    );
  });
});

describe('recheckDelay', () => {
  test.each([
    [0, 1000],
    [1, 2000],
    [4, 16_000],
    [5, 30_000],
    [60, 30_000],
  ])('backstop read %i waits %i ms (cap 30 s)', (attempt, ms) => expect(recheckDelay(attempt, 30_000)).toBe(ms));
});

describe('planSpecChange: identity, custom build IDs, Unknown drainage', () => {
  test('a new template under the same (custom) build ID re-applies its Deployment: a rolling update of the same version', () => {
    const before = planSpecChange(state(), desired('custom', 1), now).state;
    before.current = { buildId: 'custom', since: earlier };
    before.target = undefined;
    const changed = desired('custom', 2);
    changed.spec = {
      ...changed.spec,
      template: { spec: { containers: [{ name: 'worker', image: 'orders:1.0.1' }] } } as never,
    };
    const decision = planSpecChange(before, changed, now);
    expect(decision.reapply).toBe(true);
    expect(decision.state.templates?.custom).toBe(changed.spec.template);
  });
  test('Unknown (CREATED, UNSPECIFIED) is never drained', () => {
    expect(isDrained('Unknown')).toBe(false);
  });
});
