/**
 * awaitVersionRegistered against a busy server: a refusal that says "busy" (deadline exceeded, unavailable) is a
 * slow answer and the wait asks again 5 s later; the third in a row fails the attempt; any other refusal fails it
 * at once. The server is a fake WorkflowService that answers from a script; the clock is jest's.
 */
import { jest } from '@jest/globals';
import proto from '@temporalio/proto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTemporalActivities } from '../../activities/temporal/activities.js';
import type { TemporalConnections, TemporalTarget } from '../../activities/temporal/connections.js';
import { grpcError } from '../harness/grpc-error.js';

const { TaskQueueType } = proto.temporal.api.enums.v1;

const deadlineExceeded = () => grpcError(4, 'context deadline exceeded');
const permissionDenied = () => grpcError(7, 'not allowed');
const registered = { versionTaskQueues: [{ name: 'orders', type: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW }] };

/** A server whose current version is v1 (on `orders`) and whose describes of v2 answer `answers` in turn. */
function busyServer(answers: (() => unknown)[]) {
  const calls = { v2: 0 };
  const workflowService = {
    describeWorkerDeployment: async () => ({ workerDeploymentInfo: { routingConfig: { currentDeploymentVersion: { buildId: 'v1' } } } }),
    describeWorkerDeploymentVersion: async (req: { deploymentVersion: { buildId: string } }) => {
      if (req.deploymentVersion.buildId === 'v1') return registered;
      return answers[Math.min(calls.v2++, answers.length - 1)]!();
    },
  };
  const connections = { get: async () => ({ workflowService }) } as unknown as TemporalConnections;
  return { activities: createTemporalActivities(connections, 'glidepath', async () => undefined), calls };
}

const target: TemporalTarget = { connection: { hostPort: 'localhost:7233' }, k8sNamespace: 'ns', temporalNamespace: 'default', deploymentName: 'ns/orders' };
/** Runs the wait on jest's clock, 100 ms at a time; returns its outcome and the time it took. */
async function wait(activities: ReturnType<typeof busyServer>['activities']) {
  jest.useFakeTimers();
  try {
    const started = Date.now();
    let outcome: { value?: unknown; error?: unknown } | undefined;
    new MockActivityEnvironment().run(() => activities.awaitVersionRegistered(target, 'v2')).then(
      (value) => (outcome = { value }),
      (error: unknown) => (outcome = { error }),
    );
    while (!outcome) await jest.advanceTimersByTimeAsync(100);
    return { ...outcome, tookMs: Date.now() - started };
  } finally {
    jest.useRealTimers();
  }
}

const busy = () => {
  throw deadlineExceeded();
};

test('two busy refusals in a row are slow answers: the wait asks again 5 s after each and sees the version registered', async () => {
  const { activities, calls } = busyServer([busy, busy, () => registered]);
  const { value, tookMs } = await wait(activities);
  expect(value).toEqual({ taskQueues: ['orders'], workflowTaskQueues: ['orders'], unversionedPollers: false });
  expect(calls.v2).toBe(3);
  expect(tookMs).toBeGreaterThanOrEqual(10_000);
  expect(tookMs).toBeLessThan(10_500);
});

test('an answer in between starts the count again', async () => {
  const { activities, calls } = busyServer([busy, busy, () => ({}), busy, busy, () => registered]);
  expect((await wait(activities)).value).toMatchObject({ taskQueues: ['orders'] });
  expect(calls.v2).toBe(6);
});

test('the third busy refusal in a row fails the attempt with it (the retry policy takes over)', async () => {
  const { activities, calls } = busyServer([busy]);
  expect((await wait(activities)).error).toMatchObject({ code: 4 });
  expect(calls.v2).toBe(3);
});

test('a refusal that is no slow answer fails the attempt at once', async () => {
  const { activities, calls } = busyServer([() => { throw permissionDenied(); }]);
  const { error, tookMs } = await wait(activities);
  expect(error).toMatchObject({ code: 7 });
  expect(calls.v2).toBe(1);
  expect(tookMs).toBeLessThanOrEqual(100); // within the clock's first step
});
