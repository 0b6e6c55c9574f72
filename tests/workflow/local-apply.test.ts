/**
 * Patch `apply-v10` against the real dev server (activities played by the fake world): the calls between a new
 * target and its Deployment (the adoption's reads, the routing read, the apply) run inside the workflow task that
 * learns of the spec, as local activities, so nothing waits for another task or an activity’s dispatch; one that
 * fails there goes again as an activity.
 */
import { randomUUID } from 'node:crypto';
import proto, { type temporal } from '@temporalio/proto';
import * as messages from '../../workflows/messages.js';
import { eventually } from '../harness/eventually.js';
import { localActivityType, scheduledActivityType } from '../../scripts/history.js';
import { desired, fakeRigForFile } from './fake-world.js';
import { keepHistory } from './fixtures.js';

const rig = fakeRigForFile('local-apply', { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 });

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const { EventType } = proto.temporal.api.enums.v1;

/** The history cut at each completed workflow task: the commands of task n are the events of `tasks[n]`. */
function commandsByTask(events: HistoryEvent[]): HistoryEvent[][] {
  const tasks: HistoryEvent[][] = [];
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) tasks.push([]);
    else tasks.at(-1)?.push(e);
  }
  return tasks;
}

const localIn = (task: HistoryEvent[]) => task.map(localActivityType).filter((n): n is string => !!n);

test('a new resource’s first workflow task reads, checks for adoption and applies its Deployment itself: no activity before the Deployment', async () => {
  const owner = { namespace: 'shop', name: `local-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  const handle = await rig.start(owner, {}, desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v1');

  const events = (await handle.fetchHistory()).events ?? [];
  const tasks = commandsByTask(events);
  // The first task's commands: the adoption's two reads and the apply, as local activities (and nothing scheduled).
  expect(localIn(tasks[0]!)).toEqual(expect.arrayContaining(['describeRouting', 'adoptForeignDeployments', 'ensureVersionedDeployment']));
  const applied = events.findIndex((e) => localActivityType(e) === 'ensureVersionedDeployment');
  expect(events.slice(0, applied).map(scheduledActivityType).filter(Boolean)).toEqual([]);
  // One routing read before the apply: the adoption's, used again for the apply.
  expect(localIn(tasks[0]!).filter((n) => n === 'describeRouting')).toHaveLength(1);
  await keepHistory(rig.client, handle.workflowId, 'apply-v10-first-task');
});

test('a new spec’s Deployment is applied in the workflow task that receives it, beside its routing read', async () => {
  const owner = { namespace: 'shop', name: `local-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  const handle = await rig.start(owner, {}, desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  await handle.signal(messages.specChanged, desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 25, pauseDuration: '1s' }] }));
  await eventually('v2 current and Ready', () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2', 30_000);
  expect(world.callsOf('ensureVersionedDeployment').map((c) => c.args[0])).toEqual(['v1', 'v2']);

  const events = (await handle.fetchHistory()).events ?? [];
  const signalled = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'specChanged' && Number(e.eventId) > 2);
  const tasks = commandsByTask(events.slice(signalled));
  // The task that took v2's spec: its routing read and its apply, local (no adoption check: v1 is current).
  expect(localIn(tasks[0]!)).toEqual(expect.arrayContaining(['describeRouting', 'ensureVersionedDeployment']));
  expect(localIn(tasks[0]!)).not.toContain('adoptForeignDeployments');
  expect(events.map(scheduledActivityType)).not.toContain('ensureVersionedDeployment');
});

test('an apply that fails inside the workflow task goes again as an activity: the task is not held through an outage', async () => {
  const owner = { namespace: 'shop', name: `local-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  // The apiserver refuses the two quick attempts inside the task, then answers.
  let attempts = 0;
  world.failWith.set('ensureVersionedDeployment', () => (++attempts <= 2 ? new Error('kube-apiserver unreachable: connect ECONNREFUSED') : undefined));
  const handle = await rig.start(owner, {}, desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v1');

  const events = (await handle.fetchHistory()).events ?? [];
  const failedLocal = events.findIndex((e) => localActivityType(e) === 'ensureVersionedDeployment' && !!e.markerRecordedEventAttributes?.failure);
  const asActivity = events.findIndex((e) => scheduledActivityType(e) === 'ensureVersionedDeployment');
  expect(failedLocal).toBeGreaterThanOrEqual(0);
  expect(asActivity).toBeGreaterThan(failedLocal);
  expect(world.callsOf('ensureVersionedDeployment')).toHaveLength(3);
  // No workflow task failed or timed out on the way.
  const { EVENT_TYPE_WORKFLOW_TASK_FAILED, EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT } = EventType;
  expect(events.filter((e) => e.eventType === EVENT_TYPE_WORKFLOW_TASK_FAILED || e.eventType === EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT)).toEqual([]);
  await keepHistory(rig.client, handle.workflowId, 'apply-v10-local-failed');
});
