/**
 * The first version ramps away from unversioned workers rather than stranding them: the registration check
 * (the real activity, against real servers) sees them whatever the server's poller history TTL. On the fast test
 * server (`matching.PollerHistoryTTL` 1 s) an idle unversioned worker has left the poller list, and the work it
 * did says it is there; on a server with default settings, the poller list says so.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createTemporalActivities } from '../../activities/temporal.js';
import { TemporalConnections } from '../../temporal/connections.js';
import { createActivities as exampleActivities } from '../../examples/worker/activities.js';
import { exampleBundle } from '../../examples/worker/worker.js';
import { stopProcesses } from '../../scripts/servers/processes.js';
import { startTemporal, type TemporalServer } from '../../scripts/servers/temporal-server.js';
import { eventually, sleep } from '../harness/eventually.js';

const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
let defaults: TemporalServer | undefined;
const workers: { worker: Worker; running: Promise<void>; connection: NativeConnection }[] = [];

afterAll(async () => {
  for (const w of workers) {
    if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
    await w.running.catch(() => undefined);
    await w.connection.close();
  }
  if (defaults) await stopProcesses([defaults.process]);
});

async function startWorker(
  address: string,
  taskQueue: string,
  version?: { deploymentName: string; buildId: string },
): Promise<void> {
  const connection = await NativeConnection.connect({ address });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    workflowBundle: await exampleBundle(),
    activities: exampleActivities({}),
    ...(version
      ? {
          workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' as const },
        }
      : {}),
  });
  workers.push({ worker, running: worker.run(), connection });
}

/** What the registration activity answers for a new version on `taskQueue`. */
async function registration(address: string, taskQueue: string) {
  const deploymentName = `first/${randomUUID().slice(0, 8)}`;
  await startWorker(address, taskQueue, { deploymentName, buildId: 'b1' });
  const connections = new TemporalConnections(async () => undefined);
  const activities = createTemporalActivities(connections, 'first-version-test', async () => undefined);
  const target = {
    connection: { hostPort: address },
    k8sNamespace: 'test',
    temporalNamespace: namespace,
    deploymentName,
  };
  try {
    return await new MockActivityEnvironment().run(activities.awaitVersionRegistered, target, 'b1');
  } finally {
    await connections.closeAll();
  }
}

test('fast test server: an idle unversioned worker that has done work is seen after the poller list forgot it', async () => {
  const address = process.env.TEMPORAL_ADDRESS!;
  const taskQueue = `first-${randomUUID().slice(0, 8)}`;
  await startWorker(address, taskQueue);
  const connection = await Connection.connect({ address });
  await new Client({ connection, namespace }).workflow.execute('exampleWork', {
    taskQueue,
    workflowId: `unversioned-${taskQueue}`,
  });
  // Past the 1 s poller history, the worker idles in a long poll the server has forgotten.
  await eventually('the poller list to forget the idle worker', async () => {
    const tq = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: taskQueue, kind: 1 },
      taskQueueType: 1,
    });
    return (tq.pollers ?? []).length === 0;
  });
  await connection.close();
  expect(await registration(address, taskQueue)).toMatchObject({ taskQueues: [taskQueue], unversionedPollers: true });
});

test('no unversioned worker, no unversioned work: the first version becomes current at once', async () => {
  const address = process.env.TEMPORAL_ADDRESS!;
  const taskQueue = `first-${randomUUID().slice(0, 8)}`;
  expect(await registration(address, taskQueue)).toMatchObject({ taskQueues: [taskQueue], unversionedPollers: false });
});

test('server with default settings: an idle unversioned worker that never did any work is in the poller list', async () => {
  defaults = await startTemporal({ dir: mkdtempSync(join(tmpdir(), 'glidepath-defaults-')), defaults: true });
  const taskQueue = `first-${randomUUID().slice(0, 8)}`;
  await startWorker(defaults.address, taskQueue);
  await eventually('the unversioned worker polling', async () => {
    const connection = await Connection.connect({ address: defaults!.address });
    try {
      const tq = await connection.workflowService.describeTaskQueue({
        namespace,
        taskQueue: { name: taskQueue, kind: 1 },
        taskQueueType: 1,
      });
      return (tq.pollers ?? []).length > 0;
    } finally {
      await connection.close();
    }
  });
  await sleep(1500); // longer than the fast server's poller history: the default one still remembers it
  expect(await registration(defaults.address, taskQueue)).toMatchObject({
    taskQueues: [taskQueue],
    unversionedPollers: true,
  });
});
