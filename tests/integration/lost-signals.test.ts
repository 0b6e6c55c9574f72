/**
 * Signals wake the workflow; the truth is read. With every Deployment signal of the watcher lost (none is
 * sent at all), rollouts still complete: the workflow reads the Deployments it waits on, with backoff.
 */
import { localActivityType, scheduledActivityType } from '../../scripts/history.js';
import {
  apply,
  eventually,
  resource,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
} from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('lost', {
    controller: { signalDeployments: false, timings: { drainPollMaxMs: 1000, recheckMaxMs: 2000 } },
  });
});
afterAll(async () => {
  await env?.stop();
});

test('every "Deployment available" signal lost: v1 and then v2 still become current, by the workflow reading the Deployments', async () => {
  await apply(env, resource(env, 'quiet', { env: { VERSION: 'v1' } }));
  const v1 = await eventually(
    'v1 current',
    async () => {
      const s = await twdStatus(env, 'quiet');
      return s?.phase === 'Ready' ? s.currentVersion?.buildID : undefined;
    },
    90_000,
  );
  await apply(env, resource(env, 'quiet', { env: { VERSION: 'v2' } }));
  const v2 = await eventually(
    'v2 current',
    async () => {
      const s = await twdStatus(env, 'quiet');
      return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1 ? s.currentVersion?.buildID : undefined;
    },
    90_000,
  );
  expect(v2).toBeDefined();

  // No deploymentObserved reached the workflow; the reads did the work.
  const events = (await workflowHandle(env, 'quiet').fetchHistory()).events ?? [];
  const signals = events.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName).filter(Boolean);
  // Inside the workflow task (a local activity's marker) or as an activity.
  const reads = events.filter((e) => (scheduledActivityType(e) ?? localActivityType(e)) === 'readDeployment');
  expect(signals).not.toContain('deploymentObserved');
  expect(reads.length).toBeGreaterThan(0);
  expect(env.violations).toEqual([]);
});
