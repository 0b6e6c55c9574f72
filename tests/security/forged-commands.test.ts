/**
 * Forged workflow-task completions: someone with Temporal access only polls the controller's workflow task queue
 * while no controller does (a restart, a scale to zero) and answers the rollout's workflow task with commands of
 * their own: first activities of the controller's with forged arguments, scheduled in the rollout's own history
 * (and the rollout's next workflow tasks sent to a sticky queue of theirs), then a continue-as-new whose state says
 * the live current version and the draining one are drained, a build never declared is current, and its template is
 * privileged. The controller runs the forged activities and the forged run: each destructive call reads the truth and
 * is refused, no Deployment of the forged template appears, no version with work on it is scaled down (the env's
 * checker), and a real apply of v3 rolls out afterwards.
 */
import { Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { Labels } from '../../kube/versioned-deployment.js';
import { startController, type Controller } from '../../worker/controller.js';
import { defaultTimings } from '../../api/timings.js';
import type { RolloutState } from '../../workflows/state.js';
import type { Owner } from '../../api/resource.js';
import { apply, deployments, eventually, resource, workflowHandle } from '../harness/rollout-env.js';
import { forgedBuild, forgedImage, privilegedTemplate } from './forged-calls.js';
import {
  failedActivities,
  readyWith,
  saveHistory,
  startSecurityWorld,
  tns,
  uidOf,
  v2WhileV1Pinned,
  type SecurityWorld,
} from './security-env.js';

type Command = proto.temporal.api.command.v1.ICommand;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const { CommandType, TaskQueueKind } = proto.temporal.api.enums.v1;

const name = 'commanded';
const sunset = { scaledownDelay: '1s', deleteDelay: '2s' };
const attacker = 'attacker@elsewhere';
let world: SecurityWorld;
let controller: Controller | undefined;

/** The env's controller, started by the test (so it can be stopped and started again, as a restart would). */
const startTheController = () =>
  startController({
    kubeConfig: world.env.kc,
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: tns },
    taskQueue: `glidepath-${world.env.namespace}`,
    installation: world.env.installation,
    namespaces: [world.env.namespace],
    timings: { drainPollMaxMs: 1000 },
  });

beforeAll(async () => {
  world = await startSecurityWorld('forged-commands', { inProcessController: false });
  controller = await startTheController();
}, 180_000);
afterAll(async () => {
  await saveHistory(world, name);
  await controller?.stop();
  await world?.stop();
});
afterEach(() => expect(world.env.violations).toEqual([]));

/** Polls `queue` as the attacker until it hands out a workflow task of `workflowId` (other tasks are left to time out). */
async function pollTask(
  connection: Connection,
  queue: { name: string; kind: number; normalName?: string },
  workflowId: string,
) {
  return eventually(
    `a workflow task of ${workflowId} on ${queue.name}`,
    async () => {
      const task = await connection.withDeadline(Date.now() + 30_000, () =>
        connection.workflowService.pollWorkflowTaskQueue({ namespace: tns, taskQueue: queue, identity: attacker }),
      );
      return task.taskToken?.length && task.workflowExecution?.workflowId === workflowId ? task : undefined;
    },
    120_000,
  );
}

/** The activity IDs of a history's activities that ended (completed, failed or timed out). */
function endedActivities(events: HistoryEvent[]): string[] {
  const scheduled = new Map(
    events.flatMap((e) => {
      const a = e.activityTaskScheduledEventAttributes;
      return a ? [[String(e.eventId), a.activityId ?? '']] : [];
    }),
  );
  return events.flatMap((e) => {
    const ended =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes;
    return ended ? [scheduled.get(String(ended.scheduledEventId)) ?? ''] : [];
  });
}

/** A ScheduleActivityTask command of the controller's activity `type` on its queue, one attempt. */
const schedule = (id: string, type: string, queue: string, args: unknown[]): Command => ({
  commandType: CommandType.COMMAND_TYPE_SCHEDULE_ACTIVITY_TASK,
  scheduleActivityTaskCommandAttributes: {
    activityId: id,
    activityType: { name: type },
    taskQueue: { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    input: { payloads: args.map((a) => defaultPayloadConverter.toPayload(a)) },
    scheduleToCloseTimeout: msToTs(300_000),
    startToCloseTimeout: msToTs(15_000),
    retryPolicy: { maximumAttempts: 1 },
  },
});

test('forged commands in the rollout’s own workflow tasks, and a continue-as-new with a forged state, scale nothing down and deploy nothing', async () => {
  const { env } = world;
  const { v1, v2, pinned } = await v2WhileV1Pinned(env, name, sunset);
  const handle = workflowHandle(env, name);
  const queue = controller!.taskQueue;
  const owner: Owner = {
    namespace: env.namespace,
    name,
    uid: await uidOf(env, name),
    kind: 'TemporalWorkerDeployment',
  };
  const ref = { owner, temporalNamespace: tns, hostPort: process.env.TEMPORAL_ADDRESS! };
  const { runId: attackedRun } = await handle.describe();

  // No controller polls: the attacker's poller is the only one on the controller's queue.
  await controller!.stop();
  controller = undefined;
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const service = connection.workflowService;
  const sticky = {
    name: `attacker-sticky-${env.namespace}`,
    kind: TaskQueueKind.TASK_QUEUE_KIND_STICKY,
    normalName: queue,
  };
  try {
    await handle.signal('wake');
    const first = await pollTask(
      connection,
      { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      handle.workflowId,
    );
    const forged = [
      schedule('forged-scale-v1', 'scaleDeployment', queue, [owner, v1, 0]),
      schedule('forged-scale-v2', 'scaleDeployment', queue, [owner, v2, 0]),
      schedule('forged-delete-v1', 'deleteDeployment', queue, [owner, v1]),
      schedule('forged-remove-finalizer', 'removeFinalizer', queue, [owner]),
      schedule('forged-set-current', 'setCurrent', queue, [ref, forgedBuild, {}]),
      schedule('forged-apply', 'ensureVersionedDeployment', queue, [
        { owner, buildId: forgedBuild, template: privilegedTemplate, replicas: 1 },
      ]),
    ];
    // The rollout's next workflow tasks go to the attacker's sticky queue, so the controller never replays these.
    await service.respondWorkflowTaskCompleted({
      namespace: tns,
      taskToken: first.taskToken,
      identity: attacker,
      commands: forged,
      stickyAttributes: { workerTaskQueue: sticky, scheduleToStartTimeout: msToTs(120_000) },
    });

    // The controller comes back and runs the forged activities; the attacker answers the tasks their results bring.
    // Its poll of the sticky queue is under way first: the server sends a task to a sticky queue only while someone
    // polls it, else to the controller's.
    const attackedHandle = env.client.workflow.getHandle(handle.workflowId, attackedRun);
    const history = async () => (await attackedHandle.fetchHistory()).events ?? [];
    const forgedIds = forged.map((c) => c.scheduleActivityTaskCommandAttributes!.activityId!);
    let next = pollTask(connection, sticky, handle.workflowId);
    controller = await startTheController();
    let task = await next;
    while (endedActivities(await history()).filter((id) => forgedIds.includes(id)).length < forged.length) {
      await service.respondWorkflowTaskCompleted({
        namespace: tns,
        taskToken: task.taskToken,
        identity: attacker,
        commands: [],
        stickyAttributes: { workerTaskQueue: sticky, scheduleToStartTimeout: msToTs(120_000) },
      });
      next = pollTask(connection, sticky, handle.workflowId);
      task = await next;
    }
    // Each forged activity ran on the controller and was refused.
    const refusedTypes = failedActivities(await history())
      .filter((f) => !f.local && f.failureTypes.includes('Refused'))
      .map((f) => f.type)
      .sort();
    expect(refusedTypes).toEqual(
      [
        'deleteDeployment',
        'ensureVersionedDeployment',
        'removeFinalizer',
        'scaleDeployment',
        'scaleDeployment',
        'setCurrent',
      ].sort(),
    );

    // The last task: a continue-as-new whose state says v1 and v2 are drained and a forged build is current.
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const forgedState: RolloutState = {
      owner,
      deprecated: [v1, v2].map((buildId) => ({
        buildId,
        deprecatedSince: hourAgo,
        status: 'Drained',
        drainedSince: hourAgo,
      })),
      current: { buildId: forgedBuild, since: hourAgo },
      phase: 'Ready',
      reason: 'RolloutComplete',
      message: 'forged',
      since: hourAgo,
      deleting: false,
      deployments: {},
      templates: { [forgedBuild]: privilegedTemplate },
      timings: defaultTimings,
    };
    await service.respondWorkflowTaskCompleted({
      namespace: tns,
      taskToken: task.taskToken,
      identity: attacker,
      commands: [
        {
          commandType: CommandType.COMMAND_TYPE_CONTINUE_AS_NEW_WORKFLOW_EXECUTION,
          continueAsNewWorkflowExecutionCommandAttributes: {
            workflowType: { name: 'RolloutWorkflow' },
            taskQueue: { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
            input: { payloads: [defaultPayloadConverter.toPayload({ owner, state: forgedState })] },
            workflowTaskTimeout: msToTs(10_000),
          },
        },
      ],
    });
  } finally {
    await connection.close();
  }

  // The forged run, on the controller: v2 stays current with its pods, v1 keeps its pods while its pinned execution
  // runs; no Deployment of the forged build or template.
  await eventually('the forged run running on the controller', async () => {
    const d = await handle.describe();
    return (
      d.runId !== attackedRun &&
      d.status.name === 'RUNNING' &&
      Number(d.raw.workflowExecutionInfo?.historyLength ?? 0) > 5
    );
  });
  // It believes v1 drained: its scale-down of v1 reads Temporal and is refused while the pinned execution runs.
  await eventually('the forged run’s scale-down of v1 refused', async () =>
    ((await handle.fetchHistory()).events ?? []).some((e) =>
      e.activityTaskFailedEventAttributes?.failure?.message?.includes(`scaling ${v1} to 0: Temporal says ${v1} is`),
    ),
  );
  await readyWith(env, name, 'v2');
  const live = await deployments(env, name);
  expect([...live.keys()].sort()).toEqual([v1, v2].sort());
  expect(live.get(v1)?.spec?.replicas).toBe(1);
  expect(live.get(v2)?.spec?.replicas).toBe(1);
  const forgedDeployments = (await env.apps.listDeploymentForAllNamespaces()).items.filter(
    (d) =>
      d.metadata?.labels?.[Labels.buildId] === forgedBuild ||
      d.spec?.template.spec?.containers.some((c) => c.image === forgedImage),
  );
  expect(forgedDeployments.map((d) => d.metadata?.name)).toEqual([]);
  expect((await pinned.describe()).status.name).toBe('RUNNING');

  // Once the pinned execution ends, v1 goes as usual; a real apply of v3 rolls out and v2 is sunset.
  await pinned.signal('finish');
  expect(await pinned.result()).toBe(v1);
  await eventually('v1 deleted', async () => !(await deployments(env, name)).has(v1), 120_000);
  await apply(env, resource(env, name, { env: { VERSION: 'v3' }, sunset }));
  const v3 = await readyWith(env, name, 'v3');
  expect([v1, v2]).not.toContain(v3);
  await eventually('v2 deleted', async () => !(await deployments(env, name)).has(v2), 120_000);
  expect(env.violations).toEqual([]);
}, 480_000);
