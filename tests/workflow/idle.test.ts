/**
 * An idle rollout costs almost nothing: its resync round (does the resource exist, are its Deployments there,
 * any strays) runs as local activities inside the one workflow task its timer or signal brings, so a round is
 * two Temporal calls instead of three activities and their tasks (`patched('lean-v4')`). RolloutWorkflow on the
 * real dev server, its activities played by ./fake-world.ts.
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { rolloutWorkflowId } from '../../api/names.js';
import * as messages from '../../workflows/messages.js';
import type { RolloutWorkflow } from '../../workflows/rollout.js';
import type { Timings } from '../../workflows/state.js';
import { FakeWorlds, desired, startFakeRig, type FakeRig } from './fake-world.js';
import { eventually } from '../harness/eventually.js';
import { keepHistory } from './fixtures.js';

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

test('a resync round is one workflow task: its reads and its repair run as local activities', async () => {
  const owner = { namespace: 'shop', name: `idle-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const workflowId = rolloutWorkflowId(owner.namespace, owner.name);
  const world = worlds.create(owner, workflowId);
  const handle = client.workflow.getHandle<typeof RolloutWorkflow>(workflowId);
  await client.workflow.start<typeof RolloutWorkflow>('RolloutWorkflow', { taskQueue, workflowId, args: [{ owner, timings }] });
  workflowIds.push(workflowId);
  await handle.signal(messages.specChanged, desired(1, 'v1'));
  await eventually('v1 to be current', async () => {
    const s = await handle.query(messages.status);
    return s.phase === 'Ready' && s.current === 'v1' ? s : undefined;
  });
  const events = async () => (await handle.fetchHistory()).events ?? [];
  // Quiet first (the rollout's last status write and Event are done), so what follows is the resync's alone.
  await eventually('the rollout to settle', async () => {
    const e = await events();
    return e.at(-1)?.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED ? e : undefined;
  });
  const before = (await events()).length;

  // Someone deleted the Deployment by hand: the round finds it missing and recreates it.
  world.deployments.delete('v1');
  const rounds = world.callsOf('deleteStrayDeployments').length;
  await handle.signal(messages.resync);
  await eventually('the resync round', () => world.callsOf('deleteStrayDeployments').length > rounds);
  expect(world.deployments.has('v1')).toBe(true);
  await eventually('the round to be recorded', async () => {
    const e = (await events()).slice(before);
    return e.filter((x) => x.eventType === EventType.EVENT_TYPE_MARKER_RECORDED).length >= 3 ? e : undefined;
  });

  const round = (await events()).slice(before);
  const scheduled = round.filter((e) => e.activityTaskScheduledEventAttributes).map((e) => e.activityTaskScheduledEventAttributes!.activityType?.name);
  expect(scheduled).not.toContain('resourceExists');
  expect(scheduled).not.toContain('ensureDeploymentsExist');
  expect(scheduled).not.toContain('deleteStrayDeployments');
  // All three in the one task the signal brought (the recreation's Event is an activity of its own: news is rare).
  const markers = round.flatMap((e, i) => (e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED ? [i] : []));
  expect(markers).toHaveLength(3);
  const tasksUntilLastMarker = round.slice(0, markers.at(-1)).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
  expect(tasksUntilLastMarker).toHaveLength(1);

  await keepHistory(client, workflowId, 'lean-v4-resync');
});
