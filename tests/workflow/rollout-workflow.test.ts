/**
 * RolloutWorkflow against the real Temporal dev server, its activities stubbed by an in-memory world (fake
 * Deployments, fake Temporal routing; see ./fake-world.ts). The world answers like the real watcher: a new
 * Deployment becomes available through `deploymentObserved` signals. No time skipping: pauses and sunset
 * delays are a second or two.
 */
import { randomUUID } from 'node:crypto';
import * as messages from '../../workflows/messages.js';
import type { RolloutStatus } from '../../workflows/state.js';
import { desired, startFakeRig, type FakeRig, routingCalls, type FakeWorld } from './fake-world.js';
import { eventually, sleep } from '../harness/eventually.js';
import { keepHistory } from './fixtures.js';
import { startRollout as start, withCurrentV1 as currentV1 } from './driver.js';

const taskQueue = `rollout-workflow-test-${randomUUID().slice(0, 8)}`;
const timings = { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 };

let rig: FakeRig;

beforeAll(async () => {
  rig = await startFakeRig(taskQueue);
});

afterAll(async () => {
  await rig?.stop();
});

// ---- helpers ----

const startRollout = (label: string) => start(rig, label, timings);
const withCurrentV1 = (label: string) => currentV1(rig, label, timings);

const buildsOf = (s: RolloutStatus) => s.deprecated.map((v) => v.buildId);
const argsOf = (w: FakeWorld, name: string) => w.callsOf(name).map((c) => c.args);
const indexOf = (w: FakeWorld, name: string, buildId: string) =>
  w.calls.findIndex((c) => c.name === name && c.args[0] === buildId);

// ---- behaviours ----

test('1. the first version, with no unversioned pollers, becomes current at once', async () => {
  const r = await startRollout('first');
  await r.spec(desired(1, 'v1', { strategy: 'Progressive', steps: [{ rampPercentage: 10, pauseDuration: '1s' }] }));
  const s = await r.until('phase Ready', (s) => s.phase === 'Ready');

  expect(s).toMatchObject({
    phase: 'Ready',
    reason: 'RolloutComplete',
    current: 'v1',
    paused: false,
    generation: 1,
    deprecated: [],
  });
  expect(s.target).toBeUndefined();
  expect(argsOf(r.world, 'setCurrent')).toEqual([['v1']]);
  expect(r.world.callsOf('setRamping')).toEqual([]);
  // Applied, available (watcher's signal), registered, then routed.
  expect(r.world.sequence(['ensureVersionedDeployment', 'available', 'awaitVersionRegistered', 'setCurrent'])).toEqual([
    'ensureVersionedDeployment',
    'available',
    'awaitVersionRegistered',
    'setCurrent',
  ]);
  expect(r.world.current).toBe('v1');
});

test('2. AllAtOnce v1→v2: v2 current; v1 is sunset only once drained (scale to 0, delete Deployment, delete version)', async () => {
  const r = await withCurrentV1('all-at-once');
  const w = r.world;
  await r.spec(desired(2, 'v2', { strategy: 'AllAtOnce' }));
  let s = await r.until('v2 to be current', (s) => s.current === 'v2');
  expect(s.phase).toBe('Ready');
  expect(buildsOf(s)).toEqual(['v1']);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2']]);
  expect(w.callsOf('setRamping')).toEqual([]);

  // Draining: polled again and again, never scaled down.
  await eventually(
    'several drainage checks of v1',
    () => w.callsOf('versionStatus').filter((c) => c.args[0] === 'v1').length >= 3,
  );
  s = await r.status();
  expect(s.deprecated[0]).toMatchObject({ buildId: 'v1', status: 'Draining' });
  expect(w.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'])).toEqual([]);
  expect(w.deployments.get('v1')?.replicas).toBe(2);

  const drainedAt = Date.now();
  w.versions.set('v1', 'Drained');
  s = await r.until('v1 to be deleted', (s) => s.deprecated.length === 0);
  // The Event is recorded after the state changed: wait for it rather than race it.
  await eventually('the VersionDeleted Event', () => w.events.some((e) => e.reason === 'VersionDeleted'));
  expect(w.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'], 'v1')).toEqual([
    'scaleDeployment',
    'deleteDeployment',
    'deleteVersion',
  ]);
  const [scale] = w.callsOf('scaleDeployment');
  const [del] = w.callsOf('deleteDeployment');
  expect(scale!.args).toEqual(['v1', 0]);
  expect(scale!.at).toBeGreaterThanOrEqual(drainedAt);
  expect(del!.at - drainedAt).toBeGreaterThanOrEqual(1000); // deleteDelay, counted from drained
  expect(w.versions.has('v1')).toBe(false);
  expect(w.events.map((e) => e.reason)).toEqual(
    expect.arrayContaining(['VersionDrained', 'VersionScaledDown', 'VersionDeleted']),
  );

  // The watcher's "v1 Deployment deleted" must not bring it back: a resync sees only live versions.
  const resyncs = w.callsOf('reconcileDeployments').length;
  await r.handle().signal(messages.resync);
  await eventually('a resync', () => w.callsOf('reconcileDeployments').length > resyncs);
  expect(
    w.callsOf('reconcileDeployments').filter((c) => c.at >= del!.at && (c.args[0] as string[]).includes('v1')),
  ).toEqual([]);
  expect([...w.deployments.keys()]).toEqual(['v2']);

  // 12 (recording half): a finished run's history (the resource deleted) is a committed replay fixture, the one
  // `npm run bench:replay` replays by default (bench/replay.ts).
  await keepHistory(w, 'all-at-once-v1-v2');
  expect((await r.handle().describe()).status.name).toBe('COMPLETED');
});

test('3. Progressive 10/50/90: ramps in order, each held for its pause, then current', async () => {
  const r = await withCurrentV1('progressive');
  const w = r.world;
  const steps = [10, 50, 90].map((rampPercentage) => ({ rampPercentage, pauseDuration: '1s' }));
  await r.spec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  await r.until('v2 to be current', (s) => s.current === 'v2' && s.phase === 'Ready');

  expect(argsOf(w, 'setRamping')).toEqual([
    ['v2', 10],
    ['v2', 50],
    ['v2', 90],
  ]);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2']]);
  const ramps = w.callsOf('setRamping');
  const promoted = w.callsOf('setCurrent')[1]!;
  const times = [...ramps.map((c) => c.at), promoted.at];
  for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1000);
  expect(w.calls.indexOf(promoted)).toBeGreaterThan(w.calls.indexOf(ramps[2]!));
  // The resource showed each step.
  const shown = w.statuses.filter((st) => st.phase === 'Ramping').map((st) => st.targetVersion?.rampPercentage);
  expect([...new Set(shown)]).toEqual([10, 50, 90]);
  await keepHistory(r.world, 'progressive');
});

test('4. pause stops the step clock; the status says Paused; resume carries on with the time left', async () => {
  const r = await withCurrentV1('pause');
  const w = r.world;
  await r.spec(desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 50, pauseDuration: '2s' }] }));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');
  const ramp = w.callsOf('setRamping')[0]!;
  await sleep(300);

  const pausedAt = Date.now();
  await r.handle().signal(messages.pause, { reason: 'looking at dashboards' });
  let s = await r.until('phase Paused', (s) => s.phase === 'Paused');
  expect(s).toMatchObject({ phase: 'Paused', reason: 'Paused', paused: true, current: 'v1' });
  // The step's timer stopped: the status says how much of it is left (2 s less the time it ran, under a second when loaded).
  expect(s.message).toMatch(/^Paused \((\d+ms|[12]s) left in step 1\/1\): looking at dashboards$/);
  expect(s.target).toMatchObject({ buildId: 'v2', stage: 'routing', rampPercentage: 50, step: { index: 0 } });

  // Paused for longer than the step had left: nothing moves.
  await sleep(2500);
  s = await r.status();
  expect(s).toMatchObject({ phase: 'Paused', paused: true, current: 'v1' });
  expect(argsOf(w, 'setCurrent')).toEqual([['v1']]);

  const resumedAt = Date.now();
  await r.handle().signal(messages.resume);
  s = await r.until('phase Ramping again', (s) => s.phase !== 'Paused');
  expect(s.paused).toBe(false);
  await r.until('v2 to be current', (s) => s.current === 'v2');
  const promoted = w.callsOf('setCurrent')[1]!;
  // The rest of the step (≈1.7s) ran after resume; the paused time did not count.
  expect(promoted.at - resumedAt).toBeGreaterThanOrEqual(1000);
  expect(promoted.at - ramp.at - (resumedAt - pausedAt)).toBeGreaterThanOrEqual(1800);
  expect(argsOf(w, 'setRamping')).toEqual([['v2', 50]]);
  await keepHistory(r.world, 'pause-resume');
});

test('5. promote ends a step without pauseDuration; promote {full:true} skips the remaining steps', async () => {
  const r = await withCurrentV1('promote');
  const w = r.world;
  const steps = [10, 50, 90].map((rampPercentage) => ({ rampPercentage }));
  await r.spec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  let s = await r.until(
    'step 1 awaiting promotion',
    (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('step 1/3'),
  );
  expect(s.target).toMatchObject({ buildId: 'v2', rampPercentage: 10 });
  await sleep(500);
  expect(argsOf(w, 'setRamping')).toEqual([['v2', 10]]);

  await r.handle().signal(messages.promote);
  s = await r.until(
    'step 2 awaiting promotion',
    (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('step 2/3'),
  );
  expect(argsOf(w, 'setRamping')).toEqual([
    ['v2', 10],
    ['v2', 50],
  ]);

  await r.handle().signal(messages.promote, { full: true });
  await r.until('v2 to be current', (s) => s.current === 'v2' && s.phase === 'Ready');
  expect(argsOf(w, 'setRamping')).toEqual([
    ['v2', 10],
    ['v2', 50],
  ]);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2']]);
  await keepHistory(r.world, 'promote');
});

test('5b. a pause while a step awaits promotion shows Paused; resume returns to AwaitingPromotion; promote still ends it', async () => {
  const r = await withCurrentV1('pause-awaiting');
  await r.spec(desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 20 }] }));
  await r.until('awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
  await r.handle().signal(messages.pause, { reason: 'on call is busy' });
  const paused = await r.until('phase Paused', (s) => s.phase === 'Paused');
  expect(paused).toMatchObject({ paused: true, message: 'on call is busy' });
  await r.handle().signal(messages.resume);
  await r.until('awaiting promotion again', (s) => s.phase === 'AwaitingPromotion' && !s.paused);
  await r.handle().signal(messages.promote);
  await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
  expect(argsOf(r.world, 'setRamping')).toEqual([['v2', 20]]);
});

test('6. Manual: no routing call for the new version until promote', async () => {
  const r = await withCurrentV1('manual');
  const w = r.world;
  await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
  const s = await r.until('awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
  expect(s).toMatchObject({ current: 'v1', target: { buildId: 'v2' } });
  await sleep(1000);
  expect(w.sequence(routingCalls, 'v2')).toEqual([]);
  expect(w.deployments.has('v2')).toBe(true);

  await r.handle().signal(messages.promote);
  await r.until('v2 to be current', (s) => s.current === 'v2' && s.phase === 'Ready');
  expect(w.sequence(routingCalls, 'v2')).toEqual(['setCurrent']);
  await keepHistory(r.world, 'manual');
});

test('7. abort during a ramp: ramp cleared, target sunset, current unchanged, phase Aborted', async () => {
  const r = await withCurrentV1('abort');
  const w = r.world;
  await r.spec(desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 50, pauseDuration: '1m' }] }));
  await r.until('ramping', (s) => s.phase === 'Ramping');
  expect(w.ramping).toBe('v2');

  await r.handle().signal(messages.abort, { reason: 'error rate too high' });
  const s = await r.until('phase Aborted', (s) => s.phase === 'Aborted');
  expect(s).toMatchObject({ reason: 'Aborted', current: 'v1', lastAbortReason: 'error rate too high' });
  expect(s.target).toBeUndefined();
  expect(buildsOf(s)).toEqual(['v2']);
  expect(argsOf(w, 'clearRampIf')).toEqual([['v2']]);
  expect(w.ramping).toBeUndefined();
  expect(w.current).toBe('v1');
  expect(argsOf(w, 'setCurrent')).toEqual([['v1']]);

  // The aborted target is sunset like any other version once drained; v1 is left alone.
  w.versions.set('v2', 'Drained');
  await r.until('v2 deleted', (s) => s.deprecated.length === 0);
  expect(w.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'])).toEqual([
    'scaleDeployment',
    'deleteDeployment',
    'deleteVersion',
  ]);
  expect(w.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'], 'v1')).toEqual([]);
  expect((await r.status()).phase).toBe('Aborted');
  await keepHistory(r.world, 'abort');
});

test('7b. an abort that arrives while the target is being made current is refused: status and routing agree', async () => {
  const r = await withCurrentV1('abort-late');
  r.world.setCurrentDelayMs = 1500;
  await r.spec(desired(2, 'v2', { strategy: 'AllAtOnce' }));
  await eventually('setCurrent(v2) under way', () => argsOf(r.world, 'setCurrent').some(([b]) => b === 'v2'));
  await r.handle().signal(messages.abort, { reason: 'too late' });
  const s = await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
  expect(s.lastAbortReason).toBeUndefined();
  expect(s.deprecated.map((v) => v.buildId)).toEqual(['v1']);
  expect(r.world.current).toBe('v2');
});

test('8. a newer spec with another build supersedes the ramping target', async () => {
  const r = await withCurrentV1('supersede');
  const w = r.world;
  await r.spec(desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 25 }] }));
  await r.until('v2 awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
  expect(w.ramping).toBe('v2');

  await r.spec(desired(3, 'v3', { strategy: 'AllAtOnce' }));
  const s = await r.until('v3 to be current', (s) => s.current === 'v3' && s.phase === 'Ready');
  expect(s.generation).toBe(3);
  expect(buildsOf(s).sort()).toEqual(['v1', 'v2']);
  expect(argsOf(w, 'clearRampIf')).toEqual([['v2']]);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v3']]);
  expect(indexOf(w, 'clearRampIf', 'v2')).toBeLessThan(indexOf(w, 'setCurrent', 'v3'));
  expect(w.ramping).toBeUndefined();
  expect(w.current).toBe('v3');
  await keepHistory(r.world, 'supersede');
});

describe('9. a failed gate', () => {
  const gate = { workflowType: 'smokeTest', input: { orders: 3 } };

  test('with policy Abort aborts the rollout before any routing', async () => {
    const r = await withCurrentV1('gate-abort');
    const w = r.world;
    w.gateResults = [{ passed: false, message: 'smoke test failed' }];
    await r.spec(desired(2, 'v2', { strategy: 'AllAtOnce', gate, gateFailurePolicy: 'Abort' }));
    const s = await r.until('phase Aborted', (s) => s.phase === 'Aborted');
    expect(s).toMatchObject({ reason: 'GateFailed', current: 'v1' });
    expect(s.lastAbortReason).toContain('smoke test failed');
    expect(buildsOf(s)).toEqual(['v2']);
    expect(w.sequence(['setRamping', 'setCurrent'], 'v2')).toEqual([]);
    expect(w.callsOf('runGate')).toHaveLength(1);
    expect(w.callsOf('runGate')[0]!.args[1]).toMatchObject({
      buildId: 'v2',
      workflowType: 'smokeTest',
      taskQueue: 'example',
      input: { orders: 3 },
      // Per lifecycle (the uid), generation (2) and run of a gate in it (the first).
      workflowId: `glidepath-gate/shop/${w.owner.name}/${w.owner.uid}/v2/rollout/2.1`,
    });
    await keepHistory(r.world, 'gate-abort');
  });

  test('with policy Pause waits; resume runs it again, and a pass carries on', async () => {
    const r = await withCurrentV1('gate-pause');
    const w = r.world;
    w.gateResults = [{ passed: false, message: 'smoke test failed' }];
    await r.spec(desired(2, 'v2', { strategy: 'AllAtOnce', gate, gateFailurePolicy: 'Pause' }));
    const s = await r.until('phase Paused', (s) => s.phase === 'Paused');
    expect(s).toMatchObject({ reason: 'GateFailed', paused: true, current: 'v1', target: { buildId: 'v2' } });
    await sleep(500);
    expect(w.callsOf('runGate')).toHaveLength(1);
    expect(w.sequence(['setRamping', 'setCurrent'], 'v2')).toEqual([]);

    await r.handle().signal(messages.resume);
    await r.until('v2 to be current', (s) => s.current === 'v2' && s.phase === 'Ready');
    expect(w.callsOf('runGate')).toHaveLength(2);
    expect(indexOf(w, 'setCurrent', 'v2')).toBeGreaterThan(w.calls.indexOf(w.callsOf('runGate')[1]!));
    await keepHistory(r.world, 'gate-pause');
  });
});

test('10. deleted: routes away, scales down and deletes everything, drops the finalizer, and completes', async () => {
  const r = await withCurrentV1('deleted');
  const w = r.world;
  await r.spec(desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 50 }] }));
  await r.until('v2 awaiting promotion', (s) => s.phase === 'AwaitingPromotion');

  await w.deleteResource();
  await r.handle().result();
  // The pods go before the versions: the server deletes a version only once it no longer sees its pollers.
  const cleanup = [
    'routeAway',
    'scaleOwnedDeployments',
    'deleteOwnedDeployments',
    'deleteWorkerDeployment',
    'removeFinalizer',
  ];
  expect(w.sequence(cleanup)).toEqual(cleanup);
  // The `deleted` signal only woke it: it cleaned up once it had read that the resource is being deleted.
  expect(w.sequence(['readResource', ...cleanup]).slice(-cleanup.length - 1)).toEqual(['readResource', ...cleanup]);
  expect(argsOf(w, 'findSuccessor')).toEqual([[]]);
  expect(argsOf(w, 'scaleOwnedDeployments')).toEqual([[0]]);
  expect(w.deployments.size).toBe(0);
  expect(w.current).toBeUndefined();
  expect(w.ramping).toBeUndefined();
  expect(w.sequence(['setCurrent'], 'v2')).toEqual([]);
  expect(w.statuses.at(-1)?.phase).toBe('Deleting');
  expect((await r.handle().describe()).status.name).toBe('COMPLETED');
});

test('11. a duplicate hint (the resourceVersion last read) asks for no read; a read of the same or an older generation changes nothing', async () => {
  const r = await startRollout('stale');
  const w = r.world;
  await r.spec(desired(2, 'v1', { strategy: 'AllAtOnce' }));
  await r.until('v1 to be current', (s) => s.current === 'v1' && s.phase === 'Ready');
  const reads = () => w.callsOf('readResource').length;
  const rounds = () => w.callsOf('reconcileDeployments').length;
  /** A resync round (which reads the resource itself, once); signals are handled in order, so those before it were seen. */
  const resync = async () => {
    const before = rounds();
    await r.handle().signal(messages.resync);
    await eventually('a resync', () => rounds() > before);
  };

  // The watcher sends the hint it sent before (a relist, a restart): the workflow has read that resourceVersion.
  const readBefore = reads();
  await w.wake();
  await w.wake();
  await resync();
  expect(reads()).toBe(readBefore + 1); // the resync's own read, none for the hints

  // What the apiserver answers at another resourceVersion, each read on a hint of its own: the same generation (a
  // metadata edit), the same generation with another build, an older generation (a lagging read).
  for (const stale of [
    desired(2, 'v1', { strategy: 'AllAtOnce' }),
    desired(2, 'v2', { strategy: 'AllAtOnce' }),
    desired(1, 'v3', { strategy: 'AllAtOnce' }),
  ]) {
    const n = reads();
    w.setSpec(stale);
    await w.wake();
    await eventually(`a read of generation ${stale.generation} (${stale.buildId})`, () => reads() > n);
  }
  await resync();

  const s = await r.status();
  expect(s).toMatchObject({ phase: 'Ready', current: 'v1', generation: 2, deprecated: [] });
  expect(s.target).toBeUndefined();
  expect(argsOf(w, 'ensureVersionedDeployment')).toEqual([['v1', 2]]);
  expect(argsOf(w, 'awaitVersionRegistered')).toEqual([['v1']]);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1']]);
  expect(argsOf(w, 'reconcileDeployments')).toEqual([[['v1']], [['v1']]]);
  expect(w.deployments.has('v2') || w.deployments.has('v3')).toBe(false);
});

test('a promote sent while nothing awaits it does not approve a later Manual rollout', async () => {
  const r = await withCurrentV1('stray-promote');
  const w = r.world;
  await r.handle().signal(messages.promote);
  await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
  await r.until('awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
  await sleep(500);
  expect((await r.status()).current).toBe('v1');
  expect(w.sequence(routingCalls, 'v2')).toEqual([]);

  await r.handle().signal(messages.promote);
  await r.until('v2 to be current', (s) => s.current === 'v2');
});
