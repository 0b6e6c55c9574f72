/**
 * awaitVersionRegistered against a busy server: a refusal that says "busy" (deadline exceeded, unavailable) is a
 * slow answer and the wait asks again 5 s later; the third in a row fails the attempt; any other refusal fails it
 * at once. The server is a fake WorkflowService that answers from a script; the clock is jest's.
 */
import { jest } from '@jest/globals';
import proto from '@temporalio/proto';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTemporalActivities } from '../../activities/temporal.js';
import { connectionsTo, fakeTarget as target } from '../harness/fake-temporal.js';
import { grpcError } from '../harness/grpc-error.js';

const { TaskQueueType } = proto.temporal.api.enums.v1;

const deadlineExceeded = () => grpcError(4, 'context deadline exceeded');
const permissionDenied = () => grpcError(7, 'not allowed');
const registered = { versionTaskQueues: [{ name: 'orders', type: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW }] };

/**
 * A server whose current version is v1 (on `orders`) and whose describes of v2 answer `answers` in turn; `signal`
 * is the abort signal the wait gave its connection (a real one aborts its calls in flight with it).
 */
function busyServer(
  answers: ((signal?: AbortSignal) => unknown)[],
  o: { serverVersion?: string; limit?: string; answerMs?: number } = {},
) {
  const answer = <R>(r: R) => new Promise<R>((resolve) => setTimeout(() => resolve(r), o.answerMs ?? 0));
  const calls = { v2: 0, created: 0 };
  let signal: AbortSignal | undefined;
  const workflowService = {
    getSystemInfo: async () => ({ serverVersion: o.serverVersion ?? '1.29.1' }),
    createWorkerDeploymentVersion: async () => {
      calls.created++;
      if (o.limit) throw grpcError(8, o.limit);
      return {};
    },
    describeWorkerDeployment: () =>
      answer({ workerDeploymentInfo: { routingConfig: { currentDeploymentVersion: { buildId: 'v1' } } } }),
    describeWorkerDeploymentVersion: async (req: { deploymentVersion: { buildId: string } }) => {
      if (req.deploymentVersion.buildId === 'v1') return answer(registered);
      return answer(answers[Math.min(calls.v2++, answers.length - 1)]!(signal));
    },
  };
  const withAbortSignal = <R>(s: AbortSignal, fn: () => Promise<R>) => ((signal = s), fn());
  const activities = createTemporalActivities(
    connectionsTo(workflowService, withAbortSignal),
    'glidepath',
    async () => undefined,
  );
  return { activities, calls };
}

/** Runs the wait on jest's clock, 100 ms at a time (cancelled after `cancelAfterMs`); returns its outcome and the time it took. */
async function wait(activities: ReturnType<typeof busyServer>['activities'], cancelAfterMs = Infinity) {
  jest.useFakeTimers();
  try {
    const started = Date.now();
    let outcome: { value?: unknown; error?: unknown } | undefined;
    const env = new MockActivityEnvironment();
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => heartbeats.push(d));
    env
      .run(() => activities.awaitVersionRegistered(target, 'v2'))
      .then(
        (value) => (outcome = { value }),
        (error: unknown) => (outcome = { error }),
      );
    while (!outcome && Date.now() - started < 600_000) {
      await jest.advanceTimersByTimeAsync(100);
      if (Date.now() - started >= cancelAfterMs) env.cancel();
    }
    return { ...(outcome ?? { error: undefined }), tookMs: Date.now() - started, heartbeats };
  } finally {
    jest.useRealTimers();
  }
}

const notYet = () => ({});

test('a 1.32 server at its version limit: after 10 s unregistered, the wait asks to add the version and fails naming the limit', async () => {
  const limit =
    'cannot add version ns/orders:v2 since maximum number of versions (5) have been registered in the deployment';
  const { activities, calls } = busyServer([notYet], { serverVersion: '1.32.0', limit });
  const { error, tookMs } = await wait(activities);
  expect(calls.created).toBe(1);
  expect(tookMs).toBeGreaterThanOrEqual(10_000);
  expect(tookMs).toBeLessThan(15_000);
  expect(error).toMatchObject({ type: 'WorkerDeploymentLimit', nonRetryable: false });
  expect((error as Error).message.length).toBeLessThanOrEqual(300); // what a status message keeps
  expect((error as Error).message).toMatch(
    /^the server cannot add v2: the worker deployment is at the server's limit of 5 versions \(matching\.maxVersionsInDeployment\): delete drained versions/,
  );
});

test('a 1.32 server that adds the version: the wait goes on until the workers register', async () => {
  let describes = 0;
  const { activities, calls } = busyServer([() => (++describes > 30 ? registered : {})], { serverVersion: '1.32.0' });
  const { value } = await wait(activities);
  expect(calls.created).toBe(1);
  expect(value).toMatchObject({ workflowTaskQueues: ['orders'] });
});

test('the version is read beside what it must cover: a server answering each describe in 1 s shows it registered in 2 s, not 3', async () => {
  const { activities } = busyServer([() => registered], { answerMs: 1_000 });
  const { value, tookMs } = await wait(activities);
  expect(value).toMatchObject({ workflowTaskQueues: ['orders'] });
  expect(tookMs).toBeGreaterThanOrEqual(2_000); // the deployment, then the current version (what v2 must cover)
  expect(tookMs).toBeLessThan(3_000); // v2 was read meanwhile
});

test('an older server is never asked to add the version', async () => {
  let describes = 0;
  const { activities, calls } = busyServer([() => (++describes > 30 ? registered : {})], { serverVersion: '1.29.1' });
  const { value } = await wait(activities);
  expect(calls.created).toBe(0);
  expect(value).toMatchObject({ workflowTaskQueues: ['orders'] });
});

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
  const { activities, calls } = busyServer([
    () => {
      throw permissionDenied();
    },
  ]);
  const { error, tookMs } = await wait(activities);
  expect(error).toMatchObject({ code: 7 });
  expect(calls.v2).toBe(1);
  expect(tookMs).toBeLessThanOrEqual(100); // within the clock's first step
});

test('a cancellation ends a describe in flight: a busy server’s late answer is not waited for', async () => {
  // The describe of v2 answers only when its call is aborted (a real connection rejects it then).
  const hung = (signal?: AbortSignal) =>
    new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('call aborted'))));
  const { activities, calls } = busyServer([hung]);
  const { error, tookMs } = await wait(activities, 1_000);
  expect(calls.v2).toBe(1);
  expect(error).toBeInstanceOf(CancelledFailure);
  expect(tookMs).toBeLessThan(1_500);
});

test('the heartbeats carry the last check’s refusal until an answer clears it (what NoPollers says at the deadline)', async () => {
  const { activities } = busyServer([busy, () => ({}), () => ({}), () => registered]);
  const { value, heartbeats } = await wait(activities);
  expect(value).toMatchObject({ taskQueues: ['orders'] });
  // Refused at 0 s, asked again at 5 s: the beats at 2 and 4 s say the refusal, the one at 6 s no longer does.
  expect(heartbeats.slice(0, 2)).toEqual([
    { lastCheckFailure: expect.stringContaining('context deadline exceeded') },
    { lastCheckFailure: expect.stringContaining('context deadline exceeded') },
  ]);
  expect(heartbeats.at(-1)).toEqual({});
});
