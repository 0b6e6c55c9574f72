import * as k8s from '@kubernetes/client-node';
import { rolloutWorkflowId } from '../../api/names.js';
import { notThisInstallations } from '../../workflows/decisions.js';
import { controllerNamespace, idOfConfigMap, keepStep, resolveStep } from '../../worker/installation.js';
import type { ResourceRead } from '../../activities/index.js';

const owner = { namespace: 'shop', name: 'orders', uid: 'u1', kind: 'TemporalWorkerDeployment' as const };
const found = (extra: Partial<Extract<ResourceRead, { found: true }>> = {}): ResourceRead => ({
  found: true,
  uid: 'u1',
  kind: 'TemporalWorkerDeployment',
  resourceVersion: '7',
  generation: 1,
  deleting: false,
  installation: 'one',
  ...extra,
});

describe('notThisInstallations', () => {
  const ours = rolloutWorkflowId('one', 'shop', 'orders');
  test('the workflow of its resource under the controller installation, claimed by it or by none, is this one', () => {
    expect(notThisInstallations(ours, owner, found({ claimedBy: 'one' }))).toBeUndefined();
    expect(notThisInstallations(ours, owner, found())).toBeUndefined();
    expect(notThisInstallations(ours, owner, { found: false, installation: 'one' })).toBeUndefined();
  });
  test('another installation claimed the resource: touch nothing, and say who has it', () => {
    expect(notThisInstallations(ours, owner, found({ claimedBy: 'two' }))).toBe(
      'installation two rolls out shop/orders',
    );
  });
  test.each([
    ['another installation', rolloutWorkflowId('two', 'shop', 'orders')],
    ['another resource', rolloutWorkflowId('one', 'shop', 'payments')],
    ['an ID of its own', 'attacker-chosen'],
  ])("a run under %s's ID is not this installation's", (_, workflowId) => {
    expect(notThisInstallations(workflowId, owner, found({ claimedBy: 'one' }))).toBe(`its workflow ID is not ${ours}`);
  });
  test('a new object under the name, claimed elsewhere, is not a reason: the run cleans up its own lifecycle', () => {
    expect(notThisInstallations(ours, owner, found({ uid: 'u2', claimedBy: 'two' }))).toBeUndefined();
  });
  test('a read that names no installation decides nothing', () => {
    expect(notThisInstallations(ours, owner, found({ installation: undefined }))).toBe(
      'the controller named no installation',
    );
  });
});

describe('controllerNamespace', () => {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u', namespace: 'ctx-ns' }],
    currentContext: 'x',
  });
  const noFile = () => {
    throw new Error('ENOENT');
  };
  test("in a pod on its own cluster the pod's namespace, else the first watched one (a namespaced Role covers only those), then the context's", () => {
    const inCluster = new k8s.KubeConfig();
    inCluster.loadFromClusterAndUser(
      { name: 'inCluster', server: 'https://10.0.0.1:443', skipTLSVerify: false },
      { name: 'inClusterUser' },
    );
    expect(controllerNamespace(inCluster, ['team-a', 'team-b'], () => 'glidepath-system\n')).toBe('glidepath-system');
    // A kubeconfig of another cluster, even from inside a pod: the pod's namespace says nothing there.
    expect(controllerNamespace(kc, ['team-a', 'team-b'], () => 'glidepath-system\n')).toBe('team-a');
    expect(controllerNamespace(kc, ['team-a', 'team-b'], noFile)).toBe('team-a');
    expect(controllerNamespace(kc, [], noFile)).toBe('ctx-ns');
  });
  test('default when nothing says', () => {
    const bare = new k8s.KubeConfig();
    bare.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    expect(controllerNamespace(bare, undefined, noFile)).toBe('default');
  });
});

describe('idOfConfigMap', () => {
  test('data.id when set, else the first 8 hex digits of the uid', () => {
    expect(
      idOfConfigMap({ metadata: { uid: 'AB12cd34-0000-4000-8000-000000000000' }, data: { id: 'team-a' } }),
    ).toEqual({ id: 'team-a' });
    expect(idOfConfigMap({ metadata: { uid: 'AB12cd34-0000-4000-8000-000000000000' } })).toEqual({ id: 'ab12cd34' });
  });
  test('a data.id that cannot go into names is refused, naming the field', () => {
    expect(idOfConfigMap({ metadata: { uid: 'ab12cd34-0000' }, data: { id: 'Team A' } })).toEqual({
      problem: expect.stringContaining('data.id "Team A"'),
    });
  });
});

describe('resolveStep', () => {
  const uid = 'AB12cd34-0000-4000-8000-000000000000';
  test.each<[string, k8s.V1ConfigMap | undefined, ReturnType<typeof resolveStep>]>([
    ['missing (404): created', undefined, { do: 'create' }],
    [
      'without data.id (new, or of older manifests): the ID its uid gives, written fenced on the resourceVersion read',
      { metadata: { uid, resourceVersion: '42' } },
      { do: 'write', id: 'ab12cd34', resourceVersion: '42' },
    ],
    [
      'with data.id: that',
      { metadata: { uid, resourceVersion: '43' }, data: { id: 'ab12cd34' } },
      { do: 'use', id: 'ab12cd34' },
    ],
    ['with a data.id set by hand: that', { metadata: { uid }, data: { id: 'team-a' } }, { do: 'use', id: 'team-a' }],
    [
      'with a data.id that cannot go into names: refused',
      { metadata: { uid }, data: { id: 'Team A' } },
      { do: 'refuse', problem: expect.stringContaining('data.id "Team A"') as string },
    ],
    [
      'with neither data.id nor uid: refused',
      { metadata: {} },
      { do: 'refuse', problem: 'it has neither data.id nor a uid' },
    ],
  ])('%s', (_, cm, step) => {
    expect(resolveStep(cm)).toEqual(step);
  });
});

describe('keepStep', () => {
  test.each<[string, k8s.V1ConfigMap | undefined, ReturnType<typeof keepStep>]>([
    ['deleted: created again with the ID', undefined, { do: 'create' }],
    [
      're-created without data.id: the ID patched in, fenced on the resourceVersion read',
      { metadata: { uid: 'ffff0000-0000', resourceVersion: '9' } },
      { do: 'write', resourceVersion: '9' },
    ],
    ['with the same ID: nothing', { metadata: { uid: 'ffff0000-0000' }, data: { id: 'ab12cd34' } }, { do: 'nothing' }],
    [
      'with another ID: left as it is, and said',
      { metadata: { uid: 'ab12cd34-0000' }, data: { id: 'team-b' } },
      { do: 'warn', found: 'team-b' },
    ],
  ])('%s', (_, cm, step) => {
    expect(keepStep('ab12cd34', cm)).toEqual(step);
  });
});
