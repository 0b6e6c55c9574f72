/**
 * A forged completion of the registration wait: someone with Temporal access only completes the rollout's pending
 * `awaitVersionRegistered` by hand (`temporal activity complete`, a made-up VersionRegistration) while v2's workers
 * do not poll Temporal (its pods run, as Kubernetes sees them, but no worker of v2 polls: `PodSimulator.holdWorkers`). The
 * answer moves the rollout on to routing, and routing must not follow a made-up answer: a version no worker polls is
 * never made current or ramped. A server refuses a version it does not know (NOT_FOUND); one it knows without pollers
 * (the registration wait's own limit check creates the version after 10 s without pollers, and anyone with Temporal
 * access can create one) it accepts, so there the routing activity has to read the version's pollers itself. So
 * Temporal keeps routing to v1, v1 keeps its pods, and the history and the status say why. Once v2's workers poll,
 * the rollout completes by itself.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { temporal } from '@temporalio/proto';
import { workerDeploymentName } from '../../api/names.js';
import { limitCheckAfterMs } from '../../api/timings.js';
import { completedActivities, eventTime, localActivityType, scheduledActivityType } from '../../scripts/history.js';
import {
  apply,
  deployments,
  eventually,
  resource,
  routing,
  routingCalls,
  taskQueueOf,
  twdStatus,
  versionStatus,
  workflowHandle,
} from '../harness/rollout-env.js';
import { completeByHand, readyWith, startSecurityWorld, tns, type SecurityWorld } from './security-env.js';

let world: SecurityWorld;

beforeAll(async () => {
  // The status says what is retried after 3 s of failing (30 s by default): the wait for it stays short, and so does
  // the retries' backoff when v2's workers come up.
  world = await startSecurityWorld('forged-registration', {
    controller: { timings: { drainPollMaxMs: 1000, retryShownAfterMs: 3000 } },
  });
}, 180_000);
afterAll(async () => {
  for (const name of world ? ['unknown', 'known'] : []) {
    const history = await workflowHandle(world.env, name)
      .fetchHistory()
      .catch(() => undefined);
    if (history) writeFileSync(join(world.dir, `${name}-history.json`), JSON.stringify(history, null, 1));
  }
  await world?.stop();
});
afterEach(() => expect(world.env.violations).toEqual([]));

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What the forgery says: a registration of a task queue, no unversioned pollers (the current version's rule). */
const forgedRegistration = { taskQueues: ['example'], unversionedPollers: false };

/** When each failed routing call (setCurrent, setRamping; scheduled or local) failed, on the server's clock. */
function failedRoutingTimes(events: HistoryEvent[]): number[] {
  const scheduled = new Map(events.map((e) => [String(e.eventId), scheduledActivityType(e)]));
  return events
    .filter((e) => {
      const failed = e.activityTaskFailedEventAttributes;
      const type = failed
        ? scheduled.get(String(failed.scheduledEventId))
        : e.markerRecordedEventAttributes?.failure
          ? localActivityType(e)
          : undefined;
      return type === 'setCurrent' || type === 'setRamping';
    })
    .map(eventTime);
}

/**
 * v1 current; v2 applied with its workers held (they do not poll); the pending registration wait completed by hand
 * (`known`: once Temporal knows v2, created by the attacker; else at once, Temporal not knowing it yet). Asserts no
 * routing to v2 while held (for longer than the wait's limit check takes to create the version), v1 current with
 * its pods, and why in the status; then releases v2's workers and asserts the rollout completes by itself.
 */
async function forgedRegistrationOf(name: string, o: { known: boolean }) {
  const { env } = world;
  const queue = taskQueueOf(env, name);
  await apply(env, resource(env, name, { env: { VERSION: 'v1' } }));
  const v1 = await readyWith(env, name, 'v1');
  const deploymentName = workerDeploymentName(env.namespace, name);
  const handle = workflowHandle(env, name);
  const history = async () => (await handle.fetchHistory()).events ?? [];
  const hold = env.simulator.holdWorkers((e) => e.EXAMPLE_TASK_QUEUE === queue && e.VERSION === 'v2');
  // Every routing Temporal shows from here on, read as often as the test can: none may leave v1 while v2 is held.
  const seen: string[] = [];
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const r = await routing(env, name).catch(() => undefined);
      if (r && (r.current !== v1 || r.ramping)) seen.push(JSON.stringify(r));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  try {
    await apply(env, resource(env, name, { env: { VERSION: 'v2' } }));
    // v2's Deployment is Available (its pods run), its workers do not poll: the rollout waits for registration.
    const activityId = await eventually(
      'the rollout waiting in awaitVersionRegistered for v2',
      async () =>
        (await handle.describe()).raw.pendingActivities?.find((a) => a.activityType?.name === 'awaitVersionRegistered')
          ?.activityId || undefined,
      60_000,
    );
    const v2 = (await twdStatus(env, name))?.targetVersion?.buildID;
    expect(v2).toBeDefined();
    expect(v2).not.toBe(v1);
    expect((await deployments(env, name)).get(v2!)?.status?.availableReplicas).toBe(1);
    expect(hold.held()).toBe(1);
    if (o.known) {
      // The version created in Temporal with no worker polling it, as the attacker can (and as the wait's own limit
      // check does after 10 s without pollers): one that exists already is no error.
      await env.connection.workflowService
        .createWorkerDeploymentVersion({
          namespace: tns,
          deploymentVersion: { deploymentName, buildId: v2 },
          identity: 'attacker',
          requestId: randomUUID(),
        })
        .catch((err: unknown) => {
          if (!/already exists/i.test(String(err))) throw err;
        });
      await eventually(
        'Temporal knowing v2 (no poller)',
        async () => (await versionStatus(env.connection, tns, deploymentName, v2!)) !== 'NOT_FOUND',
        30_000,
        250,
      );
    }

    // The forgery: the wait completed by hand, as registered.
    const forged = await completeByHand(handle.workflowId, activityId, JSON.stringify(forgedRegistration));
    expect(forged).toMatchObject({ ok: true });
    const forgedAt = await eventually('the forged registration in the rollout’s history', async () =>
      completedActivities(await history()).find(
        (a) => a.type === 'awaitVersionRegistered' && JSON.stringify(a.result) === JSON.stringify(forgedRegistration),
      ),
    ).then((a) => a.recordedAt);
    const forgedAtHere = Date.now();

    // The controller's reaction: the routing call to v2 fails (the server refuses, or the activity does) and is tried
    // again; or the registration is waited for again. Never v2 routed to: not for longer than the registration wait's
    // limit check takes to create the version (the attempt the forgery cut short may still run it), and some more.
    const windowMs = limitCheckAfterMs + 5_000;
    const reaction = await eventually(
      `routing to v2 refused (or its registration waited for) for ${windowMs / 1000} s after the forgery, or v2 routed to`,
      async () => {
        const r = await routing(env, name);
        if (seen.length || r.current === v2 || r.ramping === v2)
          return `routed to v2 while its workers do not poll: ${seen[0] ?? JSON.stringify(r)}`;
        if (failedRoutingTimes(await history()).some((at) => at >= forgedAt + windowMs)) return 'routing refused';
        const waiting = (await handle.describe()).raw.pendingActivities?.find(
          (a) => a.activityType?.name === 'awaitVersionRegistered' && a.activityId !== activityId,
        );
        return waiting && Date.now() - forgedAtHere >= windowMs ? 'waiting again' : undefined;
      },
      120_000,
      250,
    );
    expect(reaction).toMatch(/^(routing refused|waiting again)$/);
    // The status says why: the routing call retried, with the refusal (past retryShownAfterMs of failing), or that the
    // wait for v2's pollers goes on. Meanwhile routing stays on v1 (what the watcher saw, if not, ends the wait).
    const said = await eventually(
      'the status saying why v2 is not routed to',
      async () => {
        if (seen.length) return `routing left v1 while v2's workers did not poll: ${seen[0]}`;
        const s = await twdStatus(env, name);
        const text = `${s?.phase}: ${s?.message}`;
        return reaction === 'routing refused'
          ? new RegExp(`retrying make ${v2} current since `).test(text) && text
          : s?.phase === 'WaitingForPollers' && text;
      },
      60_000,
      250,
    );
    expect(said).not.toMatch(/^routing left v1/);

    // Routing stayed on v1 all along; v1 has its pods; no routing call to v2 completed.
    expect(seen).toEqual([]);
    expect(await routing(env, name)).toEqual({ current: v1, percentage: 0 });
    expect(await versionStatus(env.connection, tns, deploymentName, v1)).toBe('CURRENT');
    const v1Deployment = (await deployments(env, name)).get(v1);
    expect(v1Deployment?.spec?.replicas).toBe(1);
    expect(env.simulator.podCount(env.namespace, v1Deployment!.metadata!.name!)).toBe(1);
    expect((await routingCalls(env, name)).filter((c) => c.buildId === v2)).toEqual([]);
    expect((await twdStatus(env, name))?.currentVersion?.buildID).toBe(v1);
    expect(env.violations).toEqual([]);

    // v2's workers poll at last: the rollout completes by itself (the retried routing call lands), v1 is sunset.
    watching = false;
    await watcher;
    hold.release();
    expect(await readyWith(env, name, 'v2')).toBe(v2);
    await eventually('v1 sunset', async () => !(await deployments(env, name)).has(v1), 120_000);
    expect(await routing(env, name)).toEqual({ current: v2, percentage: 0 });
  } finally {
    watching = false;
    await watcher;
    hold.release();
  }
}

test('a registration completed by hand before Temporal knows v2: nothing routed to v2 until its workers poll', async () => {
  await forgedRegistrationOf('unknown', { known: false });
}, 300_000);

test('a registration completed by hand once Temporal knows v2 (created by hand) without pollers: nothing routed to it until they poll', async () => {
  await forgedRegistrationOf('known', { known: true });
}, 300_000);
