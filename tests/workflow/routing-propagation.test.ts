/**
 * A set-current on a server that passes routing to its task queues after answering (1.30+), against the real dev
 * server (activities played by the fake world): the set-current's own reads say when the routing got there, the
 * previous current it read as draining needs no drainage check of its own, and routing still under way when it
 * stopped reading is said in a Warning. (The activity against a real 1.32 server:
 * tests/integration/temporal-activities.test.ts.)
 */
import { randomUUID } from 'node:crypto';
import { eventually } from '../harness/eventually.js';
import { desired, fakeRigForFile } from './fake-world.js';
import { keepHistory, summaryOf } from './fixtures.js';

const rig = fakeRigForFile('routing-propagation', { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 });

async function start(o: { routingUpdateState: boolean; propagationSlow?: boolean }) {
  const owner = { namespace: 'shop', name: `propagation-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  world.routingUpdateState = o.routingUpdateState;
  world.propagationSlow = !!o.propagationSlow;
  const handle = await rig.start(owner);
  const summaries = async () => ((await handle.fetchHistory()).events ?? []).map((e) => summaryOf(e) ?? '');
  // Once the drainage wait is scheduled, the check before it (a local activity's marker) is in the history too.
  const drainageChecks = async () => {
    await eventually('the drainage wait of v1 scheduled', async () =>
      (await summaries()).some((s) => s.startsWith('wait for v1 to drain')),
    );
    return (await summaries()).filter((s) => s.startsWith('check drainage of v1')).length;
  };
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 Ready', () => world.statuses.at(-1)?.phase === 'Ready');
  await world.applySpec(desired(2, 'v2'));
  await eventually('v1 draining', () =>
    world.statuses.at(-1)?.deprecatedVersions?.some((v) => v.buildID === 'v1' && v.status === 'Draining'),
  );
  expect(world.statuses.at(-1)).toMatchObject({ phase: 'Ready', currentVersion: { buildID: 'v2' } });
  return { world, drainageChecks };
}

test('a set-current that read the previous current as draining: its sunset starts without a check of its own', async () => {
  const { world, drainageChecks } = await start({ routingUpdateState: true });
  expect(await drainageChecks()).toBe(0);
  expect(world.events.map((e) => e.reason)).not.toContain('RoutingPropagating');
  await keepHistory(world, 'routing-read-draining');
});

test('on a server without the routing update state, the sunset checks drainage first', async () => {
  const { drainageChecks } = await start({ routingUpdateState: false });
  expect(await drainageChecks()).toBeGreaterThanOrEqual(1);
});

test('routing still reaching the task queues when the set-current stopped reading: Ready, with a Warning', async () => {
  const { world } = await start({ routingUpdateState: true, propagationSlow: true });
  const warnings = world.events.filter((e) => e.reason === 'RoutingPropagating');
  expect(warnings.map((e) => [e.type, e.message.split(';')[0]])).toEqual([
    ['Warning', 'v1 is current'],
    ['Warning', 'v2 is current'],
  ]);
  expect(warnings[1]!.message).toMatch(/Temporal was still passing the routing to its task queues/);
  await keepHistory(world, 'routing-propagating');
});
