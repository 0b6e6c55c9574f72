/**
 * What a workflow's tasks cost the Temporal budget beyond their polls (workflows/task-cost.ts), charged through the
 * controller's sinks: a workflow whose history a worker replays from its start (it was evicted from the cache, or
 * another worker had it) is charged its history fetch, one in the cache is not; and every new workflow task's
 * completion waits for its turn before it is sent. Workers with the controller's interceptor modules and sinks,
 * on the real dev server: one starts a workflow and stops, the next one takes it over.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { finish, type twoLocals, type waitForFinish } from './task-cost-workflows.js';
import { eventually } from '../harness/eventually.js';
import { taskCostSinks, workflowInterceptorModules } from '../../worker/controller.js';

const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const taskQueue = `task-cost-test-${randomUUID().slice(0, 8)}`;

test("a workflow another worker had is charged its history fetch when it replays, one in the cache is not, and each task's completion waits for its turn, a local activity's resolution is no completion", async () => {
  let fetches = 0;
  let completions = 0;
  /** While set, completions wait until it is called. */
  let hold: Promise<void> | undefined;
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  const nativeConnection = await NativeConnection.connect({ address });
  const worker = () =>
    Worker.create({
      connection: nativeConnection,
      namespace,
      taskQueue,
      workflowsPath: fileURLToPath(new URL('./task-cost-workflows.ts', import.meta.url)),
      interceptors: { workflowModules: workflowInterceptorModules },
      activities: { echo: async (x: string) => Promise.resolve(x) },
      // The controller's sinks, with a budget that counts what it is charged.
      sinks: taskCostSinks({
        charge: () => void fetches++,
        turnWithin: async () => {
          completions++;
          await hold;
        },
      }),
    });
  const ids: string[] = [];
  const completedTasks = async (workflowId: string) => {
    const { events } = await client.workflow.getHandle(workflowId).fetchHistory();
    return (events ?? []).filter((e) => e.workflowTaskCompletedEventAttributes).length;
  };
  /** Starts a workflow; `start` also waits for its first task to be completed. */
  const launch = async (name: string) => {
    const workflowId = `${name}-${randomUUID().slice(0, 8)}`;
    ids.push(workflowId);
    return client.workflow.start<typeof waitForFinish>('waitForFinish', { taskQueue, workflowId });
  };
  const start = async (name: string) => {
    const handle = await launch(name);
    await eventually(`${name}'s first workflow task`, async () =>
      (await completedTasks(handle.workflowId)) > 0 ? true : undefined,
    );
    return handle;
  };
  // Sink calls run once their activation is done, beside its completion: wait for the charge, then count.
  const fetchedTo = (n: number) => eventually(`${n} history fetch(es)`, () => fetches >= n || undefined);
  try {
    // The first worker runs a's first task and stops: a's next task goes to whichever worker polls.
    const a = await (await worker()).runUntil(() => start('a'));
    expect(fetches).toBe(0); // a new workflow replays nothing
    expect(completions).toBe(1);

    await (
      await worker()
    ).runUntil(async () => {
      await a.signal(finish);
      await expect(a.result()).resolves.toBe('finished');
      await fetchedTo(1);
      expect(fetches).toBe(1); // this worker replayed a from its start
      expect(completions).toBe(2); // its replayed task sent nothing

      // b's first task waits for its turn: the server has no completion until the budget lets it go.
      let release!: () => void;
      hold = new Promise((resolve) => (release = resolve));
      const b = await launch('b');
      const { workflowId } = b;
      await eventually("b's first task asking for its turn", () => completions === 3 || undefined);
      expect(await completedTasks(workflowId)).toBe(0);
      hold = undefined;
      release();
      await eventually("b's first task completed", async () =>
        (await completedTasks(workflowId)) === 1 ? true : undefined,
      );

      await b.signal(finish);
      await expect(b.result()).resolves.toBe('finished');
      expect(fetches).toBe(1); // b stayed in this worker's cache
      // A task whose local activities resolve in activations of their own is still one completion.
      const c = `c-${randomUUID().slice(0, 8)}`;
      ids.push(c);
      await expect(client.workflow.execute<typeof twoLocals>('twoLocals', { taskQueue, workflowId: c })).resolves.toBe(
        'onetwo',
      );
      // Every completion the server recorded was paid, and only those.
      await eventually('the completions paid', async () => {
        const recorded =
          (await completedTasks(a.workflowId)) + (await completedTasks(workflowId)) + (await completedTasks(c));
        return completions === recorded ? true : undefined;
      });
    });
  } finally {
    await Promise.all(
      ids.map((id) =>
        client.workflow
          .getHandle(id)
          .terminate('test done')
          .catch(() => {}),
      ),
    );
    await nativeConnection.close();
    await connection.close();
  }
});
