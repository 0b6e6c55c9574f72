/** A rollout gate's verdict read from its own run (activities/gate-evidence.ts): which runs say the gate passed. */
import proto from '@temporalio/proto';
import { gateBefore, gateRunProblem, hadTraffic, pinnedVersionOf } from '../../activities/gate-evidence.js';
import type { TemporalWorkerDeploymentSpec } from '../../api/temporal-worker-deployment.js';

const { VersioningBehavior, WorkflowExecutionStatus: S } = proto.temporal.api.enums.v1;
const id = 'glidepath-gate/shop/orders/u1/v2/rollout/2.1';
const version = { deploymentName: 'shop/orders', buildId: 'v2' };
const run = (o: { status?: number; type?: string; pinnedTo?: string; deployment?: string } = {}) => ({
  status: o.status ?? S.WORKFLOW_EXECUTION_STATUS_COMPLETED,
  type: { name: o.type ?? 'smoke' },
  versioningInfo: {
    versioningOverride: {
      pinned: { version: { deploymentName: o.deployment ?? 'shop/orders', buildId: o.pinnedTo ?? 'v2' } },
    },
  },
});

describe('gateRunProblem', () => {
  test('a completed run of the gate’s type pinned to the build says it passed', () => {
    expect(gateRunProblem(id, run(), 'smoke', version)).toBeUndefined();
  });
  test.each([
    ['no run', undefined, 'does not exist', false],
    ['another workflow type', run({ type: 'forged' }), 'is a forged, not smoke', false],
    ['pinned to another build', run({ pinnedTo: 'v1' }), 'was pinned to v1, not v2', false],
    ['pinned to the build of another worker deployment', run({ deployment: 'other/orders' }), 'was pinned to', false],
    ['failed', run({ status: S.WORKFLOW_EXECUTION_STATUS_FAILED }), 'did not complete', false],
    ['terminated', run({ status: S.WORKFLOW_EXECUTION_STATUS_TERMINATED }), 'did not complete', false],
    ['still running: it may pass yet', run({ status: S.WORKFLOW_EXECUTION_STATUS_RUNNING }), 'is still running', true],
  ])('%s: refused, naming the run and why', (_, info, why, running) => {
    const no = gateRunProblem(id, info, 'smoke', version);
    expect(no?.problem).toContain(id);
    expect(no?.problem).toContain(why);
    expect(no?.running).toBe(running);
  });
});

describe('pinnedVersionOf', () => {
  test('the override in each of the server’s shapes, else the version a PINNED execution ran on', () => {
    expect(pinnedVersionOf(run())).toEqual(version);
    expect(
      pinnedVersionOf({ versioningInfo: { versioningOverride: { deployment: { seriesName: 'd', buildId: 'v3' } } } }),
    ).toEqual({ deploymentName: 'd', buildId: 'v3' });
    expect(pinnedVersionOf({ versioningInfo: { versioningOverride: { pinnedVersion: 'shop/orders.v4.1' } } })).toEqual({
      deploymentName: 'shop/orders',
      buildId: 'v4.1',
    });
    expect(
      pinnedVersionOf({
        versioningInfo: {
          behavior: VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
          deploymentVersion: { buildId: 'v5' },
        },
      }),
    ).toEqual({ buildId: 'v5' });
  });
  test('an auto-upgrade execution that ran on the build was not pinned to it', () => {
    expect(
      pinnedVersionOf({
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
    ['first traffic, by ramp: the rollout gate', 10, false, 'rollout'],
    ['first traffic, made current: the rollout gate', 100, false, 'rollout'],
    ['within the first step: no gate below', 10, true, undefined],
    ['the next step, after a gated step: its gate', 50, true, 'step-1'],
    ['a share no step lists, past a gated step: that step’s gate', 33, true, 'step-1'],
    ['the step after an ungated one: the gated step below it', 90, true, 'step-1'],
    ['current, past the gated last step: its gate', 100, true, 'step-3'],
    ['99 %, past the gated last step: its gate', 99, true, 'step-3'],
  ])('%s', (_, share, traffic, label) => {
    expect(gateBefore(progressive, share, traffic)?.label).toBe(label);
  });
  test('AllAtOnce and Manual: the rollout gate before the first traffic, nothing after', () => {
    for (const strategy of ['AllAtOnce', 'Manual'] as const) {
      const rollout = { strategy, gate: smoke } as TemporalWorkerDeploymentSpec['rollout'];
      expect(gateBefore(rollout, 100, false)).toEqual({ label: 'rollout', gate: smoke });
      expect(gateBefore(rollout, 100, true)).toBeUndefined();
    }
  });
  test('no gate declared: none', () => {
    expect(
      gateBefore({ strategy: 'AllAtOnce' } as TemporalWorkerDeploymentSpec['rollout'], 100, false),
    ).toBeUndefined();
  });
});
