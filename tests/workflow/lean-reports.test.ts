/**
 * Reports inside the workflow task, against the real dev server (activities played by the fake world): every report
 * runs as a local activity, whatever else its task schedules; a local report that fails goes again as an activity,
 * and the status arrives once the apiserver answers.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import proto, { type temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import type { Report } from '../../activities/resource-writes.js';
import { eventually } from '../harness/eventually.js';
import { desired, fakeRigForFile } from './fake-world.js';
import { keepHistory, summaryOf } from './fixtures.js';

const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));
const rig = fakeRigForFile('lean-reports', { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 });

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const taskCompleted = (e: HistoryEvent) =>
  e.eventType === proto.temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED;
const isLocalReport = (e: HistoryEvent) =>
  e.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
  (summaryOf(e) ?? '').startsWith('write the status');
const isReportActivity = (e: HistoryEvent) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'report';

async function start() {
  const owner = { namespace: 'shop', name: `lean-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  const handle = await rig.start(owner);
  const history = async () => (await handle.fetchHistory()).events ?? [];
  return { world, handle, history };
}

test('a Progressive rollout writes every report inside its workflow tasks', async () => {
  const { world, history } = await start();
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  const steps = [{ rampPercentage: 25, pauseDuration: '1s' }];
  await world.applySpec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually(
    'v2 current and Ready',
    () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2',
    30_000,
  );

  // v2's Ready report is recorded as its task completes, a moment after the world has it.
  const events = await eventually('v2 Ready report in the history', async () => {
    const all = await history();
    const readyReports = all.filter(
      (e) => isLocalReport(e) && /^write the status: Ready, with Event RolloutComplete/.test(summaryOf(e) ?? ''),
    );
    return readyReports.length >= 2 || all.some(isReportActivity) ? all : undefined;
  });
  const local = events.filter(isLocalReport);
  // Beside a set-current (an activity) too: no report is an activity while none failed.
  expect(events.filter(isReportActivity)).toEqual([]);
  expect(local.map(summaryOf)).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/^write the status: Ramping/),
      expect.stringMatching(/^write the status: Ready/),
    ]),
  );
  // Nothing recorded twice, and the rollout's Events are there.
  const ids = world.events.map((e) => e.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(world.events.map((e) => e.reason)).toEqual(expect.arrayContaining(['Ramping', 'RolloutComplete']));
});

test('a local report that fails goes again as an activity, and the status arrives once the apiserver answers', async () => {
  const { world, handle, history } = await start();
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  const before = (await history()).length;

  // The apiserver goes away for the step's Ramping report.
  const unreachable = new Error('kube-apiserver unreachable: connect ECONNREFUSED');
  world.failWith.set('report', ([report]) =>
    (report as Report).status?.phase === 'Ramping' ? unreachable : undefined,
  );
  await world.applySpec(
    desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 25, pauseDuration: '1h' }] }),
  );
  // The step's Ramping report rides with its timer only: local, failing, then again as an activity.
  const failedLocal = (e: HistoryEvent) => isLocalReport(e) && !!e.markerRecordedEventAttributes?.failure;
  await eventually(
    'a report scheduled as an activity after a local attempt failed',
    async () => {
      const after = (await history()).slice(before);
      const failed = after.findIndex(failedLocal);
      return failed >= 0 && after.slice(failed).some(isReportActivity);
    },
    60_000,
  );
  world.failWith.delete('report');
  await eventually('the status says Ramping', () => world.statuses.at(-1)?.phase === 'Ramping', 60_000);

  const after = (await history()).slice(before);
  const failed = after.findIndex(failedLocal);
  expect(summaryOf(after[failed]!)).toMatch(/^write the status: Ramping/);
  expect(after.slice(failed).some(isReportActivity)).toBe(true);
  expect(await handle.describe().then((d) => d.status.name)).toBe('RUNNING');
  await keepHistory(world, 'local-report-failed');
});

// While a local activity outlasts 80 % of the task timeout the worker heartbeats the task, and a task that took a
// signal and sent no command can report another history length in replay: nothing chooses by it, and this shape
// must replay the same.
test('a local report that outlasts workflow task heartbeats, with a signal meanwhile, replays the same', async () => {
  const owner = { namespace: 'shop', name: `lean-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  // A short workflow task timeout: a local activity past 80 % of it makes the worker heartbeat the task.
  const handle = await rig.start(owner, { workflowTaskTimeout: '1s' });
  const history = async () => (await handle.fetchHistory()).events ?? [];
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');

  // The step's Ramping report (local: its task schedules only the step's timer) is held.
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding = false;
  world.reportHold = (report) => {
    if (report.status?.phase !== 'Ramping') return undefined;
    holding = true;
    return held;
  };
  await world.applySpec(
    desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 25, pauseDuration: '1h' }] }),
  );
  await eventually('the Ramping report held', () => holding, 30_000);
  // The new spec arrives while it is held: the server hands it over when the worker heartbeats the task, and the
  // flow schedules its work in that task; the report resolves in a later one, once that task heartbeated too.
  const isSignal = (e: HistoryEvent) => !!e.workflowExecutionSignaledEventAttributes;
  const signals = (await history()).filter(isSignal).length;
  await world.applySpec(desired(3, 'v3'));
  await eventually(
    'a task took the new spec and heartbeated',
    async () => {
      const events = await history();
      const signalled = events.filter(isSignal)[signals];
      return !!signalled && events.some((e) => taskCompleted(e) && Number(e.eventId) > Number(signalled.eventId));
    },
    30_000,
  );
  release();
  await eventually(
    'v3 current and Ready',
    () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v3',
    60_000,
  );

  const events = await history();
  expect(events.some((e) => isLocalReport(e) && summaryOf(e)?.startsWith('write the status: Ramping'))).toBe(true);
  // Replayed from its history, as a worker that lost its cache does (under its own workflow ID): the same commands.
  await Worker.runReplayHistory({ workflowsPath }, { events }, handle.workflowId);
  expect(await handle.describe().then((d) => d.status.name)).toBe('RUNNING');
  await keepHistory(world, 'local-report-heartbeats');
});
