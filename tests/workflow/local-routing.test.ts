/**
 * Patch `routing-local-v12` against the real dev server (activities played by the fake world): a rollout's
 * routing writes run as local activities, inside the workflow task that decided them, and one that fails there
 * goes again as an activity without losing the step.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { temporal } from '@temporalio/proto';
import { activityTypes, localActivityType, scheduledActivityType } from '../../scripts/history.js';
import { routingDeferred } from '../../api/names.js';
import * as messages from '../../workflows/messages.js';
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

test('a Progressive rollout’s routing writes run inside their workflow tasks: local activities, none scheduled', async () => {
  const { world, handle, history } = await start();
  await handle.signal(messages.specChanged, desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  await handle.signal(messages.specChanged, desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually('v2 current and Ready', () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2', 30_000);

  expect(world.sequence(routing)).toEqual(['setCurrent', 'setRamping', 'setRamping', 'setCurrent']);
  const events = await history();
  expect(events.map(localActivityType).filter((n) => n && routing.includes(n))).toEqual(['setCurrent', 'setRamping', 'setRamping', 'setCurrent']);
  expect(events.map(scheduledActivityType).filter((n) => n && routing.includes(n))).toEqual([]);
  await keepHistory(rig.client, handle.workflowId, 'routing-local-v12-progressive');
});

test('a ramp that fails inside the workflow task goes again as an activity: the step is made once, and the rollout goes on', async () => {
  const { world, handle, history } = await start();
  await handle.signal(messages.specChanged, desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  const local: boolean[] = [];
  world.failWith.set('setRamping', ([, percentage]) => {
    const { isLocal } = Context.current().info;
    if (percentage === 50) local.push(isLocal);
    return percentage === 50 && isLocal ? new Error('unavailable (local)') : undefined;
  });
  await handle.signal(messages.specChanged, desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually('v2 current and Ready', () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2', 30_000);

  // Two local attempts, then the activity; the set-current after it is local again.
  expect(local).toEqual([true, true, false]);
  const events = await history();
  expect(events.map(scheduledActivityType).filter((n) => n && routing.includes(n))).toEqual(['setRamping']);
  expect(activityTypes(events).filter((n) => routing.includes(n)).slice(-2)).toEqual(['setRamping', 'setCurrent']);
  expect(world.ramping).toBeUndefined();
  expect(world.current).toBe('v2');
  // The fallback is at once, not a retry of the step: no status said the ramp was being retried.
  expect(world.statuses.map((s) => s.message ?? '').filter((m) => m.includes('retrying'))).toEqual([]);
});

test('a ramp deferred by a busy budget goes as an activity at once, and the next write is local again', async () => {
  const { world, handle, history } = await start();
  await handle.signal(messages.specChanged, desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  const local: boolean[] = [];
  world.failWith.set('setRamping', ([, percentage]) => {
    const { isLocal } = Context.current().info;
    if (percentage === 25) local.push(isLocal);
    // What the activity throws while the controller's Temporal budget would make the call wait (not retried locally).
    return percentage === 25 && isLocal ? ApplicationFailure.create({ type: routingDeferred, message: 'the budget is busy' }) : undefined;
  });
  await handle.signal(messages.specChanged, desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually('v2 current and Ready', () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2', 30_000);

  expect(local).toEqual([true, false]);
  const events = await history();
  expect(events.map(scheduledActivityType).filter((n) => n && routing.includes(n))).toEqual(['setRamping']);
  // The ramp after it and the set-current: inside their tasks again.
  expect(activityTypes(events).filter((n) => routing.includes(n)).slice(-3)).toEqual(['setRamping', 'setRamping', 'setCurrent']);
  expect(events.filter((e) => localActivityType(e) === 'setRamping' && !e.markerRecordedEventAttributes?.failure)).toHaveLength(1);
  expect(world.current).toBe('v2');
});
