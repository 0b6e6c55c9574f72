/**
 * Routing conflict tokens against the real dev server (activities played by the fake world): each routing write
 * carries the conflict token of the last one, so it needs no describe, and the first claims the manager
 * identity on the way, with no claim activity of its own. (The activities' side against the real server:
 * tests/integration/temporal-activities.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { eventually } from '../harness/eventually.js';
import { desired, fakeRigForFile } from './fake-world.js';

const rig = fakeRigForFile('routing-tokens', { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 });

async function start() {
  const owner = { namespace: 'shop', name: `tokens-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  const handle = await rig.start(owner);
  const activities = async () =>
    ((await handle.fetchHistory()).events ?? [])
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter((n): n is string => !!n);
  return { world, handle, activities };
}

const steps = [
  { rampPercentage: 25, pauseDuration: '1s' },
  { rampPercentage: 50, pauseDuration: '1s' },
];

test('each routing write carries the last one’s token: only the first describes and claims the manager identity, and no claim activity runs', async () => {
  const { world, activities } = await start();
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  await world.applySpec(desired(2, 'v2', { strategy: 'Progressive', steps }));
  await eventually(
    'v2 current and Ready',
    () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2',
    30_000,
  );

  expect(world.sequence(['setCurrent', 'setRamping'])).toEqual([
    'setCurrent',
    'setRamping',
    'setRamping',
    'setCurrent',
  ]);
  // v1's write has no token yet: it describes and claims (token 1 → 2), and writes (→ 3). Every later write
  // carries the token the one before returned: no describe, no claim.
  expect(world.routingOptions).toEqual([
    { claim: true },
    { conflictToken: '3', claim: true },
    { conflictToken: '4', claim: true },
    { conflictToken: '5', claim: true },
  ]);
  expect({ describes: world.describes, claims: world.claims, stale: world.staleTokens }).toEqual({
    describes: 1,
    claims: 1,
    stale: 0,
  });
  expect(await activities()).not.toContain('claimManager');
});

test('after someone else’s write the token is stale: that write falls back to a describe, the next has a fresh token again', async () => {
  const { world } = await start();
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  await world.applySpec(
    desired(2, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 25, pauseDuration: '1h' }] }),
  );
  await eventually('v2 ramping', () => world.statuses.at(-1)?.phase === 'Ramping');

  world.routingToken += 5; // someone else wrote (a person's `temporal worker deployment` command)
  await world.applySpec(
    desired(3, 'v2', { strategy: 'Progressive', steps: [{ rampPercentage: 25, pauseDuration: '1s' }] }),
  );
  await eventually(
    'v2 current',
    () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v2',
    30_000,
  );
  // The set-current carried v2's ramp's token, stale by then: it described (no claim: the identity is still ours)
  // and returned a fresh token, which v3's write carries.
  expect(world.routingOptions.at(-1)).toEqual({ conflictToken: '4', claim: true });
  expect({ describes: world.describes, claims: world.claims, stale: world.staleTokens }).toEqual({
    describes: 2,
    claims: 1,
    stale: 1,
  });
  await world.applySpec(desired(4, 'v3'));
  await eventually(
    'v3 current',
    () => world.statuses.at(-1)?.phase === 'Ready' && world.statuses.at(-1)?.currentVersion?.buildID === 'v3',
    30_000,
  );
  expect(world.routingOptions.at(-1)).toEqual({ conflictToken: '10', claim: true });
  expect({ describes: world.describes, stale: world.staleTokens }).toEqual({ describes: 2, stale: 1 });
});
