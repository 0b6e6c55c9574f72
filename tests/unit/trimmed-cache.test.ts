import * as k8s from '@kubernetes/client-node';
import { jest } from '@jest/globals';
import { observeDeployment } from '../../kube/versioned-deployment.js';
import { Labels, renderVersionedDeployment } from '../../kube/versioned-deployment.js';
import { annotationSetter } from '../../starter/annotations.js';
import { holdsProblemStatus } from '../../starter/condition-ownership.js';
import { makeTrimmedInformer, trimDeployment, trimManagedFields, trimResource } from '../../starter/trimmed-cache.js';

/** A versioned Deployment as kube-apiserver returns it: rendered, applied, with managedFields and a status. */
function storedDeployment(status: k8s.V1DeploymentStatus, extra: Partial<k8s.V1ObjectMeta> = {}): k8s.V1Deployment {
  const d = renderVersionedDeployment({
    owner: { namespace: 'shop', name: 'orders', uid: 'uid-1' },
    spec: {
      replicas: 3,
      minReadySeconds: 0,
      progressDeadlineSeconds: 600,
      workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'orders-ns' },
      template: {
        spec: { containers: [{ name: 'worker', image: 'orders:2', env: [{ name: 'A', value: 'x'.repeat(500) }] }] },
      },
    },
    buildId: 'v2',
    connection: { hostPort: 'temporal:7233' },
  });
  return {
    ...d,
    metadata: {
      ...d.metadata,
      uid: 'd-uid',
      resourceVersion: '42',
      generation: 3,
      annotations: { 'deployment.kubernetes.io/revision': '3' },
      creationTimestamp: new Date('2026-11-25T00:00:00Z'),
      managedFields: [
        {
          manager: 'glidepath',
          operation: 'Apply',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': {} } } } },
        },
      ],
      ...extra,
    },
    status,
  };
}

describe('trimDeployment', () => {
  const statuses: k8s.V1DeploymentStatus[] = [
    {},
    {
      observedGeneration: 3,
      availableReplicas: 3,
      readyReplicas: 3,
      updatedReplicas: 3,
      unavailableReplicas: 0,
      replicas: 3,
      conditions: [
        {
          type: 'Available',
          status: 'True',
          reason: 'MinimumReplicasAvailable',
          message: 'Deployment has minimum availability.',
        },
        {
          type: 'Progressing',
          status: 'True',
          reason: 'NewReplicaSetAvailable',
          message: 'ReplicaSet "orders-v2" has successfully progressed.',
        },
      ],
    },
    {
      observedGeneration: 3,
      availableReplicas: 1,
      readyReplicas: 2,
      updatedReplicas: 3,
      unavailableReplicas: 2,
      replicas: 3,
      conditions: [{ type: 'Available', status: 'False', reason: 'MinimumReplicasUnavailable' }],
    },
    {
      observedGeneration: 2,
      conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }],
    },
  ];

  test.each(statuses.map((s, i) => [i, s] as const))(
    'the watcher observes a trimmed Deployment as the whole one (status %i)',
    (_, status) => {
      const whole = storedDeployment(status);
      expect(observeDeployment(trimDeployment(whole))).toEqual(observeDeployment(whole));
    },
  );

  test('a Deployment being deleted stays one being deleted', () => {
    const whole = storedDeployment({}, { deletionTimestamp: new Date('2026-11-26T00:00:00Z') });
    expect(observeDeployment(trimDeployment(whole)).exists).toBe(false);
  });

  test('keeps the labels that name its owner and build, and no pod template or managedFields', () => {
    const trimmed = trimDeployment(storedDeployment({ availableReplicas: 3 }));
    expect(trimmed.metadata?.labels?.[Labels.workerDeployment]).toBeDefined();
    expect(trimmed.metadata?.labels?.[Labels.buildId]).toBe('v2');
    expect(trimmed.spec?.template).toBeUndefined();
    expect(trimmed.metadata?.managedFields).toBeUndefined();
    expect(JSON.stringify(trimmed).length).toBeLessThan(
      JSON.stringify(storedDeployment({ availableReplicas: 3 })).length / 2,
    );
  });
});

describe('trimManagedFields', () => {
  const entries: k8s.V1ManagedFieldsEntry[] = [
    {
      manager: 'kubectl-client-side-apply',
      operation: 'Update',
      time: new Date('2026-11-26T10:00:00Z'),
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:metadata': { 'f:annotations': { '.': {}, 'f:glidepath.dev/promote': {} }, 'f:labels': { 'f:app': {} } },
        'f:spec': { 'f:replicas': {}, 'f:template': { 'f:spec': {} } },
      },
    },
    {
      manager: 'kubectl-annotate',
      operation: 'Update',
      time: new Date('2026-11-26T11:00:00Z'),
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:metadata': { 'f:annotations': { 'f:glidepath.dev/promote': {} } } },
    },
    {
      manager: 'glidepath',
      operation: 'Apply',
      subresource: 'status',
      fieldsType: 'FieldsV1',
      fieldsV1: {
        'f:status': {
          'f:targetVersion': { 'f:buildID': {}, 'f:rampPercentage': {} },
          'f:deprecatedVersions': { 'k:{"buildID":"v1"}': { 'f:drainedSince': {} } },
          'f:observedGeneration': {},
        },
      },
    },
    {
      manager: 'glidepath-watcher',
      operation: 'Apply',
      subresource: 'status',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:status': { 'f:conditions': {}, 'f:phase': {}, 'f:observedGeneration': {} } },
    },
    {
      manager: 'glidepath-watcher',
      operation: 'Apply',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:metadata': { 'f:finalizers': { 'v:"glidepath.dev/cleanup"': {} } } },
    },
  ];

  test('who set an annotation and who holds a status field read the same off the trimmed entries', () => {
    const trimmed = trimManagedFields(entries);
    for (const key of ['glidepath.dev/promote', 'glidepath.dev/pause'])
      expect(annotationSetter(trimmed, key)).toEqual(annotationSetter(entries, key));
    expect(annotationSetter(trimmed, 'glidepath.dev/promote')?.manager).toBe('kubectl-annotate');
    for (const manager of ['glidepath-watcher', 'glidepath', 'kubectl-annotate'])
      expect(holdsProblemStatus(trimmed, manager)).toBe(holdsProblemStatus(entries, manager));
    expect(holdsProblemStatus(trimmed, 'glidepath-watcher')).toBe(true);
  });

  test('the rest of each field set goes; the entry itself stays', () => {
    const trimmed = trimManagedFields(entries)!;
    expect(trimmed.map((e) => e.manager)).toEqual(entries.map((e) => e.manager));
    expect(trimmed[0]!.fieldsV1).toEqual({
      'f:metadata': { 'f:annotations': { '.': {}, 'f:glidepath.dev/promote': {} } },
    });
    expect(trimmed[2]!.fieldsV1).toEqual({
      'f:status': { 'f:targetVersion': {}, 'f:deprecatedVersions': {}, 'f:observedGeneration': {} },
    });
    expect(trimmed[4]!.fieldsV1).toEqual({});
  });

  test('a resource without managedFields is cached as it is; its spec and status are never trimmed', () => {
    const plain = {
      apiVersion: 'glidepath.dev/v1alpha1',
      kind: 'TemporalWorkerDeployment',
      metadata: { name: 'a' },
      spec: { replicas: 1 },
    };
    expect(trimResource(plain)).toBe(plain);
    const withFields = { ...plain, metadata: { name: 'a', managedFields: entries }, status: { phase: 'Ready' } };
    const trimmed = trimResource(withFields);
    expect(trimmed.spec).toBe(withFields.spec);
    expect(trimmed.status).toBe(withFields.status);
    expect(trimmed.metadata.managedFields).toEqual(trimManagedFields(entries));
  });
});

describe('makeTrimmedInformer', () => {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  type Callback = (phase: string, obj: unknown, raw?: unknown) => void;
  /** The watch requests the informer made: each with its query and the callbacks kube-apiserver's answer goes to. */
  let watches: { params: Record<string, unknown>; callback: Callback; done: (err: unknown) => void }[];

  beforeEach(() => {
    watches = [];
    jest.spyOn(k8s.Watch.prototype, 'watch').mockImplementation(async (_path, params, callback, done) => {
      watches.push({ params, callback, done });
      return new AbortController();
    });
  });
  afterEach(() => jest.restoreAllMocks());

  const deployment = (name: string, resourceVersion: string) =>
    storedDeployment({ availableReplicas: 3 }, { name, resourceVersion });

  test('listed and watched objects are cached and handed on trimmed; BOOKMARK and ERROR pass as they are; a 410 relists', async () => {
    const lists: number[] = [];
    const informer = makeTrimmedInformer<k8s.V1Deployment>(
      kubeConfig,
      '/apis/apps/v1/deployments',
      async () => {
        lists.push(Date.now());
        return {
          apiVersion: 'v1',
          kind: 'DeploymentList',
          metadata: { resourceVersion: '10' },
          items: [deployment('a', '5')],
        };
      },
      trimDeployment,
    );
    const handed: k8s.V1Deployment[] = [];
    informer.on('add', (d) => handed.push(d));
    informer.on('update', (d) => handed.push(d));
    informer.on('delete', (d) => handed.push(d));
    await informer.start();

    expect(lists).toHaveLength(1);
    expect(watches).toHaveLength(1);
    expect(watches[0]!.params.resourceVersion).toBe('10'); // the list's resourceVersion survives the trim
    expect(informer.get('a', 'shop')).toEqual(trimDeployment(deployment('a', '5')));

    watches[0]!.callback('ADDED', deployment('b', '11'));
    watches[0]!.callback('MODIFIED', deployment('a', '12'));
    watches[0]!.callback('BOOKMARK', { kind: 'Deployment', metadata: { resourceVersion: '13' } });
    watches[0]!.callback('DELETED', deployment('b', '14'));
    for (const d of [informer.get('a', 'shop'), ...handed]) {
      expect(d?.spec?.template).toBeUndefined();
      expect(d?.metadata?.managedFields).toBeUndefined();
    }
    expect(handed.map((d) => `${d.metadata?.name}@${d.metadata?.resourceVersion}`)).toEqual([
      'a@5',
      'b@11',
      'a@12',
      'b@14',
    ]);
    expect(informer.get('b', 'shop')).toBeUndefined();
    expect((informer as k8s.ListWatch<k8s.V1Deployment>).latestResourceVersion()).toBe('14');

    // An expired resourceVersion: the ERROR keeps its code (a trim would drop it), and the next watch lists first.
    watches[0]!.callback('ERROR', { kind: 'Status', code: 410, reason: 'Expired' });
    watches[0]!.done(null);
    await new Promise((r) => setImmediate(r));
    expect(lists).toHaveLength(2);
    expect(watches).toHaveLength(2);
    await informer.stop();
  });

  test('an object the trim cannot read is cached whole: no event is lost', async () => {
    const informer = makeTrimmedInformer<k8s.KubernetesObject>(
      kubeConfig,
      '/apis/glidepath.dev/v1alpha1/temporalworkerdeployments',
      async () => ({ metadata: { resourceVersion: '1' }, items: [] }),
      () => {
        throw new Error('unreadable');
      },
    );
    const handed: k8s.KubernetesObject[] = [];
    informer.on('add', (o) => handed.push(o));
    await informer.start();
    const odd = {
      kind: 'TemporalWorkerDeployment',
      metadata: { name: 'odd', namespace: 'shop', resourceVersion: '2' },
    };
    watches[0]!.callback('ADDED', odd);
    expect(handed).toEqual([odd]);
    expect(informer.get('odd', 'shop')).toEqual(odd);
    await informer.stop();
  });
});
