/** A rollout gate's verdict read from its own run (activities/gate-evidence.ts): which runs say the gate passed. */
import proto from '@temporalio/proto';
import { gateBefore, gateRunProblem, hadTraffic, pinnedBuildOf } from '../../activities/gate-evidence.js';
import type { TemporalWorkerDeploymentSpec } from '../../api/temporal-worker-deployment.js';

const { VersioningBehavior, WorkflowExecutionStatus: S } = proto.temporal.api.enums.v1;
const id = 'glidepath-gate/shop/orders/u1/v2/rollout/2.1';
const run = (o: { status?: number; type?: string; pinnedTo?: string } = {}) => ({
  status: o.status ?? S.WORKFLOW_EXECUTION_STATUS_COMPLETED,
  type: { name: o.type ?? 'smoke' },
  versioningInfo: {
    versioningOverride: { pinned: { version: { deploymentName: 'shop/orders', buildId: o.pinnedTo ?? 'v2' } } },
  },
});

describe('gateRunProblem', () => {
  test('a completed run of the gate’s type pinned to the build says it passed', () => {
    expect(gateRunProblem(id, run(), 'smoke', 'v2')).toBeUndefined();
  });
  test.each([
    ['no run', undefined, 'does not exist', false],
    ['another workflow type', run({ type: 'forged' }), 'is a forged, not smoke', false],
    ['pinned to another build', run({ pinnedTo: 'v1' }), 'was pinned to v1, not v2', false],
    ['failed', run({ status: S.WORKFLOW_EXECUTION_STATUS_FAILED }), 'did not complete', false],
    ['terminated', run({ status: S.WORKFLOW_EXECUTION_STATUS_TERMINATED }), 'did not complete', false],
    ['still running: it may pass yet', run({ status: S.WORKFLOW_EXECUTION_STATUS_RUNNING }), 'is still running', true],
  ])('%s: refused, naming the run and why', (_, info, why, running) => {
    const no = gateRunProblem(id, info, 'smoke', 'v2');
    expect(no?.problem).toContain(id);
    expect(no?.problem).toContain(why);
    expect(no?.running).toBe(running);
  });
});

describe('pinnedBuildOf', () => {
  test('the override in each of the server’s shapes, else the version a PINNED execution ran on', () => {
    expect(pinnedBuildOf(run())).toBe('v2');
    expect(pinnedBuildOf({ versioningInfo: { versioningOverride: { deployment: { buildId: 'v3' } } } })).toBe('v3');
    expect(pinnedBuildOf({ versioningInfo: { versioningOverride: { pinnedVersion: 'shop/orders.v4' } } })).toBe('v4');
    expect(
      pinnedBuildOf({
        versioningInfo: {
          behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
          deploymentVersion: { buildId: 'v5' },
        },
      }),
    ).toBe('v5');
  });
  test('an auto-upgrade execution that ran on the build was not pinned to it', () => {
    expect(
      pinnedBuildOf({
        versioningInfo: {
          behavior: VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE,
          deploymentVersion: { buildId: 'v5' },
        },
      }),
    ).toBeUndefined();
  });
});

describe('hadTraffic', () => {
  test('any activation, current or ramping time says the version had traffic; none, or no version, says not', () => {
    const at = { nanos: 1 };
    for (const field of [
      'firstActivationTime',
      'lastDeactivationTime',
      'lastCurrentTime',
      'currentSinceTime',
      'rampingSinceTime',
    ])
      expect(hadTraffic({ [field]: at })).toBe(true);
    expect(hadTraffic({ createTime: at })).toBe(false);
    expect(hadTraffic(undefined)).toBe(false);
  });
});

describe('gateBefore', () => {
  const smoke = { workflowType: 'smoke' };
  const soak = { workflowType: 'soak' };
  const progressive = {
    strategy: 'Progressive',
    gate: smoke,
    steps: [{ rampPercentage: 10, gate: soak }, { rampPercentage: 50 }, { rampPercentage: 90, gate: smoke }],
  } as TemporalWorkerDeploymentSpec['rollout'];
  test.each([
    ['first traffic, by ramp: the rollout gate', { percentage: 10 }, false, 'rollout'],
    ['first traffic, made current: the rollout gate', 'current' as const, false, 'rollout'],
    ['the ramp after a gated step: that step’s gate', { percentage: 50 }, true, 'step-1'],
    ['the ramp after a step without a gate: none', { percentage: 90 }, true, undefined],
    ['current after the last step, gated: its gate', 'current' as const, true, 'step-3'],
    ['a ramp no step has, with traffic: none', { percentage: 33 }, true, undefined],
  ])('%s', (_, to, traffic, label) => {
    expect(gateBefore(progressive, to, traffic)?.label).toBe(label);
  });
  test('AllAtOnce and Manual: the rollout gate before the first traffic, nothing after', () => {
    for (const strategy of ['AllAtOnce', 'Manual'] as const) {
      const rollout = { strategy, gate: smoke } as TemporalWorkerDeploymentSpec['rollout'];
      expect(gateBefore(rollout, 'current', false)).toEqual({ label: 'rollout', gate: smoke });
      expect(gateBefore(rollout, 'current', true)).toBeUndefined();
    }
  });
  test('no gate declared: none', () => {
    expect(
      gateBefore({ strategy: 'AllAtOnce' } as TemporalWorkerDeploymentSpec['rollout'], 'current', false),
    ).toBeUndefined();
  });
});
