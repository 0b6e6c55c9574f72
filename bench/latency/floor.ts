/**
 * The floor: the same routing calls made raw, as Glidepath makes them (a describe for the conflict token, then the
 * change), on worker deployments of their own on the same server, in the order and spacing of a rollout: v1
 * current and the manager claimed, then v2's workers start, and the moment v2 is registered its first ramp, a
 * step change a second later, set current a second later, and a rollback to v1 two seconds after that. Once one
 * deployment at a time, then as many at once as Glidepath rolled out (the server answers ten at once slower).
 *
 * The describes are the product's settled reads (temporal/describe.ts), through the server's continue-as-new window;
 * every call is retried through transient refusals (./retrying.ts). On a server that passes a set-current on to the
 * task queues after answering it (1.30+), a set-current is done when a describe says the routing reached them, as
 * Glidepath's is (activities/routing.ts): read at once, then after 100 ms doubling to 1 s.
 */
import type { Worker } from '@temporalio/worker';
import { createExampleWorker } from '../../examples/worker/worker.js';
import { propagationBoundMs, routingOf } from '../../activities/routing.js';
import { describeDeploymentSettled } from '../../temporal/describe.js';
import { serverFeatures } from '../../temporal/server-version.js';
import { NotYet, retrying } from './retrying.js';
import { sleep, until, type World } from './world.js';

export type Floor = Record<'describe' | 'firstRamp' | 'stepRamp' | 'setCurrent' | 'rollback', number[]> & {
  /** Rollouts of the floor run, and why those that failed did. */
  rollouts: number;
  failures: string[];
};

/**
 * How long after v1 is current v2's workers start: the floor's spacing (2 s, the manager claim, 2 s), which the
 * benchmark's own rollouts keep too. On 1.30+ a worker deployment's describes wait out its continue-as-new for
 * about 2 s after a set-current: a v2 closer behind would measure that window on one side only.
 */
export const v2AfterV1Ms = 4000;

/** Times `call` into `into`: the attempt that answered (a refused one is retried, and not counted). */
const timed = (what: string, into: number[], call: () => Promise<unknown>) =>
  retrying(what, async () => {
    const t0 = performance.now();
    await call();
    into.push(performance.now() - t0);
  });

async function floorRollout(world: World, deploymentName: string, taskQueue: string, floor: Floor): Promise<void> {
  const svc = world.connection.workflowService;
  const env = (buildId: string) => ({
    TEMPORAL_ADDRESS: world.serverAddress,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_DEPLOYMENT_NAME: deploymentName,
    TEMPORAL_WORKER_BUILD_ID: buildId,
    EXAMPLE_TASK_QUEUE: taskQueue,
  });
  const describe = async () =>
    (await describeDeploymentSettled(svc, 'default', deploymentName)) ??
    Promise.reject(new NotYet(`worker deployment ${deploymentName} not found`));
  const token = async () => (await describe()).conflictToken;
  // A raw describe: `until` reads again through any refusal, and this tight poll is not to cost the server more.
  const registered = (buildId: string) =>
    until(
      async () =>
        ((
          await svc.describeWorkerDeploymentVersion({
            namespace: 'default',
            deploymentVersion: { deploymentName, buildId },
          })
        ).versionTaskQueues?.length ?? 0) >= 2 || undefined,
      2,
    );
  const { routingUpdateState } = await serverFeatures(world.connection);
  const propagated = async () => {
    const started = performance.now();
    for (let delayMs = 100; routingOf(await describe()).propagating; delayMs = Math.min(delayMs * 2, 1000)) {
      if (performance.now() - started + delayMs > propagationBoundMs) return; // where Glidepath stops reading too
      await sleep(delayMs);
    }
  };
  const setCurrent = (buildId: string) => async () => {
    await svc.setWorkerDeploymentCurrentVersion({
      namespace: 'default',
      deploymentName,
      buildId,
      conflictToken: await token(),
      identity: 'glidepath',
    });
    if (routingUpdateState) await propagated();
  };
  const ramp = (percentage: number) => async () =>
    svc.setWorkerDeploymentRampingVersion({
      namespace: 'default',
      deploymentName,
      buildId: 'v2',
      percentage,
      conflictToken: await token(),
      identity: 'glidepath',
    });
  const workers: Worker[] = [];
  const running: Promise<unknown>[] = [];
  const start = async (buildId: string) => {
    const worker = await createExampleWorker(env(buildId));
    workers.push(worker);
    running.push(worker.run().catch((err: unknown) => err)); // a worker's failure is the rollout's, not the process's
  };
  try {
    await start('v1');
    await registered('v1');
    await retrying('set current v1', setCurrent('v1'));
    await sleep(v2AfterV1Ms / 2);
    await retrying('claim the manager identity', async () =>
      svc.setWorkerDeploymentManager({
        namespace: 'default',
        deploymentName,
        self: true,
        conflictToken: await token(),
        identity: 'glidepath',
      }),
    );
    await sleep(v2AfterV1Ms / 2);
    await start('v2');
    await registered('v2');
    await timed('first ramp', floor.firstRamp, ramp(20));
    await sleep(1000);
    await timed('ramp step change', floor.stepRamp, ramp(60));
    await sleep(1000);
    await timed('set current v2', floor.setCurrent, setCurrent('v2'));
    await sleep(2000);
    await timed('describe', floor.describe, describe);
    await timed('set current back to v1', floor.rollback, setCurrent('v1'));
  } finally {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await Promise.all(running);
  }
}

/**
 * The floor over `count` worker deployments named `<prefix>/f<i>`, one at a time or all at once. A rollout that
 * fails is counted, with why, and the others go on; the floor fails only when every one did.
 */
export async function runFloor(world: World, prefix: string, count: number, atOnce: boolean): Promise<Floor> {
  const floor: Floor = {
    describe: [],
    firstRamp: [],
    stepRamp: [],
    setCurrent: [],
    rollback: [],
    rollouts: count,
    failures: [],
  };
  const one = (i: number) =>
    floorRollout(world, `${prefix}/f${i}`, `${prefix}-${i}`, floor).catch((err: unknown) => {
      const reason = `${prefix}/f${i}: ${err instanceof Error ? err.message : String(err)}`;
      console.log(`  the floor's rollout ${reason}`);
      floor.failures.push(reason);
    });
  if (atOnce) await Promise.all(Array.from({ length: count }, (_, i) => one(i)));
  else for (let i = 0; i < count; i++) await one(i);
  if (floor.failures.length === count)
    throw new Error(`every rollout of the floor failed; the first: ${floor.failures[0]}`);
  return floor;
}
