/**
 * Local routing writes against the real dev server (activities played by the fake world): a rollout's ramps
 * run as local activities, inside the workflow task that decided them (a set-current stays an activity), and one
 * that fails there goes again as an activity without losing the step.
 */
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { activityTypes, localActivityType, scheduledActivityType } from '../../scripts/history.js';
import { eventually } from '../harness/eventually.js';
import { desired, fakeRigForFile } from './fake-world.js';
import { keepHistory } from './fixtures.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const rig = fakeRigForFile('local-routing', { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 });
const routing = ['setRamping', 'setCurrent'];

async function start() {
  const owner = { namespace: 'shop', name: `local-routing-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  const handle = await rig.start(owner);
  const history = async (): Promise<HistoryEvent[]> => (await handle.fetchHistory()).events ?? [];
  return { world, handle, history };
}

const steps = [
  { rampPercentage: 25, pauseDuration: '1s' },
  { rampPercentage: 50, pauseDuration: '1s' },
];

test('a Progressive rollout’s ramps run inside their workflow tasks (local activities); its set-currents are activities', async () => {
  const { world, history } = await start();
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  await world.applySpec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually(
    'v2 current and Ready',
    () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2',
    30_000,
  );

  expect(world.sequence(routing)).toEqual(['setCurrent', 'setRamping', 'setRamping', 'setCurrent']);
  const events = await history();
  expect(events.map(localActivityType).filter((n) => n && routing.includes(n))).toEqual(['setRamping', 'setRamping']);
  expect(events.map(scheduledActivityType).filter((n) => n && routing.includes(n))).toEqual([
    'setCurrent',
    'setCurrent',
  ]);
  // The first ramp's report is written in its task; a step's ramp (the second) is recorded by a task that writes
  // none, and its Ramping report comes in the task woken by the 1 ms timer that task started.
  const taskOf = (e: HistoryEvent) =>
    String(
      e.markerRecordedEventAttributes?.workflowTaskCompletedEventId ??
        e.timerStartedEventAttributes?.workflowTaskCompletedEventId,
    );
  const summaryOf = (e: HistoryEvent) =>
    e.userMetadata?.summary ? defaultPayloadConverter.fromPayload<string>(e.userMetadata.summary) : undefined;
  const [firstRamp, stepRamp] = events.filter((e) => localActivityType(e) === 'setRamping');
  const reports = events.filter((e) => localActivityType(e) === 'report');
  expect(reports.some((e) => taskOf(e) === taskOf(firstRamp!))).toBe(true);
  expect(reports.filter((e) => taskOf(e) === taskOf(stepRamp!))).toEqual([]);
  const timer = events.find((e) => summaryOf(e) === 'report in the next task')!;
  expect(taskOf(timer)).toBe(taskOf(stepRamp!));
  const fired = events.find((e) => String(e.timerFiredEventAttributes?.startedEventId) === String(timer.eventId))!;
  const stepReport = reports.find((e) => Number(e.eventId) > Number(stepRamp!.eventId))!;
  expect(Number(stepReport.eventId)).toBeGreaterThan(Number(fired.eventId));
  expect(summaryOf(stepReport)).toMatch(/^write the status: Ramping/);
  await keepHistory(world, 'local-routing-progressive');
});

test('a ramp that fails inside the workflow task goes again as an activity: the step is made once, and the rollout goes on', async () => {
  const { world, history } = await start();
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  const local: boolean[] = [];
  world.failWith.set('setRamping', ([, percentage]) => {
    const { isLocal } = Context.current().info;
    if (percentage === 50) local.push(isLocal);
    return percentage === 50 && isLocal ? new Error('unavailable (local)') : undefined;
  });
  await world.applySpec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually(
    'v2 current and Ready',
    () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2',
    30_000,
  );

  // One local attempt, then the activity.
  expect(local).toEqual([true, false]);
  const events = await history();
  expect(events.map(scheduledActivityType).filter((n) => n && routing.includes(n))).toEqual([
    'setCurrent',
    'setRamping',
    'setCurrent',
  ]);
  expect(
    activityTypes(events)
      .filter((n) => routing.includes(n))
      .slice(-2),
  ).toEqual(['setRamping', 'setCurrent']);
  expect(world.ramping).toBeUndefined();
  expect(world.current).toBe('v2');
  // The fallback is at once, not a retry of the step: no status said the ramp was being retried.
  expect(world.statuses.map((s) => s.message ?? '').filter((m) => m.includes('retrying'))).toEqual([]);
});
