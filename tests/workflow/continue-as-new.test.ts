/**
 * RolloutWorkflow continues as new at an idle point once its history passes `timings.historyLimit` (or the
 * server suggests it), carrying its whole state. Here the limit is tiny, so a couple of rollouts and the
 * drainage polling of a sunset make it continue as new again and again: what it knew (current version,
 * generation, a sunset in progress) must survive each new run. Same setup as rollout-workflow.test.ts: a
 * real dev server, activities stubbed by the in-memory world of ./fake-world.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import * as messages from '../../workflows/messages.js';
import { activityTypes } from '../../scripts/history.js';
import { currentBuildKey } from '../../workflows/search-attributes.js';
import type { RolloutStatus } from '../../workflows/state.js';
import { desired, startFakeRig, type FakeRig, routingCalls, type FakeWorld } from './fake-world.js';
import { eventually, sleep } from '../harness/eventually.js';
import { keepHistory, summaryOf } from './fixtures.js';
import { startRollout as start, type Rollout } from './driver.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const taskQueue = `continue-as-new-test-${randomUUID().slice(0, 8)}`;
/** A history limit a single rollout (or a few drainage checks) goes past. */
const timings = { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100, historyLimit: 40 };

let rig: FakeRig;
let client: Client;

beforeAll(async () => {
  rig = await startFakeRig(taskQueue);
  ({ client } = rig);
});

afterAll(async () => {
  await rig?.stop();
});

// ---- helpers ----

const startRollout = (label: string, limits = timings) => start(rig, label, limits);

/** Grows the history with resync signals (an idle run adds no events of its own) until it continues as new. */
async function pushedPastLimit(r: Rollout): Promise<string> {
  const before = await r.runId();
  return eventually(
    `a ContinueAsNew after run ${before}`,
    async () => {
      const now = await r.runId();
      if (now !== before) return now;
      await r.handle().signal(messages.resync);
      return undefined;
    },
    30_000,
    200,
  );
}

/** v1 then v2 (AllAtOnce, generations 1 and 2), v2 current. */
async function rolledToV2(label: string): Promise<Rollout> {
  const r = await startRollout(label);
  await r.spec(desired(1, 'v1'));
  await r.until('v1 to be current', (s) => s.phase === 'Ready' && s.current === 'v1');
  await r.spec(desired(2, 'v2'));
  await r.until('v2 to be current', (s) => s.phase === 'Ready' && s.current === 'v2');
  return r;
}

const argsOf = (w: FakeWorld, name: string) => w.callsOf(name).map((c) => c.args);
/** How many runs of the chain began after the run `runId` (each continued as new from the one before). */
async function runsAfter(r: Rollout, runId: string): Promise<number> {
  let n = 0;
  for (let run = runId; ; n++) {
    const { events } = await client.workflow.getHandle(r.handle().workflowId, run).fetchHistory();
    const next = events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
    if (!next) return n;
    run = next;
  }
}
/** No activity called for a moment but the drainage checks of a sunset: what was under way is done. */
const quiet = (w: FakeWorld) => {
  const count = () => w.calls.filter((c) => c.name !== 'versionStatus').length;
  return eventually('the world to be quiet', async () => {
    const n = count();
    await sleep(700);
    return count() === n;
  });
};
const buildsOf = (s: RolloutStatus) => s.deprecated.map((v) => v.buildId);

// ---- behaviours ----

test('1. past its history limit it continues as new, and the new run knows what the old one did', async () => {
  const r = await rolledToV2('can-carry');
  const w = r.world;

  // The first run ended by continuing as new.
  const first = client.workflow.getHandle(r.handle().workflowId, r.firstRunId);
  await eventually(
    'the first run to continue as new',
    async () => (await first.describe()).status.name === 'CONTINUED_AS_NEW',
  );
  const history = await first.fetchHistory();
  const last = history.events?.at(-1);
  expect(last?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
  expect(last?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId).toBeTruthy();
  expect(history.events!.length).toBeGreaterThan(timings.historyLimit); // not before the limit

  // And again, now that v2 is current (v1's drainage checks fill the history): the latest run still knows it.
  const runAfterV2 = await r.runId();
  expect(runAfterV2).not.toBe(r.firstRunId);
  await pushedPastLimit(r);
  const s = await r.until('v1 draining, as the new run reads it', (s) => s.deprecated[0]?.status === 'Draining');
  expect(s).toMatchObject({ phase: 'Ready', reason: 'RolloutComplete', current: 'v2', generation: 2, paused: false });
  expect(s.target).toBeUndefined();
  expect(s.deprecated).toEqual([expect.objectContaining({ buildId: 'v1', status: 'Draining' })]);
  expect((await r.handle().describe()).status.name).toBe('RUNNING');
  // The search attributes follow the chain.
  expect((await r.handle().describe()).typedSearchAttributes.get(currentBuildKey)).toBe('v2');

  // Nothing was rolled out again by a new run: each version was applied, registered and made current once.
  expect(argsOf(w, 'ensureVersionedDeployment')).toEqual([
    ['v1', 1],
    ['v2', 2],
  ]);
  expect(argsOf(w, 'awaitVersionRegistered')).toEqual([['v1'], ['v2']]);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2']]);
  expect(w.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'])).toEqual([]);
  // In every run, reports past the limit are activities, never local: a signal arriving while the run
  // continues as new fails that task, and on the replay that follows a local report's marker would resolve before
  // the signal, so the run would continue without it (seen under load: a new spec lost).
  const lateLocalReports: string[] = [];
  for (let run: string | undefined = r.firstRunId; run;) {
    const events: HistoryEvent[] =
      (await client.workflow.getHandle(r.handle().workflowId, run).fetchHistory()).events ?? [];
    for (const m of events.filter(
      (e) =>
        e.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
        (summaryOf(e) ?? '').startsWith('write the status'),
    )) {
      const taskStarted = events
        .filter((e) => e.workflowTaskStartedEventAttributes && Number(e.eventId) < Number(m.eventId))
        .at(-1)!;
      if (Number(taskStarted.eventId) > timings.historyLimit)
        lateLocalReports.push(`${run} event ${m.eventId}: ${summaryOf(m)}`);
    }
    run = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  expect(lateLocalReports).toEqual([]);
  await keepHistory(w, 'continue-as-new', r.firstRunId);
});

test('2. a new spec after continuing as new rolls out, and a sunset in progress survives ContinueAsNew', async () => {
  const r = await rolledToV2('can-sunset');
  const w = r.world;
  // v1's sunset is done with before v3 comes, so what follows is about v2 alone.
  w.versions.set('v1', 'Drained');
  await r.until('v1 to be deleted', (s) => s.deprecated.length === 0);
  // A run after the one that did v2.
  await r.continuedPast(r.firstRunId);

  await r.spec(desired(3, 'v3'));
  let s = await r.until('v3 to be current', (s) => s.phase === 'Ready' && s.current === 'v3');
  expect(s.generation).toBe(3);
  expect(buildsOf(s)).toEqual(['v2']);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2'], ['v3']]);

  // v2 is draining; its drainage checks carry on across runs, never scaling it down early.
  const deprecatedIn = await r.runId();
  const continued = await pushedPastLimit(r);
  await eventually('a drainage check of v2 in a later run', async () => {
    const checks = w.callsOf('versionStatus').filter((c) => c.args[0] === 'v2').length;
    await sleep(500);
    return w.callsOf('versionStatus').filter((c) => c.args[0] === 'v2').length > checks;
  });
  // Its answer folded in (the check counted above may still be in flight when the count moves).
  s = await r.until('v2 draining in the later run', (st) =>
    st.deprecated.some((v) => v.buildId === 'v2' && v.status === 'Draining'),
  );
  expect(s.deprecated).toEqual([expect.objectContaining({ buildId: 'v2', status: 'Draining' })]);
  expect(w.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'], 'v2')).toEqual([]);
  expect(w.deployments.get('v2')?.replicas).toBe(2);

  // Drained: the run that is current now (not the one that deprecated it) scales it down and deletes it.
  expect(continued).not.toBe(deprecatedIn);
  const drainedAt = Date.now();
  w.versions.set('v2', 'Drained');
  s = await r.until('v2 to be deleted', (s) => s.deprecated.length === 0);
  expect(s).toMatchObject({ phase: 'Ready', current: 'v3', generation: 3 });
  expect(w.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'], 'v2')).toEqual([
    'scaleDeployment',
    'deleteDeployment',
    'deleteVersion',
  ]);
  expect(argsOf(w, 'scaleDeployment').filter((a) => a[0] === 'v2')).toEqual([['v2', 0]]);
  const del = w.callsOf('deleteDeployment').find((c) => c.args[0] === 'v2')!;
  expect(del.at - drainedAt).toBeGreaterThanOrEqual(1000); // deleteDelay, counted from drained
  expect(w.versions.has('v2')).toBe(false);
  expect([...w.deployments.keys()]).toEqual(['v3']);
  expect(w.sequence(['scaleDeployment', 'deleteDeployment'], 'v3')).toEqual([]);
});

test('3. a duplicate hint sent after continuing as new asks for no read; a read of the same generation changes nothing', async () => {
  const r = await rolledToV2('can-dedupe');
  const w = r.world;
  await pushedPastLimit(r);
  // The new run has read its owner (its first task's read: the run exists a moment before that task runs), and
  // nothing more is under way (a resync sent as it continued may have come to the new run).
  const runBefore = await eventually('the new run to have read its owner', async () => {
    const run = await r.runId();
    const events = (await client.workflow.getHandle(r.handle().workflowId, run).fetchHistory()).events ?? [];
    return activityTypes(events).includes('readResource') ? run : undefined;
  });
  await quiet(w);

  const before = w.calls.length;
  const watched = ['ensureVersionedDeployment', 'awaitVersionRegistered', 'describeRouting', ...routingCalls];
  const resyncs = w.callsOf('reconcileDeployments').length;
  await w.wake(); // a duplicate: the resourceVersion the runs read
  await w.wake();
  // Signals to one workflow ID are handled in order, across runs: once the resync after them has run, they were seen.
  await r.handle().signal(messages.resync);
  await eventually('a resync', () => w.callsOf('reconcileDeployments').length > resyncs);
  await sleep(300);
  // The resync's own read, and the first read of each run that began since (the limit is tiny): none for the hints.
  expect(w.calls.slice(before).filter((c) => c.name === 'readResource')).toHaveLength(
    1 + (await runsAfter(r, runBefore)),
  );

  // Another resourceVersion with the same generation and another build (what a read could never take as new).
  const reads = w.callsOf('readResource').length;
  w.setSpec(desired(2, 'v9'));
  await w.wake();
  await eventually('the read', () => w.callsOf('readResource').length > reads);
  await sleep(300);

  const s = await r.status();
  expect(s).toMatchObject({ phase: 'Ready', current: 'v2', generation: 2 });
  expect(s.target).toBeUndefined();
  expect(buildsOf(s)).toEqual(['v1']);
  expect(w.calls.slice(before).filter((c) => watched.includes(c.name))).toEqual([]);
  expect(w.deployments.has('v9')).toBe(false);
  expect(argsOf(w, 'ensureVersionedDeployment')).toEqual([
    ['v1', 1],
    ['v2', 2],
  ]);
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2']]);
});

test('4. a spec change that arrives around a ContinueAsNew is acted on, not dropped', async () => {
  const r = await startRollout('can-reapply');
  const w = r.world;
  await r.spec(desired(1, 'v1'));
  await r.until('v1 to be current', (s) => s.phase === 'Ready' && s.current === 'v1');
  // v1's first drainage check (once v2 is current) stays in flight: the run continues as new meanwhile (the
  // check is cancelled and made again by the next run).
  let release!: () => void;
  w.versionStatusHold = new Promise((resolve) => (release = resolve));
  await r.spec(desired(2, 'v2'));
  await eventually('v2 to be current, and said so', () =>
    w.events.some((e) => e.reason === 'RolloutComplete' && e.message.startsWith('v2')),
  );
  await eventually('a drainage check of v1 in flight', () => w.versionStatusInFlight === 1);
  expect(w.callsOf('versionStatus').at(-1)?.args[0]).toBe('v1');
  const waiting = await r.handle().describe();
  expect(waiting.status.name).toBe('RUNNING');

  // A new connection (same generation, same build): every live Deployment is re-applied.
  const applied = argsOf(w, 'ensureVersionedDeployment').length;
  await r.spec({ ...desired(2, 'v2'), connectionVersion: '2' });
  release();
  await pushedPastLimit(r);
  await eventually(
    'the live Deployments to be re-applied',
    () => argsOf(w, 'ensureVersionedDeployment').length > applied,
  );
  expect(argsOf(w, 'ensureVersionedDeployment').slice(applied)).toEqual(expect.arrayContaining([['v2', 2]]));
  expect(await r.status()).toMatchObject({ phase: 'Ready', current: 'v2', generation: 2 });
  expect(argsOf(w, 'setCurrent')).toEqual([['v1'], ['v2']]);
});

test('5. an abort while the run waits for its sunsets to stop, before continuing as new: no sunset starts in that run; the next clears the ramp', async () => {
  // A limit the rollouts below stay under: the test decides when the run continues as new.
  const r = await startRollout('can-abort', { ...timings, historyLimit: 400 });
  const w = r.world;
  await r.spec(desired(1, 'v0'));
  await r.until('v0 to be current', (s) => s.phase === 'Ready' && s.current === 'v0');
  // v0's sunset: drained at once, its scale-down held in flight. A cancelled Kubernetes write is waited for, so a
  // run that continues as new waits for it.
  let release!: () => void;
  w.scaleHold = new Promise((resolve) => (release = resolve));
  w.statusWhenRoutedAway = 'Drained';
  await r.spec(desired(2, 'v1'));
  await r.until('v1 to be current', (s) => s.phase === 'Ready' && s.current === 'v1');
  await eventually('the scale-down of v0 in flight', () => argsOf(w, 'scaleDeployment').some(([b]) => b === 'v0'));
  await r.spec(desired(3, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 25, pauseDuration: '1h' }] }));
  await eventually('v2 ramping', () => w.ramping === 'v2');

  // Pushed past the limit: the run cancels v0's sunset and waits for the scale-down to end.
  const run = await r.runId();
  const history = async () => (await client.workflow.getHandle(r.handle().workflowId, run).fetchHistory()).events ?? [];
  const scaleCancelled = (events: HistoryEvent[]) => {
    const scheduled = events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'scaleDeployment')
      .map((e) => String(e.eventId));
    return events.some((e) =>
      scheduled.includes(String(e.activityTaskCancelRequestedEventAttributes?.scheduledEventId ?? '')),
    );
  };
  await eventually(
    'the run to wait for its sunsets to stop',
    async () => {
      if (scaleCancelled(await history())) return true;
      await r.handle().signal(messages.resync);
      return false;
    },
    60_000,
    200,
  );

  // The abort retires v2 meanwhile. Once its signal's task completed, whatever that task began is in the history.
  await r.handle().signal(messages.abort, { reason: 'error rate', identity: 'alice' });
  const signalled = await eventually('the abort to be handled', async () => {
    const events = await history();
    const at = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === messages.abort.name);
    return at >= 0 && events.slice(at).some((e) => e.workflowTaskCompletedEventAttributes)
      ? events.slice(at)
      : undefined;
  });
  // Only reports (the Abort Event) follow: no drainage check, count, timer or write of a sunset; the run still waits.
  const begun = signalled.flatMap((e) =>
    e.timerStartedEventAttributes
      ? ['timer']
      : e.activityTaskScheduledEventAttributes
        ? [e.activityTaskScheduledEventAttributes.activityType?.name ?? '?']
        : [],
  );
  expect(begun.filter((name) => name !== 'report')).toEqual([]);
  expect(w.callsOf('versionStatus').filter((c) => c.args[0] === 'v2')).toEqual([]);
  expect((await client.workflow.getHandle(r.handle().workflowId, run).describe()).status.name).toBe('RUNNING');

  // The scale-down ends: the run continues as new, and the next clears v2's ramp, says Aborted and sunsets v2.
  release();
  await r.continuedPast(run);
  const s = await r.until(
    'Aborted, v2 sunset',
    (st) => st.phase === 'Aborted' && st.deprecated.some((v) => v.buildId === 'v2'),
  );
  expect(s).toMatchObject({ current: 'v1' });
  expect(s.target).toBeUndefined();
  await eventually('the ramp cleared', () => w.ramping === undefined && w.rampPercentage === 0);
  expect(argsOf(w, 'clearRampIf')).toContainEqual(['v2']);
  expect((await client.workflow.getHandle(r.handle().workflowId, run).describe()).status.name).toBe('CONTINUED_AS_NEW');
});
