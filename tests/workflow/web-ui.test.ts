/**
 * What the Temporal Web UI reads of a RolloutWorkflow, against the real dev server (activities played by the fake
 * world): its current details (the `__temporal_workflow_metadata` query) say where the rollout stands, every
 * activity and timer in its history has a summary, the version left draining is counted once, and Events go out
 * with the status writes. The run's history is a replay fixture (progressive-sunset-resync).
 * tests/integration/web-ui.test.ts looks at
 * the same in a browser.
 */
import { activityTypes } from '../../scripts/history.js';
import { randomUUID } from 'node:crypto';
import { staticDetails, staticSummary } from '../../workflows/details.js';
import * as messages from '../../workflows/messages.js';
import { eventually } from '../harness/eventually.js';
import { desired, fakeRigForFile } from './fake-world.js';
import { keepHistory, summaryOf } from './fixtures.js';

const rig = fakeRigForFile('web-ui', { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 });

test('the Web UI reads where a Progressive rollout stands, and a summary on every activity and timer', async () => {
  const owner = { namespace: 'shop', name: `web-ui-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  // As the watcher starts it.
  const handle = await rig.start(owner, { staticSummary: staticSummary(owner), staticDetails: staticDetails(owner) });
  const details = async () =>
    ((await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string }).currentDetails ?? '';
  const detailsSay = (what: string, pattern: RegExp) =>
    eventually(
      `the current details to say ${what}`,
      async () => ((await details()).match(pattern) ? details() : undefined),
      30_000,
    );

  await world.applySpec(desired(1, 'v1'));
  await detailsSay('v1 is current', /^\*\*v1 current since \d\d:\d\d:\d\d UTC\*\*/);
  world.openExecutions.set('v1', 3);

  const steps = [
    { rampPercentage: 25, pauseDuration: '3s' },
    { rampPercentage: 75, pauseDuration: '1s' },
  ];
  await world.applySpec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  const ramping = await detailsSay(
    'v2 ramps, with the time left',
    /^\*\*v2 ramping 25 % — step 1 of 2, [0-3]s left \(until \d\d:\d\d:\d\d UTC\); v1 current\*\*/,
  );
  expect(ramping).toContain('\n\nRamping: step 1 of 2: ramp 25% for 3s');

  // v1 is sunset: counted once as it starts draining, then it drains.
  await detailsSay(
    'v1 drains with its pinned executions',
    /^\*\*v2 current since [^;]+; v1 draining, 3 pinned executions open at \d\d:\d\d:\d\d UTC\*\*/,
  );
  expect(world.callsOf('countOpenExecutions').map((c) => c.args)).toEqual([[['v1']]]);
  world.versions.set('v1', 'Drained');
  await detailsSay('v1 is gone', /^\*\*v2 current since \d\d:\d\d:\d\d UTC\*\*/);

  // A resync round (local activities: their markers carry summaries too).
  const rounds = world.callsOf('removeStrayDeployments').length;
  await handle.signal(messages.resync);
  await eventually('a resync round', () => world.callsOf('removeStrayDeployments').length > rounds);
  // Its markers are written with its workflow task's completion, a moment after the calls.
  const resyncMarked = async () =>
    ((await handle.fetchHistory()).events ?? []).some(
      (e) => e.markerRecordedEventAttributes && summaryOf(e) === 'remove stray Deployments',
    );
  await eventually('the resync round in the history', resyncMarked);

  const description = await handle.describe();
  expect(await description.staticSummary()).toBe(`Rollouts of TemporalWorkerDeployment shop/${owner.name}`);
  expect(await description.staticDetails()).toContain(`**shop/${owner.name}**`);

  const events = (await handle.fetchHistory()).events ?? [];
  const timers = events.filter((e) => e.timerStartedEventAttributes);
  const activities = events.filter((e) => e.activityTaskScheduledEventAttributes);
  const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  const unsummarised = [...timers, ...activities, ...markers]
    .filter((e) => !summaryOf(e))
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? `event ${e.eventId}`);
  expect(unsummarised).toEqual([]);
  expect(timers.map(summaryOf)).toEqual(
    expect.arrayContaining([
      'step 1/2: ramp 25% for 3s',
      'step 2/2: ramp 75% for 1s',
      'delete v1 after sunset.deleteDelay',
    ]),
  );
  // The point of no return and the long waits are activities.
  expect(activities.map(summaryOf)).toEqual(expect.arrayContaining(['make v2 current', 'wait for v1 to drain']));
  // Reads, ramps, the sunset's writes, the resync's round and the reports run inside their tasks, summarised as
  // activities are.
  expect(markers.map(summaryOf)).toEqual(
    expect.arrayContaining([
      'read the resource',
      'ramp v2 to 25%',
      'ramp v2 to 75%',
      'count executions pinned to v1',
      'scale v1 to 0',
      'reconcile the Deployments',
      'remove stray Deployments',
      expect.stringMatching(/^write the status: Ramping, with (Event|\d+ Events:) /),
    ]),
  );
  // The Events go out with the status writes.
  expect(activityTypes(events)).not.toContain('recordEvent');
  expect(world.events.map((e) => e.reason)).toEqual(expect.arrayContaining(['VersionDrained', 'VersionScaledDown']));

  await keepHistory(world, 'progressive-sunset-resync');
});
