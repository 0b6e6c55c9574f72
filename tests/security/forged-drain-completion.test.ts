/**
 * A forged completion of a long wait: someone with Temporal access only completes the rollout's pending
 * `awaitDrained` by hand (`temporal activity complete --result '"Drained"'`) while an execution pinned to the old
 * version is still open. The answer is not trusted: the scale-down reads Temporal again and is refused (or the
 * rollout reads the drainage again and waits on), so the old version keeps its pods while the execution is open;
 * once it completes, the old version drains, is scaled down and deleted as usual.
 */
import { workerDeploymentName } from '../../api/names.js';
import { completedActivities } from '../../scripts/history.js';
import { deployments, eventually, versionStatus, workflowHandle } from '../harness/rollout-env.js';
import {
  completeByHand,
  failedActivities,
  saveHistory,
  startSecurityWorld,
  tns,
  v2WhileV1Pinned,
  type SecurityWorld,
} from './security-env.js';

const name = 'drain';
const sunset = { scaledownDelay: '1s', deleteDelay: '2s' };
let world: SecurityWorld;

beforeAll(async () => {
  world = await startSecurityWorld('forged-drain');
}, 180_000);
afterAll(async () => {
  await saveHistory(world, name);
  await world?.stop();
});
afterEach(() => expect(world.env.violations).toEqual([]));

test('a Drained completed by hand for awaitDrained scales nothing down while a pinned execution is open', async () => {
  const { env } = world;
  const deploymentName = workerDeploymentName(env.namespace, name);
  const { v1, v2, pinned } = await v2WhileV1Pinned(env, name, sunset);
  expect(v2).not.toBe(v1);
  const handle = workflowHandle(env, name);
  const history = async () => (await handle.fetchHistory()).events ?? [];
  const activityId = await eventually(
    'the rollout waiting in awaitDrained for v1',
    async () =>
      (await handle.describe()).raw.pendingActivities?.find((a) => a.activityType?.name === 'awaitDrained')
        ?.activityId || undefined,
    60_000,
  );

  // The forgery: the wait completed by hand, as drained.
  const forged = await completeByHand(handle.workflowId, activityId, '"Drained"');
  expect(forged).toMatchObject({ ok: true });
  await eventually('the forged Drained in the rollout’s history', async () =>
    completedActivities(await history()).some((a) => a.type === 'awaitDrained' && a.result === 'Drained'),
  );

  // The controller's reaction: the scale-down of v1 refused, or the drainage read again and waited on; never v1
  // at 0 replicas.
  const reaction = await eventually(
    'the scale-down of v1 refused, a new wait for its drainage, or v1 scaled to 0',
    async () => {
      if ((await deployments(env, name)).get(v1)?.spec?.replicas === 0) return 'v1 scaled to 0';
      if (
        failedActivities(await history()).some(
          (f) => f.type === 'scaleDeployment' && f.failureTypes.includes('Refused'),
        )
      )
        return 'scale-down refused';
      const waiting = (await handle.describe()).raw.pendingActivities?.find(
        (a) => a.activityType?.name === 'awaitDrained' && a.activityId !== activityId,
      );
      return waiting ? 'waiting again' : undefined;
    },
    60_000,
  );
  expect(['scale-down refused', 'waiting again']).toContain(reaction);
  const v1Deployment = (await deployments(env, name)).get(v1);
  expect(v1Deployment?.spec?.replicas).toBe(1);
  expect(env.simulator.podCount(env.namespace, v1Deployment!.metadata!.name!)).toBe(1);
  expect(await versionStatus(env.connection, tns, deploymentName, v1)).toBe('DRAINING');
  expect((await pinned.describe()).status.name).toBe('RUNNING');
  expect(env.violations).toEqual([]);

  // Once the pinned execution completes (on v1's pod), v1 drains for real and goes: scaled to 0, then deleted.
  await pinned.signal('finish');
  expect(await pinned.result()).toBe(v1);
  await eventually('v1 scaled to 0', async () => (await deployments(env, name)).get(v1)?.spec?.replicas === 0, 120_000);
  await eventually('v1 deleted', async () => !(await deployments(env, name)).has(v1), 60_000);
  expect((await deployments(env, name)).get(v2)?.spec?.replicas).toBe(1);
}, 300_000);
