/**
 * Adoption of a worker deployment temporal-worker-controller managed, against the real dev server
 * with the fake world: the other controller's current version runs the spec's template, so it is the spec's build —
 * no Deployment rendered, no ramp, no routing change — and its older version is sunset like ours; a later template
 * rolls out as usual and sunsets the adopted build too. The first run's history is a replay fixture (adopt-twc).
 */
import { randomUUID } from 'node:crypto';
import * as messages from '../../workflows/messages.js';
import type { RolloutStatus } from '../../workflows/state.js';
import { eventually } from '../harness/eventually.js';
import { desired, fakeRigForFile } from './fake-world.js';
import { keepHistory } from './fixtures.js';

const rig = fakeRigForFile('migration', { drainPollMaxMs: 200, resyncIntervalMs: 60_000, maxVersions: 100 });
const steps = [{ rampPercentage: 50, pauseDuration: '1s' }];

/** What temporal-worker-controller left: v1 current (the spec's template), v0 draining; their Deployments up. */
async function migrated(label: string, v1MatchesTemplate = true) {
  const owner = {
    namespace: 'shop',
    name: `${label}-${randomUUID().slice(0, 8)}`,
    uid: randomUUID(),
    kind: 'WorkerDeployment' as const,
  };
  const world = rig.world(owner);
  for (const [buildId, status, matchesTemplate] of [
    ['1.0.0-aa11', 'Draining', false],
    ['1.0.0-bb22', 'Current', v1MatchesTemplate],
  ] as const) {
    world.apply(buildId, 2);
    world.versions.set(buildId, status);
    world.foreign.set(buildId, { deploymentName: `${owner.name}-1-0-0-${buildId.slice(-4)}`, matchesTemplate });
  }
  world.current = '1.0.0-bb22';
  const handle = await rig.start(owner);
  const until = (what: string, probe: (s: RolloutStatus) => boolean) =>
    eventually(what, async () => {
      const s = await handle.query(messages.status);
      return probe(s) ? s : undefined;
    });
  return { owner, world, handle, until };
}

test('an unchanged template is the adopted build: no Deployment rendered, no ramp; v0 sunset; a new template rolls out and sunsets the adopted build', async () => {
  const { world, handle, until } = await migrated('adopt');
  await world.applySpec({ ...desired(1, 'g1', { strategy: 'Progressive', steps }), kind: 'WorkerDeployment' });
  const ready = await until('the adopted v1 current', (s) => s.phase === 'Ready' && s.current === '1.0.0-bb22');
  expect(ready.target).toBeUndefined();
  expect(world.callsOf('adoptForeignDeployments')).toHaveLength(1);
  expect(world.callsOf('ensureVersionedDeployment')).toHaveLength(0);
  expect(world.callsOf('setRamping')).toHaveLength(0);
  expect(world.current).toBe('1.0.0-bb22');
  // The adopted Deployment gets the spec's settings, under the other controller's name (the status says it).
  expect(world.callsOf('updateAdoptedDeployment').map((c) => c.args)).toContainEqual(['1.0.0-bb22', 2]);
  const written = await eventually('the status written', () => world.statuses.find((st) => st.phase === 'Ready'));
  expect(written.currentVersion).toMatchObject({
    buildID: '1.0.0-bb22',
    deploymentName: expect.stringMatching(/-1-0-0-bb22$/),
  });
  expect(ready.deprecated.map((v) => v.buildId)).toEqual(['1.0.0-aa11']);

  // v0 drains, then goes as ours do.
  world.versions.set('1.0.0-aa11', 'Drained');
  await until('v0 sunset', (s) => s.deprecated.length === 0);
  expect(world.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'], '1.0.0-aa11')).toEqual([
    'scaleDeployment',
    'deleteDeployment',
    'deleteVersion',
  ]);

  // A new generation of the same template is still the adopted build: nothing happens.
  await world.applySpec({ ...desired(2, 'g1', { strategy: 'Progressive', steps }), kind: 'WorkerDeployment' });
  await until('generation 2 taken', (s) => s.generation === 2);
  expect(world.callsOf('ensureVersionedDeployment')).toHaveLength(0);
  expect((await handle.query(messages.status)).current).toBe('1.0.0-bb22');

  // A new template: a new build, rolled out through its step; the adopted v1 is sunset.
  await world.applySpec({ ...desired(3, 'g2', { strategy: 'Progressive', steps }), kind: 'WorkerDeployment' });
  await until('g2 current', (s) => s.phase === 'Ready' && s.current === 'g2');
  expect(world.callsOf('setRamping').map((c) => c.args)).toEqual([['g2', 50]]);
  world.versions.set('1.0.0-bb22', 'Drained');
  await until('v1 sunset', (s) => s.deprecated.length === 0);
  expect(world.sequence(['scaleDeployment', 'deleteDeployment', 'deleteVersion'], '1.0.0-bb22')).toEqual([
    'scaleDeployment',
    'deleteDeployment',
    'deleteVersion',
  ]);
  await keepHistory(world, 'adopt-twc');
});

test('a changed template at migration: the new build rolls out from the adopted current, which is then sunset', async () => {
  const { world, handle, until } = await migrated('changed', false);
  await world.applySpec({ ...desired(1, 'g1', { strategy: 'Progressive', steps }), kind: 'WorkerDeployment' });
  await until('g1 current', (s) => s.phase === 'Ready' && s.current === 'g1');
  expect(world.callsOf('setRamping').map((c) => c.args)).toEqual([['g1', 50]]);
  expect(world.callsOf('ensureVersionedDeployment').map((c) => c.args[0])).toEqual(['g1']);
  const s = await handle.query(messages.status);
  expect(s.deprecated.map((v) => v.buildId).sort()).toEqual(['1.0.0-aa11', '1.0.0-bb22']);
});

test('a template that could not be compared (the dry run refused): a Warning Event says why a new version rolls out', async () => {
  const { world, until } = await migrated('unchecked', false);
  for (const [buildId, f] of world.foreign)
    world.foreign.set(buildId, { ...f, templateUnchecked: 'admission webhook "quota" denied the request' });
  await world.applySpec({ ...desired(1, 'g1', { strategy: 'Progressive', steps }), kind: 'WorkerDeployment' });
  await until('g1 current', (s) => s.phase === 'Ready' && s.current === 'g1');
  const warning = await eventually('the Warning Event', () =>
    world.events.find((e) => e.reason === 'AdoptionTemplateUnchecked'),
  );
  expect(warning).toMatchObject({
    type: 'Warning',
    message: expect.stringContaining('admission webhook "quota" denied the request'),
  });
});

test('adoption is looked for once, before the first rollout: a lifecycle with nothing foreign rolls out as before', async () => {
  const owner = { namespace: 'shop', name: `plain-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  const handle = await rig.start(owner);
  await world.applySpec(desired(1, 'v1'));
  await eventually('v1 current', async () => (await handle.query(messages.status)).current === 'v1');
  await world.applySpec(desired(2, 'v2'));
  await eventually('v2 current', async () => (await handle.query(messages.status)).current === 'v2');
  expect(world.callsOf('adoptForeignDeployments')).toHaveLength(1);
  // The first Deployment came with the adoption check, one activity; v2's had no check before it.
  const { events } = await rig.client.workflow.getHandle(handle.workflowId).fetchHistory();
  const scheduled = (events ?? []).flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
  expect(
    scheduled.filter((n) => /^(adoptOrApplyDeployment|adoptForeignDeployments|ensureVersionedDeployment)$/.test(n)),
  ).toEqual(['adoptOrApplyDeployment', 'ensureVersionedDeployment']);
  expect(world.callsOf('ensureVersionedDeployment').map((c) => c.args[0])).toEqual(['v1', 'v2']);
  await keepHistory(world, 'first-apply');
});

test('a new spec while the first apply is in flight: the Deployment ends with the spec in force', async () => {
  const owner = { namespace: 'shop', name: `inflight-${randomUUID().slice(0, 8)}`, uid: randomUUID() };
  const world = rig.world(owner);
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding = false;
  world.applyHold = () => {
    holding = true;
    return held;
  };
  const handle = await rig.start(owner);
  await world.applySpec(desired(1, 'v1'));
  await eventually('the first apply held', () => holding);
  world.applyHold = undefined;
  // Three replicas instead of two, same template: the re-apply runs at once, the held apply of generation 1 lands after it.
  const more = desired(2, 'v1');
  await world.applySpec({ ...more, spec: { ...more.spec, replicas: 3 } });
  await eventually('generation 2 re-applied', () =>
    world.callsOf('ensureVersionedDeployment').some((c) => c.args[1] === 2),
  );
  release();
  await eventually('v1 current', async () => (await handle.query(messages.status)).current === 'v1');
  expect(world.callsOf('ensureVersionedDeployment').at(-1)?.args).toEqual(['v1', 2]);
  expect(world.deployments.get('v1')?.replicas).toBe(3);
});
