/**
 * The rollout core under every change and every fault (RolloutWorkflow on the real dev server, activities
 * played by fake worlds): no input fails a workflow task, edits mid-rollout continue from the live ramp, lost
 * signals are made up for by reads, permanent errors show, history stays bounded in a long wait, and every
 * action is tied to the resource's UID.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure, defaultPayloadConverter } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { Client } from '@temporalio/client';
import { rolloutWorkflowId } from '../../api/names.js';
import * as messages from '../../workflows/messages.js';
import type { RolloutWorkflow } from '../../workflows/rollout-workflow.js';
import type { Desired } from '../../api/resource.js';
import { limitCheckAfterMs, type Timings } from '../../api/timings.js';
import { activityTypes } from '../../scripts/history.js';
import { currentBuildKey, phaseKey } from '../../workflows/search-attributes.js';
import { eventually } from '../harness/eventually.js';
import { keepHistory } from './fixtures.js';
import { FakeWorlds, desired, startFakeRig, type FakeRig, type FakeWorld, testInstallation } from './fake-world.js';
import { startRollout as start, withCurrentV1 as currentV1, type Rollout } from './driver.js';

const taskQueue = `core-safety-test-${randomUUID().slice(0, 8)}`;
const timings: Partial<Timings> = {
  drainPollMaxMs: 200,
  resyncIntervalMs: 60_000,
  maxVersions: 100,
  recheckMaxMs: 500,
};

let rig: FakeRig;
let client: Client;
let worlds: FakeWorlds;
const workflowIds: string[] = [];

beforeAll(async () => {
  rig = await startFakeRig(taskQueue);
  ({ client, worlds } = rig);
});

afterAll(async () => {
  await rig?.stop(workflowIds);
});

const startRollout = (label: string, extra: Partial<Timings> = {}) => start(rig, label, { ...timings, ...extra });
const withCurrentV1 = (label: string, extra: Partial<Timings> = {}) => currentV1(rig, label, { ...timings, ...extra });

const argsOf = (w: FakeWorld, name: string) => w.callsOf(name).map((c) => c.args);
const noTaskFailures = async (r: Rollout) => expect(await r.taskFailures()).toEqual([]);
const progressive = (steps: { rampPercentage: number; pauseDuration?: string }[]) => ({
  strategy: 'Progressive' as const,
  steps,
});

test('malformed messages never fail a workflow task, and none is acted on: a spec comes only from a read; the rollout goes on', async () => {
  const r = await startRollout('malformed');
  const h = r.handle();
  const w = r.world;
  const raw = (name: string, ...args: unknown[]) => client.workflow.getHandle(h.workflowId).signal(name, ...args);
  const v9 = desired(1, 'v9');
  // specChanged is a wake-up: whatever it carries, nothing of it is taken (the resource has no spec yet).
  await raw('specChanged', 'v2');
  await raw('specChanged', {});
  await raw('specChanged', { ...v9, generation: 'one' });
  await raw('specChanged', {
    ...v9,
    spec: { ...v9.spec, rollout: { strategy: 'Progressive', steps: [{ rampPercentage: 50 }, { rampPercentage: 10 }] } },
  });
  await raw('specChanged', null);
  // A whole, valid spec as the payload (what the watcher once sent), named for this very object: still only a hint.
  await raw('specChanged', { ...v9, uid: r.owner.uid, resourceVersion: 'rv-999' });
  await raw('deploymentObserved', 42);
  await raw('deploymentObserved', { buildId: 7 });
  await raw('pause', { reason: 12 });
  await raw('resume', 'now');
  await raw('promote', { full: 'yes', buildId: 3 });
  await raw('abort', [1, 2]);
  // A deletion that names no object is refused; so is one with a uid that is no string.
  await raw('deleted', 'soon');
  await raw('deleted');
  await raw('deleted', { uid: 42 });
  await raw('resync', { what: 'ever' });
  // Signals are handled in order: once the deletions after them are refused, the hints have been seen; they woke
  // the workflow, which read the resource (its first read, then at least one more) and found no spec.
  await eventually(
    'the deletions refused',
    () => w.events.filter((e) => e.reason === 'ControlRefused' && e.message.startsWith('deleted')).length === 3,
  );
  await eventually('a read the hints asked for', () => w.callsOf('readResource').length >= 2);
  const before = await h.query(messages.status);
  expect(before).toMatchObject({ phase: 'Pending', deprecated: [] });
  expect([before.current, before.target, before.generation]).toEqual([undefined, undefined, undefined]);
  const acted = [
    'adoptOrApplyDeployment',
    'ensureVersionedDeployment',
    'awaitVersionRegistered',
    'setRamping',
    'setCurrent',
    'routeAway',
    'scaleOwnedDeployments',
    'deleteOwnedDeployments',
    'removeFinalizer',
  ];
  expect(w.calls.filter((c) => acted.includes(c.name))).toEqual([]);
  expect((await h.describe()).status.name).toBe('RUNNING');

  // And then a good spec, applied to the resource, rolls out as usual; v9 never does.
  await r.spec(desired(2, 'v1'));
  const s = await r.until('v1 current', (s) => s.phase === 'Ready' && s.current === 'v1');
  expect(s.generation).toBe(2);
  expect(w.deployments.has('v9')).toBe(false);
  expect(w.calls.filter((c) => c.args.includes('v9'))).toEqual([]);
  expect(w.events.filter((e) => e.reason === 'ControlRefused').length).toBeGreaterThanOrEqual(4);
  await noTaskFailures(r);
  await keepHistory(w, 'malformed-messages');
});

describe('editing spec.rollout of the build being rolled out', () => {
  test('new steps: the next step is the first one above the live ramp; nothing fails', async () => {
    const r = await withCurrentV1('edit-steps');
    await r.spec(
      desired(
        2,
        'v2',
        progressive([
          { rampPercentage: 10, pauseDuration: '1h' },
          { rampPercentage: 50, pauseDuration: '1h' },
        ]),
      ),
    );
    await r.until('ramping 10%', (s) => s.phase === 'Ramping' && s.target?.rampPercentage === 10);
    await r.spec(
      desired(
        3,
        'v2',
        progressive([
          { rampPercentage: 25, pauseDuration: '1s' },
          { rampPercentage: 60, pauseDuration: '1s' },
        ]),
      ),
    );
    await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
    expect(argsOf(r.world, 'setRamping')).toEqual([
      ['v2', 10],
      ['v2', 25],
      ['v2', 60],
    ]);
    await noTaskFailures(r);
    await keepHistory(r.world, 'edit-steps');
  });

  test('a new gate mid-rollout runs before the next step, and the ramp and status go on from where they were', async () => {
    const r = await withCurrentV1('edit-gate');
    const steps = [
      { rampPercentage: 10, pauseDuration: '1h' },
      { rampPercentage: 50, pauseDuration: '1s' },
    ];
    await r.spec(desired(2, 'v2', { ...progressive(steps), gate: { workflowType: 'smokeTest' } }));
    await r.until('ramping 10%', (s) => s.phase === 'Ramping' && s.target?.rampPercentage === 10);
    // The same build with another gate and a short first pause: the new gate runs, then the steps go on.
    await r.spec(
      desired(3, 'v2', {
        ...progressive([{ rampPercentage: 10, pauseDuration: '1s' }, steps[1]!]),
        gate: { workflowType: 'loadTest' },
      }),
    );
    const s = await r.until('v2 current', (st) => st.current === 'v2' && st.phase === 'Ready');
    expect(argsOf(r.world, 'runGate').map(([, g]) => (g as { workflowType: string }).workflowType)).toEqual([
      'smokeTest',
      'loadTest',
    ]);
    expect(argsOf(r.world, 'setRamping')).toEqual([
      ['v2', 10],
      ['v2', 50],
    ]);
    expect(s.generation).toBe(3);
    await noTaskFailures(r);
  });

  test('Progressive → Manual: waits for promote where the ramp is', async () => {
    const r = await withCurrentV1('edit-manual');
    await r.spec(desired(2, 'v2', progressive([{ rampPercentage: 20, pauseDuration: '1h' }])));
    await r.until('ramping 20%', (s) => s.phase === 'Ramping');
    await r.spec(desired(3, 'v2', { strategy: 'Manual' }));
    const s = await r.until('awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
    expect(s.target).toMatchObject({ buildId: 'v2', rampPercentage: 20 });
    expect(r.world.rampPercentage).toBe(20);
    await r.handle().signal(messages.promote, { buildId: 'v2' });
    await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
    await noTaskFailures(r);
  });

  test('Progressive → AllAtOnce: current now', async () => {
    const r = await withCurrentV1('edit-all');
    await r.spec(desired(2, 'v2', progressive([{ rampPercentage: 20 }])));
    await r.until('awaiting promotion at 20%', (s) => s.phase === 'AwaitingPromotion');
    await r.spec(desired(3, 'v2', { strategy: 'AllAtOnce' }));
    await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
    expect(argsOf(r.world, 'setRamping')).toEqual([['v2', 20]]);
    await noTaskFailures(r);
  });

  test('paused: true in the spec holds the step and shows Paused; false lets it go on', async () => {
    const r = await withCurrentV1('edit-paused');
    await r.spec(desired(2, 'v2', progressive([{ rampPercentage: 20, pauseDuration: '2s' }])));
    await r.until('ramping', (s) => s.phase === 'Ramping');
    await r.spec(desired(3, 'v2', { ...progressive([{ rampPercentage: 20, pauseDuration: '2s' }]), paused: true }));
    await r.until('Paused', (s) => s.phase === 'Paused' && s.paused);
    await r.spec(desired(4, 'v2', progressive([{ rampPercentage: 20, pauseDuration: '2s' }])));
    await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
    await noTaskFailures(r);
  });
});

test('a spec that moves the worker deployment to another Temporal namespace is refused, saying why; set back, it is taken', async () => {
  const r = await withCurrentV1('moved');
  const applies = argsOf(r.world, 'ensureVersionedDeployment').length;
  const elsewhere = desired(2, 'v1');
  elsewhere.spec = {
    ...elsewhere.spec,
    workerOptions: { ...elsewhere.spec.workerOptions, temporalNamespace: 'elsewhere' },
  };
  await r.spec(elsewhere);
  await eventually('InvalidSpec in the status', () => r.world.statuses.at(-1)?.phase === 'InvalidSpec');
  expect(r.world.statuses.at(-1)).toMatchObject({
    observedGeneration: 2,
    message: expect.stringContaining('temporalNamespace changed from default to elsewhere'),
  });
  expect(r.world.events.filter((e) => e.reason === 'InvalidSpec')).toHaveLength(1);
  expect(argsOf(r.world, 'ensureVersionedDeployment')).toHaveLength(applies); // nothing re-applied onto the new place
  await r.spec(desired(3, 'v1'));
  await eventually(
    'Ready at generation 3',
    () => r.world.statuses.at(-1)?.phase === 'Ready' && r.world.statuses.at(-1)?.observedGeneration === 3,
  );
  await noTaskFailures(r);
});

test('replicas of the in-flight target are applied at once, and availability waits for the new count', async () => {
  const r = await withCurrentV1('replicas');
  r.world.autoAvailable = false;
  await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
  await eventually('v2 applied', () => r.world.deployments.has('v2'));
  const more = desired(3, 'v2', { strategy: 'Manual' });
  more.spec = { ...more.spec, replicas: 5 };
  await r.spec(more);
  await eventually('v2 re-applied with 5 replicas', () => r.world.deployments.get('v2')?.replicas === 5);
  expect(argsOf(r.world, 'ensureVersionedDeployment')).toContainEqual(['v2', 3]);
  await r.world.makeAvailable('v2');
  await r.until('awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
});

test('a spec reverted to the current build ends in Ready, and the abandoned target is sunset', async () => {
  const r = await withCurrentV1('revert');
  await r.spec(desired(2, 'v2', progressive([{ rampPercentage: 30 }])));
  await r.until('awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
  await r.spec(desired(3, 'v1'));
  const s = await r.until('Ready on v1', (s) => s.phase === 'Ready' && s.target === undefined);
  expect(s).toMatchObject({ current: 'v1', generation: 3, reason: 'RolledBack' });
  expect(s.deprecated.map((v) => v.buildId)).toEqual(['v2']);
  expect(r.world.ramping).toBeUndefined();
});

test('every accepted spec moves observedGeneration, also one that changes nothing', async () => {
  const r = await withCurrentV1('observed');
  await r.spec(desired(7, 'v1'));
  await eventually('status written with generation 7', () => r.world.statuses.at(-1)?.observedGeneration === 7);
  expect(r.world.statuses.at(-1)?.phase).toBe('Ready');
});

test('a forged "available" observation is a wake-up: the wait reads the Deployment and goes on waiting until the read says so', async () => {
  const r = await withCurrentV1('forged-available');
  r.world.autoAvailable = false;
  await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
  await eventually('v2 applied', () => r.world.deployments.has('v2'));
  const reads = () => argsOf(r.world, 'readDeployment').length;
  const before = reads();
  const forged = {
    ...r.world.observation('v2'),
    exists: true,
    generation: 1,
    observedGeneration: 1,
    replicas: 1,
    availableReplicas: 1,
    resourceVersion: '999999999',
  };
  await r.handle().signal(messages.deploymentObserved, forged);
  // Two reads: the first one's answer (not available) was acted on, and the wait came round again.
  await eventually(
    'the forged word was read against the Deployment, and the wait went on',
    () => reads() >= before + 2,
  );
  expect((await r.handle().query(messages.status)).phase).not.toBe('AwaitingPromotion');
  await r.world.makeAvailable('v2');
  await r.until('awaiting promotion once the read says available', (s) => s.phase === 'AwaitingPromotion');
  await noTaskFailures(r);
});

test('a lost "available" signal: the backstop read finds the Deployment available and the rollout completes', async () => {
  const r = await withCurrentV1('lost-signal');
  r.world.signalsLost = true;
  await r.spec(desired(2, 'v2'));
  await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
  expect(argsOf(r.world, 'readDeployment')).toContainEqual(['v2']);
  await keepHistory(r.world, 'lost-signal');
});

test('a permanent error shows as Blocked with its message and a Warning; a new spec tries again', async () => {
  const r = await withCurrentV1('blocked');
  r.world.failWith.set(
    'ensureVersionedDeployment',
    ApplicationFailure.nonRetryable(
      'kube-apiserver refused Deployment shop/x (422): spec.template: Invalid value',
      'Permanent',
    ),
  );
  await r.spec(desired(2, 'v2'));
  const s = await r.until('Blocked', (s) => s.reason === 'Blocked');
  expect(s.phase).toBe('Failed');
  expect(s.message).toContain('422');
  await eventually('a Warning Event saying Blocked', () =>
    r.world.events.some((e) => e.type === 'Warning' && e.reason === 'Blocked'),
  );
  r.world.failWith.delete('ensureVersionedDeployment');
  await r.spec(desired(3, 'v2'));
  await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
  await keepHistory(r.world, 'blocked');
});

/** v1 current, then v2 whose registration wait reaches its deadline (3 s): its first attempt refused, the next held heartbeating `check`. */
async function registrationPastDeadline(
  label: string,
  check: { lastCheckFailure?: string },
  firstFailure: () => Error = () => new Error('14 UNAVAILABLE: the frontend is overloaded'),
  deadlineSeconds = 3,
) {
  const r = await withCurrentV1(label);
  let release!: () => void;
  r.world.registrationHold = new Promise<void>((resolve) => (release = resolve));
  r.world.registrationCheck = check;
  let attempts = 0;
  r.world.failWith.set('awaitVersionRegistered', () => (++attempts === 1 ? firstFailure() : undefined));
  const v2 = desired(2, 'v2');
  v2.spec.progressDeadlineSeconds = deadlineSeconds;
  await r.spec(v2);
  const s = await r.until('NoPollers', (s) => s.reason === 'NoPollers');
  r.world.registrationHold = undefined;
  release();
  await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
  expect(await r.taskFailures()).toEqual([]);
  return s.message;
}

test('at the progress deadline, a registration wait whose last check was refused says so, not that the workers do not poll; it goes on and completes', async () => {
  const message = await registrationPastDeadline('refused', {
    lastCheckFailure: '14 UNAVAILABLE: the frontend is overloaded',
  });
  expect(message).toBe(
    'Temporal could not tell within 3s whether workers of v2 poll: the last check failed: 14 UNAVAILABLE: the frontend is overloaded (the wait goes on)',
  );
});

test('at the progress deadline, a worker deployment limit the server named is said, though the checks after it answered', async () => {
  const limit =
    "the server cannot add v2: the worker deployment is at the server's limit of 5 versions (matching.maxVersionsInDeployment): delete drained versions (temporal worker deployment delete-version), shorten sunset.deleteDelay, or raise the limit";
  const message = await registrationPastDeadline('limited', {}, () =>
    ApplicationFailure.retryable(limit, 'WorkerDeploymentLimit'),
  );
  expect(message).toBe(
    `Temporal could not tell within 3s whether workers of v2 poll: the last check failed: ${limit} (the wait goes on)`,
  );
});

test('a limit is not blamed once an attempt outlived its own limit check: the server was under its limits then', async () => {
  const limit = "the server cannot add v2: the worker deployment is at the server's limit of 5 versions";
  const message = await registrationPastDeadline(
    'limit-gone',
    {},
    () => ApplicationFailure.retryable(limit, 'WorkerDeploymentLimit'),
    Math.ceil(limitCheckAfterMs / 1000) + 2,
  );
  expect(message).toMatch(/^no worker of v2 polled Temporal within 12s: check that the worker uses TEMPORAL_ADDRESS/);
});

test('an earlier refusal is not blamed once the checks answer again: past the deadline the hint is about the workers', async () => {
  const message = await registrationPastDeadline('answered', {});
  expect(message).toMatch(/^no worker of v2 polled Temporal within 3s: check that the worker uses TEMPORAL_ADDRESS/);
});

describe('controls', () => {
  test('a pause does not outlive an abort: the next rollout is not held invisibly', async () => {
    const r = await withCurrentV1('abort-pause');
    await r.spec(desired(2, 'v2', progressive([{ rampPercentage: 10, pauseDuration: '1h' }])));
    await r.until('ramping', (s) => s.phase === 'Ramping');
    await r.handle().signal(messages.pause, { reason: 'looking' });
    await r.until('Paused', (s) => s.phase === 'Paused');
    await r.handle().signal(messages.abort, { reason: 'bad build' });
    await r.until('Aborted', (s) => s.phase === 'Aborted' && !s.paused);
    await r.spec(desired(3, 'v3'));
    await r.until('v3 current', (s) => s.current === 'v3' && s.phase === 'Ready');
  });

  test('a promote naming a superseded build is refused; one naming the target is taken', async () => {
    const r = await withCurrentV1('promote-build');
    await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
    await r.until('v2 awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
    await r.spec(desired(3, 'v3', { strategy: 'Manual' }));
    await r.until('v3 awaiting promotion', (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('v3'));
    await r.handle().signal(messages.promote, { buildId: 'v2' });
    await eventually('the refusal', () =>
      r.world.events.some((e) => e.reason === 'ControlRefused' && e.message.includes('v2')),
    );
    expect((await r.handle().query(messages.status)).phase).toBe('AwaitingPromotion');
    await r.handle().signal(messages.promote, { buildId: 'v3' });
    await r.until('v3 current', (s) => s.current === 'v3');
  });

  test('promote {full} during a failed-gate pause skips the remaining steps', async () => {
    const r = await withCurrentV1('gate-full');
    r.world.gateResults.push({ passed: false, message: 'boom' });
    const d = desired(2, 'v2', {
      ...progressive([{ rampPercentage: 10 }, { rampPercentage: 50 }]),
      gate: { workflowType: 'check' },
      gateFailurePolicy: 'Pause',
    });
    await r.spec(d);
    await r.until('paused by the failed gate', (s) => s.reason === 'GateFailed');
    await r.handle().signal(messages.promote, { full: true });
    await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
    expect(argsOf(r.world, 'setRamping')).toEqual([]);
  });
});

test('a Manual wait beside a draining version continues as new under a small history limit, then completes', async () => {
  const limit = 120;
  const r = await withCurrentV1('bounded', { historyLimit: limit });
  await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
  await r.until('awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
  const firstRun = (await r.handle().describe()).runId;
  // Days of pod churn on the draining v1, compressed: a status signal after another.
  for (let i = 0; i < 60 && (await r.handle().describe()).runId === firstRun; i++) await r.world.notify('v1');
  await eventually(
    'a ContinueAsNew while awaiting promotion',
    async () => (await r.handle().describe()).runId !== firstRun,
  );
  expect((await r.handle().query(messages.status)).phase).toBe('AwaitingPromotion');
  await r.handle().signal(messages.promote, {});
  await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
  for await (const run of client.workflow.list({ query: `WorkflowId = "${r.handle().workflowId}"` })) {
    const length = (await client.workflow.getHandle(run.workflowId, run.runId).describe()).historyLength;
    expect(length).toBeLessThanOrEqual(limit + 40); // the limit, plus what one wake-up adds before it continues
  }
  await noTaskFailures(r);
});

describe("the resource's UID", () => {
  test('a deleted signal about another object with the same name is ignored', async () => {
    const r = await withCurrentV1('uid-deleted');
    await r.handle().signal(messages.deleted, { uid: 'someone-else' });
    await r.handle().signal(messages.resync);
    await eventually('a resync', () => r.world.callsOf('reconcileDeployments').length > 0);
    expect(r.world.callsOf('deleteOwnedDeployments')).toEqual([]);
    expect((await r.handle().describe()).status.name).toBe('RUNNING');
  });

  test('a deleted signal for this object while the apiserver says it is not being deleted deletes nothing', async () => {
    const r = await withCurrentV1('uid-not-deleting');
    const reads = r.world.callsOf('readResource').length;
    await r.handle().signal(messages.deleted, { uid: r.owner.uid });
    await eventually('the read it asked for', () => r.world.callsOf('readResource').length > reads);
    const rounds = r.world.callsOf('reconcileDeployments').length;
    await r.handle().signal(messages.resync);
    await eventually('a resync', () => r.world.callsOf('reconcileDeployments').length > rounds);
    expect(
      r.world.calls.filter((c) =>
        [
          'routeAway',
          'scaleOwnedDeployments',
          'deleteOwnedDeployments',
          'deleteWorkerDeployment',
          'removeFinalizer',
        ].includes(c.name),
      ),
    ).toEqual([]);
    expect(await r.handle().query(messages.status)).toMatchObject({ phase: 'Ready', current: 'v1' });
    expect((await r.handle().describe()).status.name).toBe('RUNNING');
  });

  test('a new object under the same name: the old lifecycle is cleaned up, then the workflow continues as new for it', async () => {
    const r = await withCurrentV1('uid-new');
    const w = r.world;
    const firstRun = (await r.handle().describe()).runId;
    const successor = { ...r.owner, uid: randomUUID(), kind: 'TemporalWorkerDeployment' as const };
    // The old object went (its finalizer removed by hand) and a namesake holds the name, with a spec of its own.
    w.resourceUid = successor.uid;
    w.successor = successor;
    await w.applySpec(desired(1, 'v5')); // the watcher's hint names the namesake
    await eventually('the old lifecycle cleaned up', () => w.callsOf('removeFinalizer').length === 1);
    const cleanup = [
      'routeAway',
      'scaleOwnedDeployments',
      'deleteOwnedDeployments',
      'deleteWorkerDeployment',
      'removeFinalizer',
    ];
    expect(w.sequence(cleanup)).toEqual(cleanup);
    await eventually('a new run', async () => (await r.handle().describe()).runId !== firstRun);
    // The old run continued as new for the object findSuccessor read, not for anything a message said.
    const first = await client.workflow.getHandle(r.handle().workflowId, firstRun).fetchHistory();
    const continued = first.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes;
    expect(continued).toBeTruthy();
    const [input] = (continued!.input?.payloads ?? []).map((p) =>
      defaultPayloadConverter.fromPayload<{ owner: unknown; state?: unknown }>(p),
    );
    expect(input?.owner).toEqual(successor);
    expect(input?.state).toBeUndefined();
    expect(w.callsOf('findSuccessor')).toHaveLength(1);
    // The new lifecycle rolls out the namesake's spec from scratch, after the old one was cleaned up.
    const s = await r.until('v5 current in the new lifecycle', (s) => s.current === 'v5' && s.phase === 'Ready');
    expect(s.generation).toBe(1);
    expect(s.deprecated).toEqual([]);
    expect(w.calls.findIndex((c) => c.name === 'ensureVersionedDeployment' && c.args[0] === 'v5')).toBeGreaterThan(
      w.calls.findIndex((c) => c.name === 'removeFinalizer'),
    );
    expect([...w.deployments.keys()]).toEqual(['v5']);
    await noTaskFailures(r);
    await keepHistory(w, 'new-lifecycle', firstRun);
  });
});

describe("a run that is not its owner's touches nothing", () => {
  const names = (w: FakeWorld) => [...new Set(w.calls.map((c) => c.name))];

  test('an owner never read as itself (another live object holds the name): the run touches nothing and continues as new for that object', async () => {
    const owner = { namespace: 'shop', name: `not-ours-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
    const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
    const w = worlds.create(owner, workflowId, timings);
    const live = { ...owner, uid: randomUUID(), kind: 'TemporalWorkerDeployment' as const };
    w.resourceUid = live.uid;
    w.setSpec(desired(1, 'v1'));
    const started = await client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', {
      taskQueue,
      workflowId,
      args: [{ owner }],
    });
    workflowIds.push(workflowId);
    const first = client.workflow.getHandle(workflowId, started.firstExecutionRunId);
    await eventually(
      'the first run to continue as new',
      async () => (await first.describe()).status.name === 'CONTINUED_AS_NEW',
    );
    const events = (await first.fetchHistory()).events ?? [];
    // One read (inside the task), and nothing else: no write, no report, no Event, no activity.
    expect(activityTypes(events)).toEqual(['readResource']);
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
    const continued = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes;
    const [input] = (continued?.input?.payloads ?? []).map((p) =>
      defaultPayloadConverter.fromPayload<{ owner: unknown; state?: unknown }>(p),
    );
    expect(input?.owner).toEqual(live);
    expect(input?.state).toBeUndefined();
    // The next run reads that object as itself and serves it, as the watcher's run for it would.
    const s = await eventually('v1 current for the live object', async () => {
      const st = await client.workflow.getHandle<typeof RolloutWorkflow>(workflowId).query(messages.status);
      return st.phase === 'Ready' && st.current === 'v1' ? st : undefined;
    });
    expect(s.generation).toBe(1);
    expect(w.callsOf('removeFinalizer')).toEqual([]);
  });

  test('an owner that does not exist: the run ends at once, after one read', async () => {
    const owner = { namespace: 'shop', name: `absent-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
    const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
    const w = worlds.create(owner, workflowId, timings);
    w.resourceGone = true;
    const handle = await client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', {
      taskQueue,
      workflowId,
      args: [{ owner }],
    });
    workflowIds.push(workflowId);
    expect(await handle.result()).toBeUndefined();
    expect(names(w)).toEqual(['readResource']);
    expect(w.statuses).toEqual([]);
  });

  test("a workflow ID that is not its owner's under the controller's installation: the run ends after its one read, touching nothing", async () => {
    const owner = { namespace: 'shop', name: `by-hand-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
    const w = worlds.create(owner, rolloutWorkflowId(testInstallation, owner.namespace, owner.name), timings);
    w.setSpec(desired(1, 'v1'));
    const workflowId = `by-hand-${randomUUID().slice(0, 8)}`;
    const handle = await client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', {
      taskQueue,
      workflowId,
      args: [{ owner }],
    });
    workflowIds.push(workflowId);
    expect(await handle.result()).toBeUndefined();
    expect(w.calls.map((c) => c.name)).toEqual(['readResource']);
    expect(w.statuses).toEqual([]);
  });

  test('search attributes not registered at start are set from the first read after the controller finds them registered', async () => {
    const owner = { namespace: 'shop', name: `search-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
    const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
    const w = worlds.create(owner, workflowId, { ...timings, searchAttributes: false });
    const handle = await client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', {
      taskQueue,
      workflowId,
      args: [{ owner }],
    });
    workflowIds.push(workflowId);
    await w.applySpec(desired(1, 'v1'));
    await eventually('v1 current', async () => {
      const st = await handle.query(messages.status);
      return st.phase === 'Ready' && st.current === 'v1';
    });
    expect((await handle.describe()).typedSearchAttributes.get(phaseKey)).toBeUndefined();
    // The controller's check each minute found them (worker/controller.ts): its next answer to a read says so.
    w.timings = { ...timings };
    w.setSpec(w.spec!); // any change to the resource: a read
    await w.wake();
    const shown = await eventually('the phase shown in search', async () => {
      const sa = (await handle.describe()).typedSearchAttributes;
      return sa.get(phaseKey) && { phase: sa.get(phaseKey), current: sa.get(currentBuildKey) };
    });
    expect(shown).toEqual({ phase: 'Ready', current: 'v1' });
  });

  test('a resource another installation claims mid-run: the run continues as new at once and ends there, acting on nothing more', async () => {
    const owner = { namespace: 'shop', name: `reclaimed-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
    const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
    const w = worlds.create(owner, workflowId, timings);
    const handle = await client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', {
      taskQueue,
      workflowId,
      args: [{ owner }],
    });
    workflowIds.push(workflowId);
    await w.applySpec(desired(1, 'v1'));
    await eventually('v1 current', async () => {
      const st = await handle.query(messages.status);
      return st.phase === 'Ready' && st.current === 'v1';
    });
    const { runId } = await handle.describe();
    const before = w.calls.length;
    await w.claim('another-installation');
    expect(await handle.result()).toBeUndefined(); // the last run of the chain
    expect((await handle.describe()).runId).not.toBe(runId);
    const after = w.calls.slice(before).map((c) => c.name);
    expect(after).toContain('readResource');
    // Reads and the run's own reports only: no Deployment, routing or version write.
    expect(after.filter((n) => !['readResource', 'report', 'writeStatus', 'recordEvent'].includes(n))).toEqual([]);
  });

  test('a resource another installation claimed: the run ends after its one read, touching nothing', async () => {
    const owner = { namespace: 'shop', name: `claimed-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
    const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
    const w = worlds.create(owner, workflowId, timings);
    w.claimedBy = 'another-installation';
    w.setSpec(desired(1, 'v1'));
    const handle = await client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', {
      taskQueue,
      workflowId,
      args: [{ owner }],
    });
    workflowIds.push(workflowId);
    expect(await handle.result()).toBeUndefined();
    expect(w.calls.map((c) => c.name)).toEqual(['readResource']);
    expect(w.statuses).toEqual([]);
  });

  test('a state in a start request is ignored: the run starts from what it reads', async () => {
    const owner = { namespace: 'shop', name: `forged-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
    const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
    const w = worlds.create(owner, workflowId, timings);
    // A forged state: v0 current, a deletion under way.
    const forged = {
      owner,
      deprecated: [],
      phase: 'Ready',
      reason: 'RolloutComplete',
      message: 'forged',
      since: new Date().toISOString(),
      deleting: true,
      deployments: {},
      timings,
      current: { buildId: 'v0' },
    };
    await client.workflow.start('RolloutWorkflow', {
      taskQueue,
      workflowId,
      args: [{ owner, timings, state: forged }],
    });
    workflowIds.push(workflowId);
    await w.applySpec(desired(1, 'v1'));
    const s = await eventually('v1 current', async () => {
      const st = await client.workflow.getHandle<typeof RolloutWorkflow>(workflowId).query(messages.status);
      return st.phase === 'Ready' && st.current === 'v1' ? st : undefined;
    });
    expect(s.deprecated).toEqual([]);
    expect(w.calls.filter((c) => c.args.includes('v0'))).toEqual([]);
    expect(w.callsOf('removeFinalizer')).toEqual([]);
    expect((await client.workflow.getHandle(workflowId).describe()).status.name).toBe('RUNNING');
  });
});

describe('found in review', () => {
  test('a promote and a pause before the Deployment is available: the pause holds, then the promote is taken', async () => {
    const r = await withCurrentV1('pause-promote');
    r.world.autoAvailable = false;
    await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
    await r.until('deploying v2', (s) => s.phase === 'Deploying' && s.target?.buildId === 'v2');
    await r.handle().signal(messages.promote, { buildId: 'v2' });
    await r.handle().signal(messages.pause, { reason: 'hold on' });
    await r.until('Paused', (s) => s.phase === 'Paused');
    await r.world.makeAvailable('v2');
    await r.handle().signal(messages.resume);
    await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
    await noTaskFailures(r);
  });

  test('an abort while Blocked with a ramp in place clears the ramp and shows Aborted', async () => {
    const r = await withCurrentV1('blocked-abort');
    await r.spec(desired(2, 'v2', progressive([{ rampPercentage: 20, pauseDuration: '1s' }, { rampPercentage: 50 }])));
    await r.until('ramping 20%', (s) => s.target?.rampPercentage === 20);
    r.world.failWith.set('setRamping', ApplicationFailure.nonRetryable('missing task queues', 'Permanent'));
    await r.until('Blocked', (s) => s.reason === 'Blocked');
    expect(r.world.ramping).toBe('v2');
    await r.handle().signal(messages.abort, { reason: 'give up' });
    const s = await r.until('Aborted', (s) => s.phase === 'Aborted');
    expect(s.lastAbortReason).toBe('give up');
    expect(r.world.ramping).toBeUndefined();
    expect(s.deprecated.map((v) => v.buildId)).toEqual(['v2']);
  });

  test('a resource deleted without the workflow being told (finalizer removed by hand) is cleaned up at the resync', async () => {
    const r = await withCurrentV1('gone');
    r.world.resourceGone = true;
    await r.handle().signal(messages.resync);
    const result = await r.handle().result();
    expect(result).toMatchObject({ problems: [] });
    expect(r.world.callsOf('deleteOwnedDeployments')).toHaveLength(1);
    expect(r.world.deployments.size).toBe(0);
  });
});

test('a 3-day wait beside a draining version stays far below the history limit (measured over timer-driven hours)', async () => {
  // An hour compressed to a second: the resync's timer fires as it does each hour, and the watcher's hourly hint
  // comes once per fire. What the history grows by over six such hours is what a real hour costs.
  const r = await withCurrentV1('three-days', { resyncIntervalMs: 1000 });
  await r.spec(desired(2, 'v2'));
  await r.until('v2 current, v1 draining', (s) => s.current === 'v2' && s.deprecated[0]?.status === 'Draining');
  await r.spec(desired(3, 'v3', { strategy: 'Manual' }));
  await r.until('v3 awaiting promotion', (s) => s.phase === 'AwaitingPromotion' && s.target?.buildId === 'v3');
  const events = async () => (await r.handle().fetchHistory()).events ?? [];
  const isResyncTimer = (e: proto.temporal.api.history.v1.IHistoryEvent) =>
    e.eventType === proto.temporal.api.enums.v1.EventType.EVENT_TYPE_TIMER_STARTED &&
    Buffer.from(e.userMetadata?.summary?.data ?? [])
      .toString()
      .includes('periodic resync');
  const resyncTimers = async () => (await events()).filter(isResyncTimer);
  const start = (await resyncTimers()).length;
  for (let hour = 0; hour < 8; hour++) {
    await eventually(`resync hour ${hour + 1}`, async () => (await resyncTimers()).length > start + hour);
    await r.world.wake(); // the watcher's hourly hint
  }
  const all = await events();
  const timers = all.filter(isResyncTimer);
  const from = Number(timers[start + 1]!.eventId);
  const to = Number(timers[start + 7]!.eventId);
  const perHour = (to - from) / 6;
  const threeDays = Math.ceil(72 * perHour);
  console.log(
    `figure: a waiting rollout adds ${perHour.toFixed(1)} history events an hour (a resync round on its timer and the watcher's hint, over six hours): ${threeDays} in 3 days`,
  );
  expect(threeDays).toBeLessThan(10_000);
});

describe('deletion with pinned executions open', () => {
  const withDrain = (generation: number, buildId: string, drainBeforeDelete?: string): Desired => {
    const d = desired(generation, buildId);
    return {
      ...d,
      spec: { ...d.spec, sunset: { ...d.spec.sunset, ...(drainBeforeDelete ? { drainBeforeDelete } : {}) } },
    };
  };

  test('says how many were stranded, and by default does not wait', async () => {
    const r = await startRollout('stranded');
    await r.spec(withDrain(1, 'v1'));
    await r.until('v1 current', (s) => s.current === 'v1' && s.phase === 'Ready');
    r.world.openExecutions.set('v1', 3);
    await r.world.deleteResource();
    await r.handle().result();
    expect(r.world.events).toContainEqual(
      expect.objectContaining({
        type: 'Warning',
        reason: 'OpenExecutionsStranded',
        message: expect.stringContaining('3 on v1'),
      }),
    );
    expect(r.world.callsOf('awaitDrained')).toEqual([]);
  });

  test('with sunset.drainBeforeDelete: new work goes elsewhere, then it waits for drainage before deleting', async () => {
    const r = await startRollout('drain-first');
    await r.spec(withDrain(1, 'v1', '1h'));
    await r.until('v1 current', (s) => s.current === 'v1' && s.phase === 'Ready');
    r.world.openExecutions.set('v1', 2);
    await r.world.deleteResource();
    await r.until(
      'waiting for drainage',
      (s) => s.phase === 'Deleting' && s.message.includes('pinned executions to finish'),
    );
    expect(r.world.callsOf('deleteOwnedDeployments')).toEqual([]);
    expect(r.world.callsOf('routeAway')).toHaveLength(1);
    r.world.versions.set('v1', 'Drained');
    const result = await r.handle().result();
    expect(result).toMatchObject({ problems: [], openExecutions: { v1: 2 } });
    const order = r.world.sequence(['routeAway', 'versionStatus', 'deleteOwnedDeployments']);
    expect(order.indexOf('deleteOwnedDeployments')).toBeGreaterThan(order.lastIndexOf('versionStatus'));
  });

  test('a version left on another Temporal is routed away from and deleted there too', async () => {
    const r = await startRollout('two-places');
    const w = r.world;
    const keep = (d: Desired): Desired => ({
      ...d,
      spec: { ...d.spec, sunset: { ...d.spec.sunset, deleteDelay: '1h' } },
    });
    // v1's first rollout waits for its Deployment (nothing routes to it yet), so a new connection may move it.
    w.autoAvailable = false;
    await r.spec(keep(desired(1, 'v1')));
    await eventually('v1 applied', () => w.callsOf('ensureVersionedDeployment').length === 1);
    w.autoAvailable = true;
    await r.spec(keep({ ...desired(2, 'v2'), connection: { hostPort: 'y:1' } }));
    await r.until(
      'v2 current at y:1, v1 sunset where it was',
      (s) => s.current === 'v2' && s.deprecated.some((v) => v.buildId === 'v1'),
    );
    expect(w.callsOf('setCurrent').map((c) => c.where)).toEqual(['y:1/default']);

    await w.deleteResource();
    expect(await r.handle().result()).toMatchObject({ problems: [] });
    expect(
      w
        .callsOf('routeAway')
        .map((c) => c.where)
        .sort(),
    ).toEqual(['x:1/default', 'y:1/default']);
    expect(w.callsOf('deleteVersion').map((c) => [c.args[0], c.where])).toContainEqual(['v1', 'x:1/default']);
    expect(w.callsOf('deleteWorkerDeployment').map((c) => c.where)).toEqual(['y:1/default']);
  });

  test('the drain wait is bounded: past it the deletion goes on and says so', async () => {
    const r = await startRollout('drain-bounded');
    await r.spec(withDrain(1, 'v1', '2s'));
    await r.until('v1 current', (s) => s.current === 'v1' && s.phase === 'Ready');
    r.world.openExecutions.set('v1', 1);
    await r.world.deleteResource();
    const result = (await r.handle().result()) as { problems: string[] };
    expect(result.problems).toEqual([expect.stringContaining('wait up to 2s for the versions to drain')]);
    expect(r.world.callsOf('removeFinalizer')).toHaveLength(1);
  });
});
