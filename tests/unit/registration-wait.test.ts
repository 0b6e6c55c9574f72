/**
 * awaitVersionRegistered against a busy server: a refusal that says "busy" (deadline exceeded, unavailable) is a
 * slow answer and the wait goes on; the third in a row fails the attempt; any other refusal fails it at once. The
 * server is a fake WorkflowService that answers from a script.
 */
import { Metadata } from '@grpc/grpc-js';
import proto from '@temporalio/proto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTemporalActivities } from '../../activities/temporal/activities.js';
import type { TemporalConnections, TemporalTarget } from '../../activities/temporal/connections.js';

const { TaskQueueType } = proto.temporal.api.enums.v1;

const grpcError = (code: number, details: string) => Object.assign(new Error(`${code}: ${details}`), { code, details, metadata: new Metadata() });
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
const wait = (activities: ReturnType<typeof busyServer>['activities']) => new MockActivityEnvironment().run(() => activities.awaitVersionRegistered(target, 'v2'));

test('two busy refusals in a row are slow answers: the wait goes on and sees the version registered', async () => {
  const { activities, calls } = busyServer([() => { throw deadlineExceeded(); }, () => { throw deadlineExceeded(); }, () => registered]);
  await expect(wait(activities)).resolves.toEqual({ taskQueues: ['orders'], workflowTaskQueues: ['orders'], unversionedPollers: false });
  expect(calls.v2).toBe(3);
});

test('an answer in between starts the count again', async () => {
  const busy = () => { throw deadlineExceeded(); };
  const { activities, calls } = busyServer([busy, busy, () => ({}), busy, busy, () => registered]);
  await expect(wait(activities)).resolves.toMatchObject({ taskQueues: ['orders'] });
  expect(calls.v2).toBe(6);
});

test('the third busy refusal in a row fails the attempt with it (the retry policy and the status take over)', async () => {
  const { activities, calls } = busyServer([() => { throw deadlineExceeded(); }]);
  await expect(wait(activities)).rejects.toMatchObject({ code: 4 });
  expect(calls.v2).toBe(3);
});

test('a refusal that is no slow answer fails the attempt at once', async () => {
  const { activities, calls } = busyServer([() => { throw permissionDenied(); }]);
  await expect(wait(activities)).rejects.toMatchObject({ code: 7 });
  expect(calls.v2).toBe(1);
});
