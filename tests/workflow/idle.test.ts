/**
 * An idle rollout costs little: its resync round reads the resource (an activity, as every read), and then its
 * repairs (are its Deployments there, any strays) and their report run as local activities inside the one workflow
 * task the read's result brings. RolloutWorkflow on the real dev server, its activities played by ./fake-world.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import proto, { type temporal } from '@temporalio/proto';
import { rolloutWorkflowId, versionedDeploymentName } from '../../api/names.js';
import { activityTypes } from '../../scripts/history.js';
import * as messages from '../../workflows/messages.js';
import type { RolloutWorkflow } from '../../workflows/rollout-workflow.js';
import type { Timings } from '../../api/timings.js';
import { FakeWorlds, desired, startFakeRig, type FakeRig, testInstallation } from './fake-world.js';
import { eventually } from '../harness/eventually.js';
import { keepHistory, summaryOf } from './fixtures.js';
import { withCurrentV1 } from './driver.js';

const taskQueue = `idle-test-${randomUUID().slice(0, 8)}`;
const timings: Partial<Timings> = { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 };
const { EventType } = proto.temporal.api.enums.v1;

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

/**
 * Nothing in flight: the last workflow task completed with no task after it, and every activity it scheduled is
 * closed (a local report's marker or a timer may follow the last task's completion: they are its commands).
 */
function settled(events: temporal.api.history.v1.IHistoryEvent[]): boolean {
  const taskEvents = new Set([
    EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED,
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  ]);
  const lastTask = events.filter((x) => taskEvents.has(x.eventType ?? 0)).at(-1);
  if (lastTask?.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) return false;
  const closed = new Set(
    events.flatMap((x) => {
      const a =
        x.activityTaskCompletedEventAttributes ??
        x.activityTaskFailedEventAttributes ??
        x.activityTaskTimedOutEventAttributes ??
        x.activityTaskCanceledEventAttributes;
      return a ? [String(a.scheduledEventId)] : [];
    }),
  );
  return events.every((x) => !x.activityTaskScheduledEventAttributes || closed.has(String(x.eventId)));
}

test('a resync round is one workflow task: its read, its repairs and their report run inside it', async () => {
  const owner = { namespace: 'shop', name: `idle-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const workflowId = rolloutWorkflowId(testInstallation, owner.namespace, owner.name);
  const world = worlds.create(owner, workflowId, timings);
  const handle = client.workflow.getHandle<typeof RolloutWorkflow>(workflowId);
  await client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', { taskQueue, workflowId, args: [{ owner }] });
  workflowIds.push(workflowId);
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 to be current', async () => {
    const s = await handle.query(messages.status);
    return s.phase === 'Ready' && s.current === 'v1' ? s : undefined;
  });
  const events = async () => (await handle.fetchHistory()).events ?? [];
  // Quiet first (the rollout's last status write and Event are done), so what follows is the resync's alone.
  await eventually('the rollout to settle', async () => {
    const e = await events();
    return settled(e) ? e : undefined;
  });
  const before = (await events()).length;

  // Someone deleted the Deployment by hand: the round finds it missing and recreates it.
  world.deployments.delete('v1');
  const rounds = world.callsOf('removeStrayDeployments').length;
  await handle.signal(messages.resync);
  await eventually('the resync round', () => world.callsOf('removeStrayDeployments').length > rounds);
  expect(world.deployments.has('v1')).toBe(true);
  await eventually('the round and its Event to be recorded', async () => {
    const e = (await events()).slice(before);
    return world.events.some((x) => x.reason === 'DeploymentRecreated') &&
      settled(e) &&
      e.some((x) => x.eventType === EventType.EVENT_TYPE_MARKER_RECORDED)
      ? e
      : undefined;
  });

  const round = (await events()).slice(before);
  // No activity: the read, the two repairs and the report run inside the one task the signal brought.
  expect(round.filter((e) => e.activityTaskScheduledEventAttributes)).toEqual([]);
  expect(activityTypes(round)).toEqual(['readResource', 'reconcileDeployments', 'removeStrayDeployments', 'report']);
  // All four recorded by one workflow task's completion (a wake-up after it, such as the recreated Deployment's, is
  // a task of its own).
  const recordedBy = round.flatMap((e) =>
    e.markerRecordedEventAttributes ? [String(e.markerRecordedEventAttributes.workflowTaskCompletedEventId)] : [],
  );
  expect(recordedBy).toHaveLength(4);
  expect(new Set(recordedBy).size).toBe(1);

  await keepHistory(world, 'resync');
});

test('a stray Deployment with pods (an apply whose task was lost): scaled to 0 at the second resync that finds it, deleted at the third', async () => {
  const r = await withCurrentV1(rig, 'stray', timings);
  const { world, owner } = r;
  const handle = r.handle();
  const liveReplicas = world.deployments.get('v1')?.replicas;
  const name = versionedDeploymentName(owner.name, 'orphan');
  world.deployments.set('orphan', { name, replicas: 2, generation: 1, available: true });
  const round = async () => {
    const rounds = world.callsOf('removeStrayDeployments').length;
    await handle.signal(messages.resync);
    await eventually('a resync round', () => world.callsOf('removeStrayDeployments').length > rounds);
  };
  await round();
  expect(world.deployments.get('orphan')?.replicas).toBe(2); // seen once: it may be an apply just made
  await round();
  expect(world.deployments.get('orphan')?.replicas).toBe(0);
  await eventually('the Warning Event', () =>
    world.events.some((e) => e.reason === 'StrayDeploymentScaledDown' && e.message.includes(name)),
  );
  await round();
  expect(world.deployments.has('orphan')).toBe(false);
  expect(world.deployments.get('v1')?.replicas).toBe(liveReplicas); // the live one untouched
});

test('a resync in an apiserver brownout: the local repair fails, then the call alone retries it as activities, one attempt each', async () => {
  const r = await withCurrentV1(rig, 'brownout', timings);
  const { world } = r;
  const handle = r.handle();
  world.deployments.delete('v1');
  world.brownout = 3; // the local attempt and the next two fail
  const before = world.callsOf('reconcileDeployments').length;
  await handle.signal(messages.resync);
  await eventually('v1 recreated', () => world.deployments.has('v1'));
  expect(world.callsOf('reconcileDeployments').length - before).toBe(4); // one local attempt, then three activities
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.filter(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'reconcileDeployments',
  );
  expect(scheduled.map((e) => e.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts)).toEqual([1, 1, 1]);
  // The activity made at once after the local failure; the two after it, each after a durable backoff.
  const backoffs = events.filter((e) => e.timerStartedEventAttributes && /retry reconcile/.test(summaryOf(e) ?? ''));
  expect(backoffs).toHaveLength(2);
});
