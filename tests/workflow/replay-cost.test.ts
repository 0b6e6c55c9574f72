/**
 * A workflow whose history a worker replays from its start (it was evicted from the cache, or another worker had
 * it) reports it (workflows/replay-cost.ts), and the controller's sinks charge the history fetch to the Temporal
 * budget; a workflow the worker has in its cache charges nothing. Workers with the controller's interceptor
 * modules and sinks, on the real dev server: one starts a workflow and stops, the next one takes it over.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { finish, type waitForFinish } from './replay-cost-workflows.js';
import { eventually } from '../harness/eventually.js';
import { replayCostSinks, workflowInterceptorModules } from '../../worker/controller.js';

const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const taskQueue = `replay-cost-test-${randomUUID().slice(0, 8)}`;

test('a workflow another worker had is charged its history fetch when it replays; one in the cache is not', async () => {
  let charged = 0;
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const nativeConnection = await NativeConnection.connect({ address });
  const worker = () =>
    Worker.create({
      connection: nativeConnection,
      namespace,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./replay-cost-workflows.ts', import.meta.url)),
      interceptors: { workflowModules: workflowInterceptorModules },
      // The controller's sinks, with a budget that counts what it is charged.
      sinks: replayCostSinks({ maxWaitMs: 5_000, charge: () => (charged++, true) }),
    });
  const ids: string[] = [];
  const start = async (name: string) => {
    const workflowId = `${name}-${randomUUID().slice(0, 8)}`;
    ids.push(workflowId);
    const handle = await client.workflow.start<typeof waitForFinish>('waitForFinish', { taskQueue, workflowId });
    await eventually(`${name}'s first workflow task`, async () => {
      const { events } = await handle.fetchHistory();
      return events?.some((e) => e.workflowTaskCompletedEventAttributes) ? true : undefined;
    });
    return handle;
  };
  // Sink calls run once their activation is done, beside its completion: wait for the charge, then count.
  const chargedTo = (n: number) => eventually(`${n} charge(s)`, () => charged >= n || undefined);
  try {
    // The first worker runs a's first task and stops: a's next task goes to whichever worker polls.
    const a = await (await worker()).runUntil(() => start('a'));
    expect(charged).toBe(0); // a new workflow replays nothing

    await (
      await worker()
    ).runUntil(async () => {
      await a.signal(finish);
      await expect(a.result()).resolves.toBe('finished');
      await chargedTo(1);
      expect(charged).toBe(1); // this worker replayed a from its start

      const b = await start('b');
      await b.signal(finish);
      await expect(b.result()).resolves.toBe('finished');
      expect(charged).toBe(1); // b stayed in this worker's cache
    });
  } finally {
    await Promise.all(ids.map((id) => client.workflow.getHandle(id).terminate('test done').catch(() => {})));
    await nativeConnection.close();
    await connection.close();
  }
});
