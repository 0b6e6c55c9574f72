/**
 * desiredOf: the one derivation of a resource object's `Desired`, shared by the watcher (its caches) and the
 * workflow's readResource activity (the apiserver). A spec it cannot roll out is said the way the watcher reports it.
 */
import { computeBuildId } from '../../api/build-id.js';
import { desiredOf, type ConnectionLookup, type DesiredResult } from '../../api/desired.js';
import type { ConnectionKind, ResourceKind } from '../../api/kinds.js';

const template = { spec: { containers: [{ name: 'worker', image: 'orders:1.4.2' }] } };
const workerOptions = { connectionRef: { name: 'temporal' }, temporalNamespace: 'orders' };
const metadata = { name: 'orders', namespace: 'shop', uid: 'uid-1', generation: 7, resourceVersion: '42' };
const connectionSpec = { hostPort: 'temporal.shop:7233' };

const twd = (spec: Record<string, unknown> = {}) => ({
  apiVersion: 'glidepath.dev/v1alpha1',
  kind: 'TemporalWorkerDeployment',
  metadata,
  spec: { replicas: 2, rollout: { strategy: 'AllAtOnce' }, workerOptions, template, ...spec },
});
const wd = (spec: Record<string, unknown> = {}) => ({
  apiVersion: 'glidepath.dev/v1alpha1',
  kind: 'WorkerDeployment',
  metadata,
  spec: { rollout: { strategy: 'AllAtOnce' }, workerOptions, deployment: { replicas: 2, template }, ...spec },
});

/** A lookup that knows `connections` (by `kind namespace/name`) and records each call. */
function lookup(connections: Record<string, string>) {
  const calls: { kind: ConnectionKind; name: string; namespace: string }[] = [];
  const fn: ConnectionLookup = (ref, namespace) => {
    calls.push({ ...ref, namespace });
    const resourceVersion = connections[`${ref.kind} ${namespace}/${ref.name}`];
    return resourceVersion === undefined
      ? { ok: false, problem: `${ref.kind} ${namespace}/${ref.name} not found` }
      : { ok: true, spec: connectionSpec, resourceVersion };
  };
  return { fn, calls };
}

const buildId = computeBuildId(template);

test.each<{
  name: string;
  obj: unknown;
  kind: ResourceKind;
  connections: Record<string, string>;
  expected: DesiredResult;
  lookedUp: ConnectionKind[];
}>([
  {
    name: 'a valid TemporalWorkerDeployment: its TemporalConnection by default',
    obj: twd(),
    kind: 'TemporalWorkerDeployment',
    connections: { 'TemporalConnection shop/temporal': '11' },
    lookedUp: ['TemporalConnection'],
    expected: {
      ok: true,
      desired: {
        generation: 7,
        uid: 'uid-1',
        kind: 'TemporalWorkerDeployment',
        buildId,
        connection: connectionSpec,
        connectionVersion: '11',
        spec: expect.objectContaining({
          replicas: 2,
          template,
          workerOptions: { ...workerOptions, connectionRef: { kind: 'TemporalConnection', name: 'temporal' } },
        }),
      },
    },
  },
  {
    name: 'a valid WorkerDeployment: normalized, its Connection by default, the same build as the same template in a TemporalWorkerDeployment',
    obj: wd(),
    kind: 'WorkerDeployment',
    connections: { 'Connection shop/temporal': '12' },
    lookedUp: ['Connection'],
    expected: {
      ok: true,
      desired: {
        generation: 7,
        uid: 'uid-1',
        kind: 'WorkerDeployment',
        buildId,
        connection: connectionSpec,
        connectionVersion: '12',
        spec: expect.objectContaining({
          replicas: 2,
          template,
          workerOptions: { ...workerOptions, connectionRef: { kind: 'Connection', name: 'temporal' } },
        }),
      },
    },
  },
  {
    name: 'an invalid spec: InvalidSpec naming the field, and no connection looked up',
    obj: twd({ replicas: -1 }),
    kind: 'TemporalWorkerDeployment',
    connections: { 'TemporalConnection shop/temporal': '11' },
    lookedUp: [],
    expected: {
      ok: false,
      phase: 'InvalidSpec',
      reason: 'InvalidSpec',
      problem: expect.stringMatching(/^spec\.replicas: /),
    },
  },
  {
    name: "a missing connection: Pending, ConnectionNotFound with the lookup's problem",
    obj: twd(),
    kind: 'TemporalWorkerDeployment',
    connections: { 'Connection shop/temporal': '12' },
    lookedUp: ['TemporalConnection'],
    expected: {
      ok: false,
      phase: 'Pending',
      reason: 'ConnectionNotFound',
      problem: 'TemporalConnection shop/temporal not found',
    },
  },
  {
    name: 'a bad unsafeCustomBuildID: InvalidSpec naming the field',
    obj: twd({ workerOptions: { ...workerOptions, unsafeCustomBuildID: '---' } }),
    kind: 'TemporalWorkerDeployment',
    connections: { 'TemporalConnection shop/temporal': '11' },
    lookedUp: [],
    expected: {
      ok: false,
      phase: 'InvalidSpec',
      reason: 'InvalidSpec',
      problem: expect.stringMatching(/^spec\.workerOptions\.unsafeCustomBuildID: /),
    },
  },
])('$name', async ({ obj, kind, connections, expected, lookedUp }) => {
  const { fn, calls } = lookup(connections);
  expect(await desiredOf(obj, kind, fn)).toEqual(expected);
  expect(calls).toEqual(lookedUp.map((k) => ({ kind: k, name: 'temporal', namespace: 'shop' })));
});

test('a good unsafeCustomBuildID is the build ID, as it is', async () => {
  const { fn } = lookup({ 'TemporalConnection shop/temporal': '11' });
  const result = await desiredOf(
    twd({ workerOptions: { ...workerOptions, unsafeCustomBuildID: 'v2.0_rc1' } }),
    'TemporalWorkerDeployment',
    fn,
  );
  expect(result.ok && result.desired.buildId).toBe('v2.0_rc1');
});

test('an asynchronous lookup is awaited, and an explicit connectionRef kind (a ClusterConnection) is the one looked up', async () => {
  const calls: string[] = [];
  const result = await desiredOf(
    twd({ workerOptions: { ...workerOptions, connectionRef: { kind: 'ClusterConnection', name: 'shared' } } }),
    'TemporalWorkerDeployment',
    async (ref) => {
      calls.push(`${ref.kind} ${ref.name}`);
      await new Promise((r) => setTimeout(r, 5));
      return { ok: false, problem: 'ClusterConnection shared: forbidden' };
    },
  );
  expect(calls).toEqual(['ClusterConnection shared']);
  expect(result).toEqual({
    ok: false,
    phase: 'Pending',
    reason: 'ConnectionNotFound',
    problem: 'ClusterConnection shared: forbidden',
  });
});
