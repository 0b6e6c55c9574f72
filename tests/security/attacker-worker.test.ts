/**
 * A worker of the attacker's own on the controller's task queues: someone with Temporal access only polls the
 * controller's queue and its waits queue with activities of the controller's names that answer whatever suits them
 * (`awaitDrained` and `versionStatus`: drained; `describeRouting`: a made-up routing; `scaleDeployment`: done, having
 * done nothing), while a rollout's old version drains with a PINNED execution still open on it. The attacker takes
 * some of the controller's activity tasks, the drainage wait among them (the test fails the controller's own attempt
 * by hand, as the attacker could, until the attacker's worker gets one). A forged answer can make the rollout skip a
 * step; it cannot make anyone scale the old version down: the real `scaleDeployment` and `deleteDeployment` read
 * Temporal themselves. So v1 keeps its pods while the pinned execution is open, whoever ran what; once the attacker's
 * worker is gone and the execution finished, v1's sunset completes.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { workerDeploymentName } from '../../api/names.js';
import { waitsTaskQueue } from '../../workflows/task-queues.js';
import { deployments, eventually, routing, versionStatus, workflowHandle } from '../harness/rollout-env.js';
import {
  failedActivities,
  saveHistory,
  startSecurityWorld,
  tns,
  v2WhileV1Pinned,
  type SecurityWorld,
} from './security-env.js';

const name = 'attacked';
const sunset = { scaledownDelay: '1s', deleteDelay: '2s' };
const attackerIdentity = 'attacker@elsewhere';
/** How long the attacker's worker may poll at most, whatever happens. */
const attackBoundMs = 120_000;
let world: SecurityWorld;
/** The activity tasks the attacker's worker ran, by type (for the record in the test's directory, not asserted). */
const taken: Record<string, number> = {};

beforeAll(async () => {
  world = await startSecurityWorld('attacker-worker');
}, 180_000);
afterAll(async () => {
  if (world) {
    writeFileSync(join(world.dir, 'attacker-tasks.json'), JSON.stringify(taken, null, 2));
    await saveHistory(world, name);
  }
  await world?.stop();
});
afterEach(() => expect(world.env.violations).toEqual([]));

/** The attacker's answers: each counts the task it took. No workflow is registered: it runs no workflow task. */
function forgedActivities(v1: string, v2: string) {
  const count = (type: string) => void (taken[type] = (taken[type] ?? 0) + 1);
  return {
    awaitDrained: () => (count('awaitDrained'), Promise.resolve('Drained')),
    versionStatus: () => (count('versionStatus'), Promise.resolve('Drained')),
    countOpenExecutions: (_t: unknown, buildIds: string[]) => (
      count('countOpenExecutions'),
      Promise.resolve(Object.fromEntries(buildIds.map((b) => [b, 0])))
    ),
    describeRouting: () => (
      count('describeRouting'),
      Promise.resolve({
        current: v2,
        rampPercentage: 0,
        versions: [
          { buildId: v2, status: 'Current' },
          { buildId: v1, status: 'Drained' },
        ],
        propagating: false,
      })
    ),
    scaleDeployment: () => (count('scaleDeployment'), Promise.resolve()),
    /** Any other of the controller's activities: failed, retryably (as an unregistered one would be, without the noise). */
    default: () => {
      const type = Context.current().info.activityType;
      count(`other: ${type}`);
      throw ApplicationFailure.retryable(`the attacker does not do ${type}`, 'NotDone');
    },
  };
}

test('an attacker’s worker on the controller’s queues answers for the drainage: v1 keeps its pods while pinned work runs', async () => {
  const { env } = world;
  const deploymentName = workerDeploymentName(env.namespace, name);
  // v2 rolled out: v1 drains, the pinned execution holding it; the rollout waits for its drainage.
  const { v1, v2, pinned } = await v2WhileV1Pinned(env, name, sunset);
  const handle = workflowHandle(env, name);

  // The attacker's worker: its own connection, many pollers on each of the controller's queues, bounded in time.
  const queue = env.controller!.taskQueue;
  const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
  const workers = await Promise.all(
    [queue, waitsTaskQueue(queue)].map((taskQueue) =>
      Worker.create({
        connection,
        namespace: tns,
        taskQueue,
        identity: attackerIdentity,
        activities: forgedActivities(v1, v2),
        maxConcurrentActivityTaskExecutions: 40,
        maxConcurrentActivityTaskPolls: 10,
        shutdownGraceTime: '1s',
      }),
    ),
  );
  let stopAttack!: () => void;
  const attackOver = new Promise<void>((resolve) => (stopAttack = resolve));
  const bound = setTimeout(stopAttack, attackBoundMs);
  const attacking = Promise.all(workers.map((w) => w.runUntil(attackOver)));
  // v1's replicas as the apiserver has them, read as often as the test can while the pinned execution is open.
  const scaledDown: string[] = [];
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const d = await deployments(env, name).catch(() => undefined);
      const replicas = d?.get(v1)?.spec?.replicas;
      if (d && (replicas === undefined || replicas < 1)) scaledDown.push(`${new Date().toISOString()} ${replicas}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();

  try {
    // The attacker's worker answers the drainage wait: the controller's own attempt is failed by hand (as the
    // attacker could) until an attempt went to the attacker's worker.
    await eventually(
      'the attacker’s worker answering the drainage wait of v1',
      async () => {
        if (taken.awaitDrained) return true;
        const pending = (await handle.describe()).raw.pendingActivities?.find(
          (a) =>
            a.activityType?.name === 'awaitDrained' &&
            a.lastWorkerIdentity &&
            a.lastWorkerIdentity !== attackerIdentity,
        );
        // Retryable, so that the rollout schedules the wait again (the CLI's `activity fail` is non-retryable: the
        // sunset would stop, Blocked, keeping v1).
        if (pending)
          await env.client.activity.fail(
            { workflowId: handle.workflowId, activityId: pending.activityId! },
            ApplicationFailure.retryable('failed by hand so that another worker takes it'),
          );
        return false;
      },
      90_000,
      500,
    );
    // The rollout believes it and goes on to v1's scale-down (then deletion): the real activity refuses it, Temporal
    // saying v1 still drains (the attacker's worker may take an attempt of it too, and do nothing).
    const refusals = await eventually(
      'three refusals of v1’s scale-down or deletion by the real activity',
      async () => {
        const refused = failedActivities((await handle.fetchHistory()).events ?? []).filter(
          (f) => (f.type === 'scaleDeployment' || f.type === 'deleteDeployment') && f.failureTypes.includes('Refused'),
        );
        return refused.length >= 3 && refused;
      },
      60_000,
      250,
    );
    expect(refusals.length).toBeGreaterThanOrEqual(3);

    // Whatever ran where: v1 has its replicas and its pod, Temporal says it drains, the pinned execution runs.
    const v1Deployment = (await deployments(env, name)).get(v1);
    expect(v1Deployment?.spec?.replicas).toBe(1);
    expect(env.simulator.podCount(env.namespace, v1Deployment!.metadata!.name!)).toBe(1);
    expect(await versionStatus(env.connection, tns, deploymentName, v1)).toBe('DRAINING');
    expect((await pinned.describe()).status.name).toBe('RUNNING');
    expect(await routing(env, name)).toEqual({ current: v2, percentage: 0 });
    expect(scaledDown).toEqual([]);
    expect(env.violations).toEqual([]);
  } finally {
    stopAttack();
    clearTimeout(bound);
    await attacking.catch(() => undefined);
    await connection.close();
    watching = false;
    await watcher;
  }

  // The attacker's worker gone, the pinned execution finished (on v1's pod): v1's sunset completes.
  await pinned.signal('finish');
  expect(await pinned.result()).toBe(v1);
  await eventually('v1 deleted', async () => !(await deployments(env, name)).has(v1), 120_000);
  expect((await deployments(env, name)).get(v2)?.spec?.replicas).toBe(1);
  expect(await routing(env, name)).toEqual({ current: v2, percentage: 0 });
}, 360_000);
