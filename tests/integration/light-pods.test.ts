/**
 * A light pod (simulator/light-pod.ts) against the real dev server: it registers its version with Temporal the way a
 * versioned worker does, completes a workflow pinned to that version, and stops at once with its poll outstanding.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { LightPod, LightPodConnections } from '../../simulator/light-pod.js';
import { eventually } from '../harness/eventually.js';

const { temporal } = proto; // a CommonJS module: no named exports under ESM
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
let connection: Connection;
let client: Client;
const connections = new LightPodConnections(2);

beforeAll(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
  client = new Client({ connection, namespace });
});

afterAll(async () => {
  await connections.close();
  await connection?.close();
});

test('a light pod registers its version, completes a pinned workflow, and stops at once', async () => {
  const id = randomUUID().slice(0, 8);
  const deploymentName = `light/${id}`;
  const buildId = `b-${id}`;
  const taskQueue = `light-${id}`;
  const pod = new LightPod(
    {
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
      TEMPORAL_NAMESPACE: namespace,
      TEMPORAL_DEPLOYMENT_NAME: deploymentName,
      TEMPORAL_WORKER_BUILD_ID: buildId,
      EXAMPLE_TASK_QUEUE: taskQueue,
    },
    connections,
    (m) => console.log(`${new Date().toISOString()} ${m}`),
  );
  try {
    // Registered: the server lists the version with the pod's workflow task queue.
    const queues = await eventually(`${deploymentName}:${buildId} registered`, async () => {
      const res = await connection.workflowService.describeWorkerDeploymentVersion({
        namespace,
        deploymentVersion: { deploymentName, buildId },
      });
      return res.versionTaskQueues?.length ? res.versionTaskQueues : undefined;
    });
    expect(queues.map((q) => [q.name, q.type])).toEqual([
      [taskQueue, temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW],
    ]);

    // Any workflow type will do: the pod completes every workflow task with "complete".
    const handle = await client.workflow.start('tinyWorkflow', {
      taskQueue,
      workflowId: `light-${id}`,
      versioningOverride: { pinnedTo: { deploymentName, buildId } },
    });
    await expect(handle.result()).resolves.toBeUndefined();
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    // It ran on the pod's version, and the pod said PINNED.
    expect(description.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion).toMatchObject({
      deploymentName,
      buildId,
    });
    expect(description.raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(
      temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
    );
    expect(pod.completed).toBe(1);
  } finally {
    // A poll is outstanding now (the long poll lasts a minute): stop cancels it instead of waiting it out.
    const started = Date.now();
    await pod.stop();
    expect(Date.now() - started).toBeLessThan(2000);
  }
});
