/**
 * registrationPollDelay: how often the registration wait asks, from how fast the server answers.
 *
 * settledRead: a describe refused in the server's continue-as-new window is read again; a NOT_FOUND counts only
 * when the system workflow is not running either. The service is a fake that answers from a script.
 */
import proto from '@temporalio/proto';
import {
  deploymentWorkflowId,
  describeDeploymentSettled,
  registrationPollDelay,
  settledRead,
  versionWorkflowId,
  type DescribeService,
} from '../../temporal/describe.js';
import { grpcError } from '../harness/grpc-error.js';

const { temporal } = proto;
const { WorkflowExecutionStatus } = temporal.api.enums.v1;

const notFound = () => grpcError(5, 'Worker Deployment not found');
const betweenRuns = () => grpcError(9, 'Workflow task is not scheduled yet.');

/** A service whose describes answer `answers` in turn, and whose system workflow has `status` (or is not found). */
function fakeService(answers: (() => unknown)[], status?: number) {
  const calls = { describe: 0, describeWorkflow: [] as string[] };
  const svc = {
    describeWorkerDeployment: async () => {
      const next = answers[Math.min(calls.describe++, answers.length - 1)]!;
      return next() as never;
    },
    describeWorkerDeploymentVersion: async () => ({}) as never,
    describeWorkflowExecution: async (req: { execution?: { workflowId?: string | null } | null }) => {
      calls.describeWorkflow.push(req.execution?.workflowId ?? '');
      if (status === undefined) throw notFound();
      return { workflowExecutionInfo: { status } } as never;
    },
  };
  return { svc: svc as unknown as DescribeService, calls };
}

const answer = { workerDeploymentInfo: { name: 'ns/orders' } };
const sleeps: number[] = [];
const sleep = async (ms: number) => void sleeps.push(ms);
beforeEach(() => (sleeps.length = 0));

const running = WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING;
const completed = WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED;

test('the system workflow IDs are the server’s', () => {
  expect(deploymentWorkflowId('ns/orders')).toBe('temporal-sys-worker-deployment:ns/orders');
  expect(versionWorkflowId('ns/orders', 'v2')).toBe('temporal-sys-worker-deployment-version:ns/orders:v2');
});

test('an answer is returned at once', async () => {
  const { svc, calls } = fakeService([() => answer], running);
  expect(await describeDeploymentSettled(svc, 'default', 'ns/orders', { sleep })).toBe(answer);
  expect(calls).toEqual({ describe: 1, describeWorkflow: [] });
});

test('a NOT_FOUND while the system workflow runs is the window: read again until it answers', async () => {
  const { svc, calls } = fakeService(
    [
      () => {
        throw notFound();
      },
      () => {
        throw notFound();
      },
      () => answer,
    ],
    running,
  );
  expect(await describeDeploymentSettled(svc, 'default', 'ns/orders', { sleep })).toBe(answer);
  expect(calls.describe).toBe(3);
  expect(calls.describeWorkflow).toEqual([
    'temporal-sys-worker-deployment:ns/orders',
    'temporal-sys-worker-deployment:ns/orders',
  ]);
  expect(sleeps).toEqual([20, 40]);
});

test('a NOT_FOUND with no system workflow, or a closed one, is the truth: undefined at once', async () => {
  for (const status of [undefined, completed]) {
    const { svc, calls } = fakeService(
      [
        () => {
          throw notFound();
        },
      ],
      status,
    );
    expect(await describeDeploymentSettled(svc, 'default', 'ns/orders', { sleep })).toBeUndefined();
    expect(calls.describe).toBe(1);
  }
  expect(sleeps).toEqual([]);
});

test('"Workflow task is not scheduled yet" is the window too, without asking about the workflow', async () => {
  const { svc, calls } = fakeService([
    () => {
      throw betweenRuns();
    },
    () => answer,
  ]);
  expect(await describeDeploymentSettled(svc, 'default', 'ns/orders', { sleep })).toBe(answer);
  expect(calls).toEqual({ describe: 2, describeWorkflow: [] });
});

test('a window that outlasts the attempts throws its refusal (the activity retries); the waits are capped at 1 s', async () => {
  const { svc, calls } = fakeService([
    () => {
      throw betweenRuns();
    },
  ]);
  await expect(describeDeploymentSettled(svc, 'default', 'ns/orders', { sleep, attempts: 9 })).rejects.toMatchObject({
    code: 9,
  });
  expect(calls.describe).toBe(9);
  expect(sleeps).toEqual([20, 40, 80, 160, 320, 640, 1000, 1000]);
});

test('a NOT_FOUND that outlasts the attempts while the workflow runs is thrown, not read as none', async () => {
  const { svc, calls } = fakeService(
    [
      () => {
        throw notFound();
      },
    ],
    running,
  );
  await expect(describeDeploymentSettled(svc, 'default', 'ns/orders', { sleep, attempts: 3 })).rejects.toMatchObject({
    code: 5,
  });
  expect(calls.describe).toBe(3);
});

test('when the workflow cannot be described either, that error is thrown (the activity retries)', async () => {
  const { svc } = fakeService(
    [
      () => {
        throw notFound();
      },
    ],
    running,
  );
  const unavailable = grpcError(14, 'unavailable');
  const failing = {
    ...(svc as object),
    describeWorkflowExecution: async () => {
      throw unavailable;
    },
  } as unknown as DescribeService;
  await expect(describeDeploymentSettled(failing, 'default', 'ns/orders', { sleep })).rejects.toBe(unavailable);
});

test('any other refusal is thrown at once', async () => {
  const { svc, calls } = fakeService(
    [
      () => {
        throw grpcError(14, 'unavailable');
      },
    ],
    running,
  );
  await expect(
    settledRead(svc, 'default', 'x', () => svc.describeWorkerDeployment({}), { sleep }),
  ).rejects.toMatchObject({ code: 14 });
  expect(calls.describe).toBe(1);
});

describe('registrationPollDelay', () => {
  const run = (describeMs: number[]) => {
    const delays: number[] = [];
    let delay: number | undefined;
    for (const ms of describeMs) delays.push((delay = registrationPollDelay(delay, ms)));
    return delays;
  };

  test('a server answering fast is asked again after 50 ms, doubling to 2 s', () => {
    expect(run([5, 5, 5, 5, 5, 5, 5, 5])).toEqual([50, 100, 200, 400, 800, 1600, 2000, 2000]);
  });

  test('a slow answer stretches the wait to ten times what it took beyond 200 ms, at most 5 s', () => {
    expect(run([5, 500, 5, 2_000, 40_000])).toEqual([50, 3_000, 2_000, 5_000, 5_000]);
  });

  test("a distant server's round trips alone do not stretch it", () => {
    expect(run([150, 150, 150, 150, 150, 150])).toEqual([50, 100, 200, 400, 800, 1600]);
  });

  test('once the server is fast again, the wait comes back down to 2 s at once', () => {
    expect(run([2_000, 5])).toEqual([5_000, 2_000]);
  });
});
