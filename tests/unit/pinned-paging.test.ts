/**
 * actOnPinned reaches every pinned execution however many pages visibility answers in (a fake workflow service:
 * this module's paging alone), asks only for pinned ones, and stops when its activity is cancelled.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { createPinnedActivities } from '../../temporal/pinned.js';
import { connectionsTo, fakeTarget as t } from '../harness/fake-temporal.js';

/** A visibility store of `total` executions, answered `perPage` at a time; records every terminate. */
function fakeService(total: number, perPage: number) {
  const queries: string[] = [];
  const terminated: string[] = [];
  const service = {
    async listWorkflowExecutions(req: { nextPageToken?: Uint8Array; query: string }) {
      queries.push(req.query);
      const from = req.nextPageToken?.length ? Number(Buffer.from(req.nextPageToken).toString()) : 0;
      const to = Math.min(from + perPage, total);
      const executions = Array.from({ length: to - from }, (_, i) => ({
        execution: { workflowId: `wf-${from + i}`, runId: `run-${from + i}` },
      }));
      return { executions, nextPageToken: to < total ? Buffer.from(String(to)) : new Uint8Array() };
    },
    async terminateWorkflowExecution(req: { workflowExecution: { workflowId: string } }) {
      terminated.push(req.workflowExecution.workflowId);
      return {};
    },
  };
  return { pinned: createPinnedActivities(connectionsTo(service), 'test'), queries, terminated };
}

test('every page is acted on, beyond ten thousand executions', async () => {
  const { pinned, queries, terminated } = fakeService(12_345, 1000);
  const result = await new MockActivityEnvironment().run(
    pinned.actOnPinned,
    t,
    'v1',
    { kind: 'Terminate' as const },
    'bad',
  );
  expect(result).toEqual({ matched: 12_345, acted: 12_345 });
  expect(new Set(terminated).size).toBe(12_345);
  expect(queries).toHaveLength(13);
  expect(queries[0]).toContain('TemporalWorkflowVersioningBehavior = "Pinned"');
  expect(queries[0]).toContain('TemporalWorkerDeploymentVersion = "ns/orders:v1"');
});

test('a cancelled activity stops acting', async () => {
  const { pinned, terminated } = fakeService(5_000, 1000);
  const env = new MockActivityEnvironment();
  const run = env.run(pinned.actOnPinned, t, 'v1', { kind: 'Terminate' as const }, 'bad');
  env.cancel();
  await expect(run).rejects.toBeDefined();
  expect(terminated.length).toBeLessThan(5_000);
});
