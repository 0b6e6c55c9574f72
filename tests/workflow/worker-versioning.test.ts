/**
 * Proof that the dev server Glidepath tests against does Worker Versioning as Glidepath relies on: a real
 * versioned worker registers its version, ramping and current routing work, and a PINNED execution stays on
 * the version it started on after another becomes current.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Worker } from '@temporalio/worker';
import { createExampleWorker } from '../../examples/worker/worker.js';
import { eventually } from '../harness/eventually.js';

const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const deploymentName = `proof/${randomUUID().slice(0, 8)}`;
const taskQueue = `proof-${randomUUID().slice(0, 8)}`;
let connection: Connection;
let client: Client;
const workers: { worker: Worker; done: Promise<void> }[] = [];

async function startWorker(buildId: string) {
  const worker = await createExampleWorker({
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: namespace,
    TEMPORAL_DEPLOYMENT_NAME: deploymentName,
    TEMPORAL_WORKER_BUILD_ID: buildId,
    EXAMPLE_TASK_QUEUE: taskQueue,
    EXAMPLE_WORKFLOW_HOLD: '5m',
  });
  workers.push({ worker, done: worker.run() });
}

async function describeDeployment() {
  const res = await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName });
  return res;
}

const identity = 'glidepath-proof';

beforeAll(async () => {
  connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
  client = new Client({ connection, namespace });
});

afterAll(async () => {
  for (const w of workers) w.worker.shutdown();
  await Promise.all(workers.map((w) => w.done));
  await connection?.close();
});

test('a versioned worker registers, ramps, becomes current, and PINNED work stays on its version', async () => {
  await startWorker('v1');
  const registered = await eventually('v1 in describeWorkerDeployment', async () => {
    const res = await describeDeployment();
    const ids = res.workerDeploymentInfo?.versionSummaries?.map((v) => v.deploymentVersion?.buildId);
    return ids?.includes('v1') ? res : undefined;
  });

  const setV1 = await connection.workflowService.setWorkerDeploymentCurrentVersion({
    namespace,
    deploymentName,
    buildId: 'v1',
    conflictToken: registered.conflictToken,
    identity,
  });
  expect(setV1.previousDeploymentVersion?.buildId ?? '').toBe('');

  const pinned = await client.workflow.start('exampleWork', { taskQueue, workflowId: `pinned-${randomUUID()}` });
  const onV1 = await eventually('the pinned workflow to run on v1', async () => {
    const d = await pinned.describe();
    return d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId || undefined;
  });
  expect(onV1).toBe('v1');

  await startWorker('v2');
  await eventually('v2 registered', async () => {
    const res = await describeDeployment();
    return res.workerDeploymentInfo?.versionSummaries?.some((v) => v.deploymentVersion?.buildId === 'v2')
      ? true
      : undefined;
  });
  // Registration shows before every task queue of the version is known; the server refuses routing until then.
  await eventually('v2 ramping', () =>
    connection.workflowService.setWorkerDeploymentRampingVersion({
      namespace,
      deploymentName,
      buildId: 'v2',
      percentage: 25,
      identity,
    }),
  );
  const ramping = (await describeDeployment()).workerDeploymentInfo?.routingConfig;
  expect(ramping?.rampingDeploymentVersion?.buildId).toBe('v2');
  expect(ramping?.rampingVersionPercentage).toBe(25);

  await connection.workflowService.setWorkerDeploymentCurrentVersion({
    namespace,
    deploymentName,
    buildId: 'v2',
    identity,
  });
  const routing = (await describeDeployment()).workerDeploymentInfo?.routingConfig;
  expect(routing?.currentDeploymentVersion?.buildId).toBe('v2');
  expect(routing?.rampingDeploymentVersion?.buildId ?? '').toBe('');

  // New work goes to v2; the pinned execution finishes on v1.
  const fresh = await client.workflow.start('exampleWork', { taskQueue, workflowId: `fresh-${randomUUID()}` });
  await fresh.signal('finish');
  expect(await fresh.result()).toBe('v2');
  await pinned.signal('finish');
  expect(await pinned.result()).toBe('v1');
});
