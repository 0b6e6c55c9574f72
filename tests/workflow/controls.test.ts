/**
 * The controls people send (pause, resume, abort, promote, rollback, retry: each a signal and an update), the
 * rollback window, retries, the manager identity, analysis, the max drain and movePinned: RolloutWorkflow on the
 * real dev server, its activities played by the in-memory world of ./fake-world.ts. Every test checks what
 * happened where it matters: the status (query and resource), the fake routing, the recorded calls, the Events
 * and the `history` query.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { TemporalWorkerDeploymentSpec } from '../../api/temporal-worker-deployment.js';
import * as messages from '../../workflows/messages.js';
import type { HistoryEntry, RolloutStatus } from '../../workflows/state.js';
import type { Desired } from '../../api/resource.js';
import type { Timings } from '../../api/timings.js';
import { desired, startFakeRig, type FakeRig, type FakeWorld } from './fake-world.js';
import { eventually, sleep } from '../harness/eventually.js';
import { keepHistory } from './fixtures.js';
import { withCurrentV1 as currentV1, type Rollout } from './driver.js';

const taskQueue = `controls-test-${randomUUID().slice(0, 8)}`;
const timings: Partial<Timings> = { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 };

let rig: FakeRig;

beforeAll(async () => {
  rig = await startFakeRig(taskQueue);
});

afterAll(async () => {
  await rig?.stop();
});

// ---- helpers ----

/** A rollout whose first version v1 (AllAtOnce, generation 1, or `first`) is current. */
const withCurrentV1 = (label: string, extra: Partial<Timings> = {}, first?: Desired) =>
  currentV1(rig, label, { ...timings, ...extra }, first);

/** The spec with other sunset settings (parsed again, so defaults apply). */
function withSunset(d: Desired, sunset: Record<string, unknown>): Desired {
  return { ...d, spec: TemporalWorkerDeploymentSpec.parse({ ...d.spec, sunset: { ...d.spec.sunset, ...sunset } }) };
}
/** Sunset settings that keep a retired build's Deployment running for the whole test. */
const keepRunning = { scaledownDelay: '1h', deleteDelay: '24h' };

/**
 * Grows the history with resync signals (an idle run adds no events of its own) until the run continues as new.
 * One resync at a time: the run continues as new when no housekeeping runs, and back-to-back resyncs would never let it.
 */
async function pushedPastLimit(r: Rollout): Promise<string> {
  const before = (await r.handle().describe()).runId;
  return eventually(`a ContinueAsNew after run ${before}`, async () => {
    const now = (await r.handle().describe()).runId;
    if (now !== before) return now;
    const resyncs = r.world.callsOf('removeStrayDeployments').length;
    await r.handle().signal(messages.resync);
    await eventually('the resync to be done', () => r.world.callsOf('removeStrayDeployments').length > resyncs);
    return undefined;
  });
}

/** Why the update was refused (the validator's message); fails if it was answered. */
async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err === undefined) throw new Error('expected the update to be refused, but it was answered');
  if (!(err instanceof WorkflowUpdateFailedError)) throw err;
  return err.cause?.message ?? err.message;
}

const argsOf = (w: FakeWorld, name: string) => w.callsOf(name).map((c) => c.args);
const buildsOf = (s: RolloutStatus) => s.deprecated.map((v) => v.buildId);
const reasons = (w: FakeWorld) => w.events.map((e) => e.reason);
const event = (w: FakeWorld, reason: string) =>
  eventually(`a ${reason} Event`, () => w.events.find((e) => e.reason === reason));
const progressive = (pauseDuration: string, rampPercentage = 50) => ({
  strategy: 'Progressive' as const,
  steps: [{ rampPercentage, pauseDuration }],
});

// ---- pause, resume, abort, promote ----

test('1. abort as an update during a long Progressive step takes effect at once: Aborted, ramp cleared, current unchanged', async () => {
  const r = await withCurrentV1('abort-update');
  const w = r.world;
  await r.spec(desired(2, 'v2', progressive('10m')));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');
  expect(w.ramping).toBe('v2');

  const sent = Date.now();
  const answer = await r.control('abort', { reason: 'error rate too high', identity: 'alice' });
  // Answered once the abort took effect: seconds, not the step's 10 minutes.
  expect(Date.now() - sent).toBeLessThan(15_000);
  expect(answer).toMatchObject({
    phase: 'Aborted',
    reason: 'Aborted',
    current: 'v1',
    lastAbortReason: 'error rate too high',
    paused: false,
  });
  expect(answer.target).toBeUndefined();
  expect(buildsOf(answer)).toEqual(['v2']);
  expect(argsOf(w, 'clearRampIf')).toEqual([['v2']]);
  expect(w.ramping).toBeUndefined();
  expect(w.current).toBe('v1');
  expect(argsOf(w, 'setCurrent')).toEqual([['v1']]);
  expect(await r.status()).toMatchObject({ phase: 'Aborted', current: 'v1' });
  const abortEvent = await event(w, 'Abort');
  expect(abortEvent.message).toBe('abort by alice: error rate too high');
  await event(w, 'Aborted');
});

test('2. abort racing promote {full}: either the abort wins or it is refused, and status and routing agree', async () => {
  const r = await withCurrentV1('abort-vs-promote');
  const w = r.world;
  await r.spec(desired(2, 'v2', progressive('10m')));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');
  w.setCurrentDelayMs = 1500; // setCurrent(v2), once called, stays in flight for 1.5 s

  const promote = r
    .handle()
    .startUpdate(messages.updates.promote, {
      args: [{ full: true, reason: 'looks good' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    })
    .then((h) => h.result())
    .catch((err: unknown) => err);
  const abort = await r.control('abort', { reason: 'second thoughts' }).then(
    (answer) => ({ answer }),
    (err: unknown) => ({
      refused: err instanceof WorkflowUpdateFailedError ? (err.cause?.message ?? err.message) : String(err),
    }),
  );
  await promote;

  let s: RolloutStatus;
  if ('answer' in abort) {
    // The abort came first: v2 never becomes current, its ramp is cleared.
    expect(abort.answer).toMatchObject({ phase: 'Aborted', current: 'v1', lastAbortReason: 'second thoughts' });
    s = await r.until('settled', (s) => s.phase === 'Aborted');
    expect(w.sequence(['setCurrent'], 'v2')).toEqual([]);
    expect(w.current).toBe('v1');
  } else {
    expect(abort.refused).toBe('abort refused: v2 is already being made current');
    s = await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
    expect(s.lastAbortReason).toBeUndefined();
    expect(w.current).toBe('v2');
  }
  // Whoever won, the status says what Temporal routes.
  expect(s.current).toBe(w.current);
  expect(s.target).toBeUndefined();
  expect(w.ramping).toBeUndefined();
});

test('2b. an abort while setCurrent of the target is in flight is refused with "already being made current"', async () => {
  const r = await withCurrentV1('abort-in-flight');
  const w = r.world;
  await r.spec(desired(2, 'v2', progressive('10m')));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');
  w.setCurrentDelayMs = 3000;
  await r.signal('promote', { full: true });
  await eventually('setCurrent(v2) under way', () => argsOf(w, 'setCurrent').some(([b]) => b === 'v2'));

  expect(await refusal(r.control('abort', { reason: 'too late' }))).toBe(
    'abort refused: v2 is already being made current',
  );
  const s = await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
  expect(s.lastAbortReason).toBeUndefined();
  expect(buildsOf(s)).toEqual(['v1']);
  expect(w.current).toBe('v2');
  expect(w.ramping).toBeUndefined();
  expect(w.callsOf('clearRampIf')).toEqual([]);
});

test('2c. abort after promote {full} while the final step waits on a pause: the abort wins, v2 never current', async () => {
  const r = await withCurrentV1('abort-after-full');
  const w = r.world;
  await r.spec(desired(2, 'v2', progressive('10m')));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');
  await r.control('pause', { reason: 'hold on' });
  // promote {full} ends the step, but making v2 current waits for the pause: the promote is taken, not yet done.
  await r.signal('promote', { full: true });
  await r.until('promoted fully, still paused', (s) => s.target?.promotedFully === true && s.phase === 'Paused');
  expect(w.sequence(['setCurrent'], 'v2')).toEqual([]);

  const answer = await r.control('abort', { reason: 'changed my mind' });
  expect(answer).toMatchObject({ phase: 'Aborted', current: 'v1', lastAbortReason: 'changed my mind', paused: false });
  expect(answer.target).toBeUndefined();
  expect(w.sequence(['setCurrent'], 'v2')).toEqual([]);
  expect(argsOf(w, 'clearRampIf')).toEqual([['v2']]);
  expect(w.current).toBe('v1');
  expect(w.ramping).toBeUndefined();
  expect((await r.status()).current).toBe(w.current);
});

test('3. pause while paused changes nothing: the update is refused, the signal records ControlRefused', async () => {
  const r = await withCurrentV1('pause-twice');
  const w = r.world;
  await r.spec(desired(2, 'v2', progressive('10m')));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');

  const paused = await r.control('pause', { reason: 'looking at dashboards', identity: 'alice' });
  expect(paused).toMatchObject({
    phase: 'Paused',
    reason: 'Paused',
    paused: true,
    current: 'v1',
    target: { buildId: 'v2' },
  });
  expect(paused.message).toMatch(/^Paused \(\S+ left in step 1\/1\): looking at dashboards$/);
  const historyBefore = await r.history();

  // As an update: refused by the validator, which leaves no trace.
  expect(await refusal(r.control('pause', { reason: 'another reason', identity: 'bob' }))).toBe(
    'pause refused: already paused: looking at dashboards',
  );
  let s = await r.status();
  expect(s).toMatchObject({ phase: 'Paused', reason: 'Paused', message: paused.message, paused: true });
  expect(s.refused?.count ?? 0).toBe(0);
  expect(await r.history()).toEqual(historyBefore);

  // As a signal: refused, said in an Event and in the history; nothing else changes.
  await r.signal('pause', { reason: 'another reason', identity: 'bob' });
  const refused = await event(w, 'ControlRefused');
  expect(refused.message).toBe('pause by bob refused: already paused: looking at dashboards');
  s = await r.until('the refusal counted', (s) => (s.refused?.count ?? 0) === 1);
  expect(s.refused?.last).toEqual({ control: 'pause', why: 'already paused: looking at dashboards' });
  expect(s).toMatchObject({ phase: 'Paused', reason: 'Paused', message: paused.message, paused: true, current: 'v1' });
  expect((await r.history()).at(-1)).toMatchObject({
    kind: 'refused',
    what: 'pause',
    who: 'bob',
    why: 'already paused: looking at dashboards',
  });
  // Still held by alice's pause: resume lifts it, with no second pause left behind.
  const resumed = await r.control('resume', { identity: 'alice' });
  expect(resumed).toMatchObject({ phase: 'Ramping', paused: false });
  expect(argsOf(w, 'setRamping')).toEqual([['v2', 50]]);
});

test('4. resume (update) continues the remaining pause of the step, not a new one; Paused says the time left', async () => {
  const r = await withCurrentV1('resume-left');
  const w = r.world;
  await r.spec(desired(2, 'v2', progressive('3s')));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');
  const ramp = w.callsOf('setRamping')[0]!;
  await sleep(1000); // a third of the step runs before the pause

  const pausedAt = Date.now();
  const paused = await r.control('pause', { reason: 'looking at dashboards' });
  expect(paused).toMatchObject({
    phase: 'Paused',
    reason: 'Paused',
    paused: true,
    current: 'v1',
    target: { buildId: 'v2', stage: 'routing', rampPercentage: 50, step: { index: 0 } },
  });
  const left = /^Paused \((\d)s left in step 1\/1\): looking at dashboards$/.exec(paused.message);
  expect(left).not.toBeNull();
  expect(Number(left![1])).toBeGreaterThanOrEqual(1);
  expect(Number(left![1])).toBeLessThanOrEqual(2);

  // Paused for longer than the step had left (≈2 s): nothing moves. (A fixed wait: it shows that nothing happens.)
  await sleep(2500);
  expect(await r.status()).toMatchObject({ phase: 'Paused', paused: true, current: 'v1' });
  expect(argsOf(w, 'setCurrent')).toEqual([['v1']]);

  const resumedAt = Date.now();
  const resumed = await r.control('resume', { reason: 'dashboards are fine' });
  expect(resumed.phase).toBe('Ramping');
  expect(resumed.paused).toBe(false);
  expect(resumed.message).toMatch(/\(resumed\)$/);
  await r.until('v2 current', (s) => s.current === 'v2' && s.phase === 'Ready');
  const promoted = w.callsOf('setCurrent')[1]!;
  // The ≈2 s left ran after resume: more than 1 s, less than a whole new 3 s step.
  expect(promoted.at - resumedAt).toBeGreaterThanOrEqual(1000);
  expect(promoted.at - resumedAt).toBeLessThan(3000);
  // The step's 3 s held in all, the paused time not counted.
  expect(promoted.at - ramp.at - (resumedAt - pausedAt)).toBeGreaterThanOrEqual(2800);
  expect(argsOf(w, 'setRamping')).toEqual([['v2', 50]]);
});

test('5. controls that make no sense now are refused, saying why', async () => {
  const r = await withCurrentV1('refusals');
  const w = r.world;
  expect(await refusal(r.control('resume'))).toBe('resume refused: not paused');
  expect(await refusal(r.control('promote'))).toBe('promote refused: no rollout is in flight');
  expect(await refusal(r.control('abort', { reason: 'nothing to abort' }))).toBe(
    'abort refused: no rollout is in flight',
  );

  // promote naming a build that a newer spec superseded.
  await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
  await r.until('v2 awaiting promotion', (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('v2 is ready'));
  await r.spec(desired(3, 'v3', { strategy: 'Manual' }));
  await r.until('v3 awaiting promotion', (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('v3 is ready'));
  expect(await refusal(r.control('promote', { buildId: 'v2' }))).toBe(
    'promote refused: it names build v2, but the target is v3',
  );

  // Refused updates leave no trace and change nothing.
  const s = await r.status();
  expect(s).toMatchObject({ phase: 'AwaitingPromotion', current: 'v1', target: { buildId: 'v3' } });
  expect(s.refused?.count ?? 0).toBe(0);
  expect((await r.history()).filter((h) => h.kind !== 'transition')).toEqual([]);
  expect(w.sequence(['setCurrent'], 'v3')).toEqual([]);
  expect(w.sequence(['setCurrent'], 'v2')).toEqual([]);
});

test('6. a new build while paused is not held by the old pause; a new generation of the aborted build rolls it out again', async () => {
  const r = await withCurrentV1('new-generation');
  const w = r.world;
  await r.spec(desired(2, 'v2', progressive('10m')));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');
  await r.control('pause', { reason: 'hold v2' });

  // A new build while v2's rollout is paused: v3 rolls out without a resume.
  await r.spec(desired(3, 'v3', { strategy: 'AllAtOnce' }));
  let s = await r.until('v3 current', (s) => s.phase === 'Ready' && s.current === 'v3');
  expect(s.paused).toBe(false);
  expect(argsOf(w, 'clearRampIf')).toEqual([['v2']]);
  expect(w.current).toBe('v3');
  expect(w.ramping).toBeUndefined();

  // Abort v4; a new generation of the same build v4 starts its rollout again.
  await r.spec(desired(4, 'v4', progressive('10m')));
  await r.until('v4 ramping', (s) => s.phase === 'Ramping' && s.target?.buildId === 'v4');
  s = await r.control('abort', { reason: 'v4 looks wrong' });
  expect(s).toMatchObject({ phase: 'Aborted', current: 'v3', lastAbortReason: 'v4 looks wrong' });
  expect(w.ramping).toBeUndefined();
  await r.spec(desired(5, 'v4', { strategy: 'AllAtOnce' }));
  s = await r.until('v4 current', (s) => s.phase === 'Ready' && s.current === 'v4');
  expect(s).toMatchObject({ generation: 5, reason: 'RolloutComplete' });
  expect(s.lastAbortReason).toBeUndefined();
  expect(buildsOf(s)).not.toContain('v4');
  expect(w.current).toBe('v4');
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v3'], ['v4']]);
});

// ---- history ----

/** Above the history of one run that rolls out v1 and v2 and takes three controls (about 150 events). */
const historyLimitAfterControls = 400;

test('7. history lists controls (who, why) among transitions, survives ContinueAsNew, and stays bounded', async () => {
  // A history limit the rollouts and controls below stay under; resync signals then push the run past it.
  // (Updates racing a ContinueAsNew are test 7b.)
  const r = await withCurrentV1('history', { historyLimit: historyLimitAfterControls });
  const w = r.world;
  const firstRun = (await r.handle().describe()).runId;
  await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
  await r.until('v2 awaiting promotion', (s) => s.phase === 'AwaitingPromotion');
  await r.control('pause', { identity: 'alice', reason: 'checking dashboards' });
  await r.control('resume', { identity: 'bob', reason: 'dashboards fine' });
  await r.control('promote', { identity: 'carol', reason: 'ship it' });
  await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
  expect((await r.handle().describe()).runId).toBe(firstRun);

  const controls = [
    { kind: 'control', what: 'pause', who: 'alice', why: 'checking dashboards', buildId: 'v2' },
    { kind: 'control', what: 'resume', who: 'bob', why: 'dashboards fine', buildId: 'v2' },
    { kind: 'control', what: 'promote', who: 'carol', why: 'ship it', buildId: 'v2' },
  ];
  const history = await eventually('the RolloutComplete of v2 in the history', async () => {
    const h = await r.history();
    return h.some((e) => e.kind === 'transition' && e.what === 'RolloutComplete' && e.why.includes('v2 is current'))
      ? h
      : undefined;
  });
  expect(history.filter((e) => e.kind === 'control')).toEqual(controls.map((c) => expect.objectContaining(c)));
  expect(history.filter((e) => e.kind === 'transition').length).toBeGreaterThan(3);
  expect(history.every((e) => e.kind !== 'transition' || e.who === 'glidepath')).toBe(true);
  // In order: the pause before its Paused transition, the promote before v2's RolloutComplete.
  const at = (p: (e: HistoryEntry) => boolean) => history.findIndex(p);
  expect(at((e) => e.what === 'pause')).toBeLessThan(at((e) => e.kind === 'transition' && e.what === 'Paused'));
  expect(at((e) => e.what === 'promote')).toBeLessThan(at((e) => e.what === 'RolloutComplete' && e.why.includes('v2')));
  expect(Number.isNaN(Date.parse(history[0]!.at))).toBe(false);

  // Across ContinueAsNew: the new run answers the same history.
  await pushedPastLimit(r);
  expect((await r.history()).slice(0, history.length)).toEqual(history);

  // Bounded: 120 refused controls later, 100 entries, the newest last.
  for (let i = 0; i < 120; i++) await r.signal('resume', { identity: `spammer-${i}` });
  const bounded = await eventually('the last refusal in the history', async () => {
    const h = await r.history();
    return h.at(-1)?.who === 'spammer-119' ? h : undefined;
  });
  expect(bounded.length).toBeLessThanOrEqual(100);
  expect(bounded.length).toBe(100);
  expect(bounded.filter((e) => e.kind === 'control')).toEqual([]); // the oldest went first
  expect(bounded.at(-1)).toMatchObject({ kind: 'refused', what: 'resume', who: 'spammer-119', why: 'not paused' });
  expect((await r.status()).current).toBe('v2');
  expect(w.current).toBe('v2');
});

test('7b. controls sent as updates while the run keeps continuing as new are never cut off, taken once, and take effect', async () => {
  // A tiny history limit: the run continues as new every few controls, so some arrive while it does.
  const r = await withCurrentV1('updates-vs-can', { historyLimit: 40 });
  await r.spec(desired(2, 'v2', { strategy: 'Manual' }));
  await r.until('v2 awaiting promotion', (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('v2 is ready'));
  const runs = new Set<string>();
  for (let i = 0; i < 10; i++) {
    runs.add((await r.handle().describe()).runId);
    // Answered with the control taken; the phase shows it in this run, or (when the answer came as the run
    // continued as new) in the next one.
    const paused = await r.control('pause', { identity: 'alice', reason: `look ${i}` });
    expect(paused.paused).toBe(true);
    await r.until(`Paused ${i}`, (s) => s.phase === 'Paused' && s.paused);
    const resumed = await r.control('resume', { identity: 'alice' });
    expect(resumed.paused).toBe(false);
    await r.until(`AwaitingPromotion ${i}`, (s) => s.phase === 'AwaitingPromotion' && !s.paused);
  }
  runs.add((await r.handle().describe()).runId);
  expect(runs.size).toBeGreaterThan(1); // it did continue as new meanwhile
  await r.control('promote', { identity: 'alice' });
  await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
  expect((await r.history()).filter((e) => e.kind === 'control').map((e) => e.what)).toEqual([
    ...Array.from({ length: 10 }, () => ['pause', 'resume']).flat(),
    'promote',
  ]);
  // The replay fixture: a run that took updates in the Manual wait and continued as new from it.
  let waited: string | undefined;
  for (let run: string | undefined = [...runs][0]; run && !waited;) {
    const events = (await rig.client.workflow.getHandle(r.handle().workflowId, run).fetchHistory()).events ?? [];
    const next = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
    if (next && events.some((e) => e.workflowExecutionUpdateAcceptedEventAttributes)) waited = run;
    run = next;
  }
  expect(waited).toBeDefined();
  await keepHistory(r.world, 'updates-continue-as-new', waited);
}, 240_000);

// ---- rollback and retry ----

test('8. rollback after v2 became current: v1 current at once (no ramp), routing differs from the spec; retry rolls v2 out again', async () => {
  const r = await withCurrentV1('rollback', {}, withSunset(desired(1, 'v1'), keepRunning));
  const w = r.world;
  await r.spec(withSunset(desired(2, 'v2', progressive('1s')), keepRunning));
  await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
  // v1 drained: scaledownDelay (1h) keeps its pods running.
  w.versions.set('v1', 'Drained');
  await event(w, 'VersionDrained');
  expect(w.deployments.get('v1')?.replicas).toBe(2);

  const before = w.calls.length;
  const answer = await r.control('rollback', { identity: 'oncall', reason: 'checkout errors' });
  expect(answer).toMatchObject({ current: 'v1', phase: 'Ready', reason: 'RolledBack' });
  const after = w.calls.slice(before);
  expect(after.filter((c) => c.name === 'setCurrent').map((c) => c.args)).toEqual([['v1']]);
  expect(after.filter((c) => c.name === 'setRamping')).toEqual([]);
  expect(w.current).toBe('v1');
  expect(w.ramping).toBeUndefined();
  expect(answer.message).toContain('checkout errors');
  const s = await r.status();
  expect(s).toMatchObject({ phase: 'Ready', reason: 'RolledBack', current: 'v1', generation: 2 });
  expect(s.target).toBeUndefined();
  expect(buildsOf(s)).toEqual(['v2']);
  // The resource says that routing differs from the spec.
  const written = await eventually('a status with routing', () => {
    const last = w.statuses.at(-1);
    return last?.routing ? last : undefined;
  });
  expect(written.routing).toMatchObject({ currentBuildID: 'v1', specBuildID: 'v2' });
  expect(written.currentVersion?.buildID).toBe('v1');
  expect((await r.history()).filter((e) => e.kind === 'control')).toEqual([
    expect.objectContaining({ what: 'rollback', who: 'oncall', why: 'checkout errors' }),
  ]);

  // retry: v2 is rolled out again through its strategy (a ramp step, then current).
  const retried = w.calls.length;
  await r.control('retry', { identity: 'oncall', reason: 'fixed the config' });
  const again = await r.until('v2 current again', (s) => s.phase === 'Ready' && s.current === 'v2');
  expect(again.reason).toBe('RolloutComplete');
  const rollout = w.calls.slice(retried).filter((c) => c.name === 'setRamping' || c.name === 'setCurrent');
  expect(rollout.map((c) => [c.name, ...c.args])).toEqual([
    ['setRamping', 'v2', 50],
    ['setCurrent', 'v2'],
  ]);
  expect(rollout[1]!.at - rollout[0]!.at).toBeGreaterThanOrEqual(1000);
  expect(w.current).toBe('v2');
  expect(again.lastAbortReason).toBeUndefined();
  await eventually(
    'a status without routing',
    () => w.statuses.at(-1)?.routing === undefined && w.statuses.at(-1)?.currentVersion?.buildID === 'v2',
  );
  await keepHistory(r.world, 'rollback-retry');
});

test('8b. rollback onto a build scaled to 0 whose pods still stop: its Deployment is applied again and available before routing goes back', async () => {
  const r = await withCurrentV1('rollback-scaled', {}, withSunset(desired(1, 'v1'), keepRunning));
  const w = r.world;
  await r.spec(withSunset(desired(2, 'v2'), keepRunning));
  await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
  // A scale-down landed (perhaps by a task that was lost): 0 replicas, two pods still stopping and answering.
  const v1 = w.deployments.get('v1')!;
  const replicas = v1.replicas;
  Object.assign(v1, { replicas: 0, stopping: replicas });

  const before = w.calls.length;
  const answer = await r.control('rollback', { identity: 'oncall', reason: 'checkout errors' });
  expect(answer).toMatchObject({ current: 'v1', reason: 'RolledBack' });
  const after = w.calls.slice(before).map((c) => c.name);
  const applied = after.indexOf('ensureVersionedDeployment');
  expect(applied).toBeGreaterThanOrEqual(0);
  expect(applied).toBeLessThan(after.indexOf('setCurrent'));
  expect(w.deployments.get('v1')?.replicas).toBe(replicas);
});

test('9. the spec back on v1 within rollbackWindow: v1 current at once, no gate, no ramp, even under Manual with a gate', async () => {
  const gate = { workflowType: 'smokeTest' };
  const r = await withCurrentV1('spec-back', {}, withSunset(desired(1, 'v1'), keepRunning));
  const w = r.world;
  await r.spec(withSunset(desired(2, 'v2'), keepRunning));
  await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');

  const before = w.calls.length;
  await r.spec(withSunset(desired(3, 'v1', { strategy: 'Manual', gate }), keepRunning));
  const s = await r.until('v1 current again', (s) => s.current === 'v1' && s.phase === 'Ready');
  expect(s).toMatchObject({ reason: 'RolledBack', generation: 3 });
  expect(s.target).toBeUndefined();
  const after = w.calls.slice(before);
  expect(after.filter((c) => c.name === 'setCurrent').map((c) => c.args)).toEqual([['v1']]);
  expect(after.filter((c) => ['setRamping', 'runGate', 'awaitVersionRegistered'].includes(c.name))).toEqual([]);
  expect(w.current).toBe('v1');
  expect(w.ramping).toBeUndefined();
  expect(buildsOf(s)).toEqual(['v2']);
});

test('9b. the spec back on v1 beyond rollbackWindow is an ordinary rollout (gate, then Manual waits for promote)', async () => {
  const gate = { workflowType: 'smokeTest' };
  const r = await withCurrentV1(
    'spec-back-late',
    {},
    withSunset(desired(1, 'v1', { strategy: 'AllAtOnce', rollbackWindow: '1s' }), keepRunning),
  );
  const w = r.world;
  await r.spec(withSunset(desired(2, 'v2', { strategy: 'AllAtOnce', rollbackWindow: '1s' }), keepRunning));
  await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
  const madeCurrent = w.callsOf('setCurrent').at(-1)!.at;
  // Past the 1 s window since v1 stopped being current (a fixed wait: the window is wall-clock time).
  await sleep(Math.max(0, madeCurrent + 1500 - Date.now()));

  await r.spec(withSunset(desired(3, 'v1', { strategy: 'Manual', gate, rollbackWindow: '1s' }), keepRunning));
  const s = await r.until(
    'v1 awaiting promotion',
    (s) => s.phase === 'AwaitingPromotion' && s.target?.buildId === 'v1',
  );
  expect(s.current).toBe('v2');
  expect(argsOf(w, 'runGate').map((a) => a[0])).toEqual(['v1']);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2']]);
  expect(w.current).toBe('v2');

  await r.control('promote', { identity: 'alice' });
  const done = await r.until('v1 current', (s) => s.phase === 'Ready' && s.current === 'v1');
  expect(done.reason).toBe('RolloutComplete');
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2'], ['v1']]);
});

describe('10. retry after a failed gate', () => {
  const gate = { workflowType: 'smokeTest' };

  test('with policy Abort runs the rollout (and the gate) again without a spec change', async () => {
    const r = await withCurrentV1('retry-abort');
    const w = r.world;
    w.gateResults = [{ passed: false, message: 'smoke test failed' }];
    await r.spec(desired(2, 'v2', { strategy: 'AllAtOnce', gate, gateFailurePolicy: 'Abort' }));
    const aborted = await r.until('phase Aborted', (s) => s.phase === 'Aborted');
    expect(aborted).toMatchObject({ reason: 'GateFailed', current: 'v1' });
    expect(w.callsOf('runGate')).toHaveLength(1);

    const answer = await r.control('retry', { identity: 'alice', reason: 'flaky smoke test' });
    expect(answer.phase).not.toBe('Aborted');
    const s = await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
    expect(s).toMatchObject({ generation: 2, reason: 'RolloutComplete' });
    expect(s.lastAbortReason).toBeUndefined();
    expect(w.callsOf('runGate')).toHaveLength(2);
    expect(w.calls.findIndex((c) => c.name === 'setCurrent' && c.args[0] === 'v2')).toBeGreaterThan(
      w.calls.indexOf(w.callsOf('runGate')[1]!),
    );
    expect(w.current).toBe('v2');
  });

  test('with policy Pause runs the gate again', async () => {
    const r = await withCurrentV1('retry-pause');
    const w = r.world;
    w.gateResults = [{ passed: false, message: 'smoke test failed' }];
    await r.spec(desired(2, 'v2', { strategy: 'AllAtOnce', gate, gateFailurePolicy: 'Pause' }));
    const paused = await r.until('phase Paused', (s) => s.phase === 'Paused');
    expect(paused).toMatchObject({ reason: 'GateFailed', paused: true, target: { buildId: 'v2' } });
    expect(w.callsOf('runGate')).toHaveLength(1);

    await r.control('retry', { identity: 'alice' });
    const s = await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
    expect(s.generation).toBe(2);
    expect(w.callsOf('runGate')).toHaveLength(2);
    expect(w.calls.findIndex((c) => c.name === 'setCurrent' && c.args[0] === 'v2')).toBeGreaterThan(
      w.calls.indexOf(w.callsOf('runGate')[1]!),
    );
  });
});

// ---- manager identity, analysis, sunset, movePinned ----

test('11. while someone else holds the manager identity the rollout waits (Paused, ManagerIdentityHeld), then goes on', async () => {
  const r = await withCurrentV1('manager');
  const w = r.world;
  w.managerHeldBy = 'alice';
  await r.spec(desired(2, 'v2'));
  const s = await r.until('held', (s) => s.reason === 'ManagerIdentityHeld');
  expect(s).toMatchObject({
    phase: 'Paused',
    reason: 'ManagerIdentityHeld',
    paused: true,
    managerHeldBy: 'alice',
    current: 'v1',
  });
  expect(s.message).toContain('alice');
  // Routing unchanged: the write, which claims on the way (no claim activity), was refused.
  expect([w.current, w.ramping]).toEqual(['v1', undefined]);
  expect(w.callsOf('claimManager')).toEqual([]);
  expect(argsOf(w, 'setCurrent')).toEqual(expect.arrayContaining([['v2']]));

  w.managerHeldBy = undefined; // handed back within a few seconds (the checks back off 1 s, 2 s, 4 s …)
  const done = await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
  expect(done.paused).toBe(false);
  expect(done.managerHeldBy).toBeUndefined();
  expect(w.current).toBe('v2');
  await event(w, 'ManagerIdentityHandedBack');
  expect(reasons(w)).toContain('ManagerIdentityHeld');
  expect(w.managerOurs).toBe(true); // claimed again by the write after the hand-back
  await keepHistory(r.world, 'manager-identity');
});

test('11b. an abort while someone else holds the manager identity before the final routing change takes effect at once: v2 never current', async () => {
  const r = await withCurrentV1('manager-abort');
  const w = r.world;
  w.managerHeldBy = 'alice';
  await r.spec(desired(2, 'v2'));
  await r.until('held', (s) => s.reason === 'ManagerIdentityHeld');
  // The wait for the hand-back is not the final routing change in flight: the abort is taken, not refused.
  const answer = await r.control('abort', { reason: 'not now', identity: 'bob' });
  expect(answer).toMatchObject({ phase: 'Aborted', current: 'v1', lastAbortReason: 'not now' });
  // Handed back: a resync round later, still nothing routed to v2.
  w.managerHeldBy = undefined;
  const resyncs = w.callsOf('removeStrayDeployments').length;
  await r.handle().signal(messages.resync);
  await eventually('the resync to be done', () => w.callsOf('removeStrayDeployments').length > resyncs);
  expect([w.current, w.ramping]).toEqual(['v1', undefined]);
  expect(argsOf(w, 'setCurrent').filter(([b]) => b === 'v2').length).toBeGreaterThan(0); // (refused while held)
  expect((await r.status()).phase).toBe('Aborted');
});

describe('12. analysis at the end of a step', () => {
  const analysis = { maxFailurePercentage: 5, minExecutions: 10, maxWait: '2s' };

  test('failing (20 of 50) aborts the rollout with gateFailurePolicy Abort', async () => {
    const r = await withCurrentV1('analysis-fail');
    const w = r.world;
    w.outcomes.set('v2', { closed: 50, failed: 20 });
    await r.spec(desired(2, 'v2', { ...progressive('1s', 10), analysis, gateFailurePolicy: 'Abort' }));
    const s = await r.until('phase Aborted', (s) => s.phase === 'Aborted');
    expect(s).toMatchObject({ reason: 'AnalysisFailed', current: 'v1' });
    expect(s.lastAbortReason).toContain('20 of 50 failed');
    expect(s.lastAnalysis).toContain('20 of 50 failed');
    expect(s.lastAnalysis).toMatch(/^step 1\/1: /);
    expect(argsOf(w, 'countOutcomes')).toContainEqual(['v2']);
    expect(w.callsOf('countOutcomes')[0]!.at - w.callsOf('setRamping')[0]!.at).toBeGreaterThanOrEqual(1000); // at the end of the step
    expect(argsOf(w, 'clearRampIf')).toEqual([['v2']]);
    expect(w.ramping).toBeUndefined();
    expect(w.current).toBe('v1');
    expect(w.sequence(['setCurrent'], 'v2')).toEqual([]);
    const written = await eventually('lastAnalysis on the resource', () =>
      [...w.statuses].reverse().find((st) => st.lastAnalysis),
    );
    expect(written.lastAnalysis).toContain('20 of 50 failed');
    await keepHistory(r.world, 'analysis-abort');
  });

  test('healthy (0 of 50) promotes v2 to current', async () => {
    const r = await withCurrentV1('analysis-pass');
    const w = r.world;
    w.outcomes.set('v2', { closed: 50, failed: 0 });
    await r.spec(desired(2, 'v2', { ...progressive('1s', 10), analysis, gateFailurePolicy: 'Abort' }));
    const s = await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
    expect(s.lastAbortReason).toBeUndefined();
    expect(s.lastAnalysis).toContain('0 of 50 failed');
    expect(argsOf(w, 'countOutcomes')).toContainEqual(['v2']);
    await event(w, 'AnalysisPassed');
    expect(w.current).toBe('v2');
  });

  test('too few executions with inconclusivePolicy Pause: Paused (AnalysisInconclusive) after maxWait; resume goes on', async () => {
    const r = await withCurrentV1('analysis-inconclusive');
    const w = r.world;
    w.outcomes.set('v2', { closed: 3, failed: 0 });
    await r.spec(
      desired(2, 'v2', { ...progressive('1s', 10), analysis: { ...analysis, inconclusivePolicy: 'Pause' } }),
    );
    const s = await r.until('phase Paused', (s) => s.phase === 'Paused');
    expect(s).toMatchObject({ reason: 'AnalysisInconclusive', paused: true, current: 'v1', target: { buildId: 'v2' } });
    expect(s.lastAnalysis).toContain('fewer than 10 closed executions');
    // It waited maxWait (2 s) for more executions before pausing.
    const counts = w.callsOf('countOutcomes');
    expect(counts.length).toBeGreaterThanOrEqual(2);
    expect(counts.at(-1)!.at - counts[0]!.at).toBeGreaterThanOrEqual(1900);
    expect(w.sequence(['setCurrent'], 'v2')).toEqual([]);

    const answer = await r.control('resume', { identity: 'alice', reason: 'low traffic is expected' });
    expect(answer.phase).not.toBe('Paused');
    const done = await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
    expect(done.paused).toBe(false);
    expect(w.current).toBe('v2');
    await keepHistory(r.world, 'analysis-inconclusive-resume');
  });
});

test('13. sunset.maxDrainDuration with onMaxDrain Terminate acts on what is still pinned after it', async () => {
  const r = await withCurrentV1('max-drain');
  const w = r.world;
  w.openExecutions.set('v1', 3);
  await r.spec(
    withSunset(desired(2, 'v2'), { ...keepRunning, maxDrainDuration: '1s', onMaxDrain: { action: 'Terminate' } }),
  );
  await r.until('v2 current', (s) => s.phase === 'Ready' && s.current === 'v2');
  const routedAway = w.callsOf('setCurrent').at(-1)!.at;

  const acted = await eventually('actOnPinned for v1', () => w.callsOf('actOnPinned')[0]);
  expect(acted.args).toEqual(['v1', 'Terminate']);
  expect(acted.at - routedAway).toBeGreaterThanOrEqual(1000);
  expect(acted.at - routedAway).toBeLessThan(10_000);
  const reached = await event(w, 'MaxDrainReached');
  expect(reached.message).toContain('3 executions still pinned to v1');
  const handled = await event(w, 'PinnedExecutionsHandled');
  expect(handled.message).toContain('3 of 3');
  expect(w.callsOf('actOnPinned')).toHaveLength(1);
  expect(w.openExecutions.get('v1')).toBe(0);
  expect((await r.history()).some((e) => e.what === 'PinnedExecutionsHandled' && e.buildId === 'v1')).toBe(true);
});

test('14. rollout.onAbort.movePinned: an abort moves the executions pinned to the target onto current', async () => {
  const r = await withCurrentV1('move-pinned');
  const w = r.world;
  await r.spec(desired(2, 'v2', { ...progressive('10m'), onAbort: { movePinned: true } }));
  await r.until('step 1 ramping', (s) => s.phase === 'Ramping');
  w.openExecutions.set('v2', 4);

  const answer = await r.control('abort', { reason: 'bad build' });
  expect(answer).toMatchObject({ phase: 'Aborted', current: 'v1' });
  expect(argsOf(w, 'movePinned')).toEqual([['v2', 'v1']]);
  expect(w.moved).toEqual([{ from: 'v2', to: 'v1', count: 4 }]);
  expect(w.calls.findIndex((c) => c.name === 'clearRampIf')).toBeLessThan(
    w.calls.findIndex((c) => c.name === 'movePinned'),
  );
  const moved = await event(w, 'PinnedExecutionsMoved');
  expect(moved.message).toBe(
    'moved 4 of 4 executions pinned to v2 onto v1, with a one-time override (then they keep the behaviour their workers report)',
  );
  expect(w.ramping).toBeUndefined();
});

test('15. the same requestId twice is one control', async () => {
  const r = await withCurrentV1('request-id');
  const w = r.world;
  const steps = [10, 50, 90].map((rampPercentage) => ({ rampPercentage }));
  await r.spec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  await r.until(
    'step 1 awaiting promotion',
    (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('step 1/3'),
  );

  await r.control('promote', { requestId: 'req-1', identity: 'alice' });
  await r.until(
    'step 2 awaiting promotion',
    (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('step 2/3'),
  );
  const again = await r.control('promote', { requestId: 'req-1', identity: 'alice' });
  expect(again.target).toMatchObject({ buildId: 'v2', rampPercentage: 50 });
  await r.signal('promote', { requestId: 'req-1', identity: 'alice' });
  // Nothing moves: a short fixed wait, since what is checked is that no step follows. Then a resync (handled
  // after the signal) shows the signal was seen.
  const resyncs = w.callsOf('reconcileDeployments').length;
  await r.handle().signal(messages.resync);
  await eventually('a resync', () => w.callsOf('reconcileDeployments').length > resyncs);
  await sleep(500);
  const s = await r.status();
  expect(s.phase).toBe('AwaitingPromotion');
  expect(s.message.startsWith('step 2/3')).toBe(true);
  expect(argsOf(w, 'setRamping')).toEqual([
    ['v2', 10],
    ['v2', 50],
  ]);
  expect((await r.history()).filter((e) => e.kind === 'control')).toHaveLength(1);

  // Another requestId is another control.
  await r.control('promote', { requestId: 'req-2', identity: 'alice' });
  await r.until(
    'step 3 awaiting promotion',
    (s) => s.phase === 'AwaitingPromotion' && s.message.startsWith('step 3/3'),
  );
  expect(argsOf(w, 'setRamping').at(-1)).toEqual(['v2', 90]);
});
