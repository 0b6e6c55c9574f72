/**
 * One retry layer, against the real dev server (activities played by the fake world): every call is made once,
 * and the rollout's `call` alone makes it again, after a durable backoff; the status says what is retried only
 * once it has failed for `retryShownAfterMs`, and a refusal is not retried at all.
 */
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { eventually } from '../harness/eventually.js';
import { desired, fakeRigForFile } from './fake-world.js';
import { summaryOf } from './fixtures.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const rig = fakeRigForFile('retries', {
  drainPollMaxMs: 200,
  resyncIntervalMs: 60_000,
  maxVersions: 100,
  retryShownAfterMs: 1_500,
});
const steps = [{ rampPercentage: 25, pauseDuration: '1s' }];

async function start() {
  const owner = { namespace: 'shop', name: `retries-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  const handle = await rig.start(owner);
  const history = async (): Promise<HistoryEvent[]> => (await handle.fetchHistory()).events ?? [];
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  return { world, history };
}

test('a transient failure is retried by the call alone, one attempt each; the status says so only past retryShownAfterMs', async () => {
  const { world, history } = await start();
  let failing = true;
  world.failWith.set('setRamping', () => (failing ? new Error('deadline exceeded (the server is slow)') : undefined));
  await world.applySpec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually(
    'the status says the ramp is retried',
    () => world.statuses.some((s) => /retrying/.test(s.message ?? '')),
    30_000,
  );
  const attemptsBeforeShown = world.callsOf('setRamping').length;
  expect(attemptsBeforeShown).toBeGreaterThanOrEqual(3); // 200 ms, 400 ms, 800 ms … of backoff before 1.5 s passed
  failing = false;
  await eventually('v2 current and Ready', () => world.statuses.at(-1)?.currentVersion?.buildID === 'v2', 30_000);
  expect(world.statuses.at(-1)?.message ?? '').not.toMatch(/retrying/);
  expect(world.events.filter((e) => e.reason === 'Retrying')).toHaveLength(1); // once per cause
  const events = await history();
  const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'setRamping');
  expect(scheduled.length).toBeGreaterThanOrEqual(2);
  for (const e of scheduled) expect(e.activityTaskScheduledEventAttributes?.retryPolicy?.maximumAttempts).toBe(1);
  const backoffs = events.filter((e) => e.timerStartedEventAttributes && /^retry /.test(summaryOf(e) ?? ''));
  expect(backoffs.length).toBe(world.callsOf('setRamping').length - 2); // none after the local attempt
});

test('a refusal inside the workflow task is not made again: the rollout is Blocked, saying why', async () => {
  const { world } = await start();
  world.failWith.set('setRamping', ApplicationFailure.nonRetryable('ramp percentage refused', 'InvalidArgument'));
  await world.applySpec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually('Failed', () => world.statuses.at(-1)?.phase === 'Failed', 30_000);
  expect(world.statuses.at(-1)?.message).toMatch(/ramp percentage refused/);
  expect(world.events.map((e) => e.reason)).toContain('Blocked');
  expect(world.callsOf('setRamping')).toHaveLength(1);
});

test('a long wait that fails now and then, each failure long after the last attempt began, is never shown as retrying', async () => {
  const { world } = await start();
  await world.applySpec(desired(2, 'v2'));
  await eventually('v2 current', () => world.statuses.at(-1)?.currentVersion?.buildID === 'v2', 30_000);
  // v1 drains: three times, its wait's drainage check blips once the wait has run 2 s (past retryShownAfterMs, 1.5 s).
  let blips = 0;
  let attemptBegan: number | undefined; // the first check since the last blip: the attempt's start
  world.failWith.set('versionStatus', () => {
    attemptBegan ??= Date.now();
    if (blips >= 3 || Date.now() - attemptBegan < 2_000) return undefined;
    [blips, attemptBegan] = [blips + 1, undefined];
    return new Error('unavailable (a blip)');
  });
  await eventually('three blips', () => blips === 3, 30_000);
  world.versions.set('v1', 'Drained');
  await eventually('the VersionDeleted Event', () => world.events.some((e) => e.reason === 'VersionDeleted'), 30_000);
  expect(world.events.filter((e) => e.reason === 'Retrying')).toEqual([]);
  expect(world.statuses.filter((s) => /retrying/.test(s.message ?? ''))).toEqual([]);
});
