import type * as k8s from '@kubernetes/client-node';
import {
  Labels,
  isOwnedBy,
  renderVersionedDeployment,
  tlsMountPath,
  type VersionedDeploymentInput,
} from '../../kube/versioned-deployment.js';
import type { TemporalConnectionSpec } from '../../api/temporal-connection.js';
import { versionedDeploymentName } from '../../api/names.js';

const plain: TemporalConnectionSpec = { hostPort: 'temporal-frontend.temporal:7233' };
const mtls: TemporalConnectionSpec = { hostPort: 'ns.tmprl.cloud:7233', mutualTLSSecretRef: { name: 'worker-mtls' } };
const apiKey: TemporalConnectionSpec = {
  hostPort: 'ns.tmprl.cloud:7233',
  apiKeySecretRef: { name: 'temporal-api', key: 'apiKey' },
};

function input(overrides: Partial<VersionedDeploymentInput> = {}): VersionedDeploymentInput {
  return {
    owner: { namespace: 'shop', name: 'orders', uid: 'uid-1234' },
    spec: {
      replicas: 3,
      minReadySeconds: 5,
      progressDeadlineSeconds: 300,
      workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'orders-ns' },
      template: {
        metadata: { labels: { app: 'orders' }, annotations: { team: 'payments' } },
        spec: {
          containers: [
            {
              name: 'worker',
              image: 'orders:1.2.3',
              env: [
                { name: 'LOG_LEVEL', value: 'info' },
                { name: 'TEMPORAL_ADDRESS', value: 'localhost:7233' },
                { name: 'TEMPORAL_WORKER_BUILD_ID', value: 'mine' },
              ],
              volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
            },
            { name: 'sidecar', image: 'sidecar:1' },
          ],
          volumes: [{ name: 'cache', emptyDir: {} }],
        },
      },
    },
    connection: plain,
    buildId: '1.2.3-0123456789ab',
    ...overrides,
  };
}

const containers = (d: k8s.V1Deployment) => d.spec!.template.spec!.containers;
const envOf = (c: k8s.V1Container) => Object.fromEntries((c.env ?? []).map((e) => [e.name, e]));

describe('renderVersionedDeployment', () => {
  test('renders a simple spec in full', () => {
    const rendered = renderVersionedDeployment({
      owner: { namespace: 'default', name: 'hello', uid: 'u-1' },
      spec: {
        replicas: 1,
        minReadySeconds: 0,
        progressDeadlineSeconds: 600,
        workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'default' },
        template: { spec: { containers: [{ name: 'worker', image: 'hello:1' }] } },
      },
      connection: { hostPort: 'temporal:7233' },
      buildId: '1-abc',
    });
    expect(rendered).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: versionedDeploymentName('hello', '1-abc'),
        namespace: 'default',
        labels: {
          'glidepath.dev/worker-deployment': 'hello',
          'glidepath.dev/build-id': '1-abc',
          'app.kubernetes.io/managed-by': 'glidepath',
          'glidepath.dev/owner-uid': 'u-1',
        },
        // The build's template as the spec declared it: what its Deployment runs once the spec declares another.
        annotations: { 'glidepath.dev/pod-template': '{"spec":{"containers":[{"image":"hello:1","name":"worker"}]}}' },
        ownerReferences: [
          {
            apiVersion: 'glidepath.dev/v1alpha1',
            kind: 'TemporalWorkerDeployment',
            name: 'hello',
            uid: 'u-1',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        replicas: 1,
        minReadySeconds: 0,
        progressDeadlineSeconds: 600,
        selector: { matchLabels: { 'glidepath.dev/worker-deployment': 'hello', 'glidepath.dev/build-id': '1-abc' } },
        template: {
          metadata: { labels: { 'glidepath.dev/worker-deployment': 'hello', 'glidepath.dev/build-id': '1-abc' } },
          spec: {
            containers: [
              {
                name: 'worker',
                image: 'hello:1',
                env: [
                  { name: 'TEMPORAL_ADDRESS', value: 'temporal:7233' },
                  { name: 'TEMPORAL_NAMESPACE', value: 'default' },
                  { name: 'TEMPORAL_DEPLOYMENT_NAME', value: 'default/hello' },
                  { name: 'TEMPORAL_WORKER_BUILD_ID', value: '1-abc' },
                ],
              },
            ],
          },
        },
      },
    });
  });

  test('names the Deployment <name>-<buildId> in the owner namespace', () => {
    const d = renderVersionedDeployment(input());
    expect(d.metadata!.name).toBe(versionedDeploymentName('orders', '1.2.3-0123456789ab'));
    expect(d.metadata!.name).toMatch(/^orders-1-2-3-0123456789ab-[0-9a-f]{8}$/);
    expect(d.metadata!.namespace).toBe('shop');
  });

  test.each([
    [Labels.managedBy, 'glidepath'],
    [Labels.workerDeployment, 'orders'],
    [Labels.buildId, '1.2.3-0123456789ab'],
    [Labels.ownerUid, 'uid-1234'],
  ])('labels the Deployment %s=%s', (key, value) => {
    expect(renderVersionedDeployment(input()).metadata!.labels).toMatchObject({ [key]: value });
  });

  test('has exactly one owner reference: the resource, as controller, with its uid', () => {
    expect(renderVersionedDeployment(input()).metadata!.ownerReferences).toEqual([
      {
        apiVersion: 'glidepath.dev/v1alpha1',
        kind: 'TemporalWorkerDeployment',
        name: 'orders',
        uid: 'uid-1234',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  test('the selector is per build and matches the pod template labels, which keep the user labels', () => {
    const d = renderVersionedDeployment(input());
    expect(d.spec!.selector.matchLabels).toEqual({
      [Labels.workerDeployment]: 'orders',
      [Labels.buildId]: '1.2.3-0123456789ab',
    });
    expect(d.spec!.template.metadata!.labels).toEqual({ app: 'orders', ...d.spec!.selector.matchLabels });
    expect(d.spec!.template.metadata!.annotations).toEqual({ team: 'payments' });
  });

  test('two builds of one resource get different names and selectors', () => {
    const a = renderVersionedDeployment(input({ buildId: 'v1-aaa' }));
    const b = renderVersionedDeployment(input({ buildId: 'v2-bbb' }));
    expect(a.metadata!.name).not.toBe(b.metadata!.name);
    expect(a.spec!.selector.matchLabels).not.toEqual(b.spec!.selector.matchLabels);
  });

  test.each([
    ['spec.replicas without an override', undefined, 3],
    ['the override when given', 7, 7],
    ['an override of 0 (sunset)', 0, 0],
  ])('asks for %s', (_case, override, expected) => {
    expect(renderVersionedDeployment(input({ replicas: override })).spec!.replicas).toBe(expected);
  });

  test('copies minReadySeconds and progressDeadlineSeconds', () => {
    const d = renderVersionedDeployment(input());
    expect(d.spec!.minReadySeconds).toBe(5);
    expect(d.spec!.progressDeadlineSeconds).toBe(300);
  });

  test.each([
    ['TEMPORAL_ADDRESS', 'temporal-frontend.temporal:7233'],
    ['TEMPORAL_NAMESPACE', 'orders-ns'],
    ['TEMPORAL_DEPLOYMENT_NAME', 'shop/orders'],
    ['TEMPORAL_WORKER_BUILD_ID', '1.2.3-0123456789ab'],
  ])('injects %s=%s into every container, exactly once', (name, value) => {
    for (const c of containers(renderVersionedDeployment(input()))) {
      expect((c.env ?? []).filter((e) => e.name === name)).toEqual([{ name, value }]);
    }
  });

  test('keeps the user env that does not clash', () => {
    const [worker] = containers(renderVersionedDeployment(input()));
    expect(envOf(worker!).LOG_LEVEL).toEqual({ name: 'LOG_LEVEL', value: 'info' });
  });

  test('keeps user container fields and volumes', () => {
    const d = renderVersionedDeployment(input());
    const [worker, sidecar] = containers(d);
    expect(worker).toMatchObject({
      name: 'worker',
      image: 'orders:1.2.3',
      volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
    });
    expect(sidecar).toMatchObject({ name: 'sidecar', image: 'sidecar:1' });
    expect(d.spec!.template.spec!.volumes).toEqual([{ name: 'cache', emptyDir: {} }]);
  });

  test('mTLS: mounts the Secret read-only in every container and points the env at the files', () => {
    const d = renderVersionedDeployment(input({ connection: mtls }));
    expect(d.spec!.template.spec!.volumes).toEqual([
      { name: 'cache', emptyDir: {} },
      { name: 'temporal-tls', secret: { secretName: 'worker-mtls' } },
    ]);
    const [worker, sidecar] = containers(d);
    expect(worker!.volumeMounts).toEqual([
      { name: 'cache', mountPath: '/cache' },
      { name: 'temporal-tls', mountPath: tlsMountPath, readOnly: true },
    ]);
    expect(sidecar!.volumeMounts).toEqual([{ name: 'temporal-tls', mountPath: tlsMountPath, readOnly: true }]);
    for (const c of [worker!, sidecar!]) {
      expect(envOf(c)).toMatchObject({
        TEMPORAL_TLS: { value: 'true' },
        TEMPORAL_TLS_CLIENT_CERT_PATH: { value: `${tlsMountPath}/tls.crt` },
        TEMPORAL_TLS_CLIENT_KEY_PATH: { value: `${tlsMountPath}/tls.key` },
      });
      expect(envOf(c).TEMPORAL_API_KEY).toBeUndefined();
    }
  });

  test('API key: TEMPORAL_API_KEY comes from the Secret key and TLS is on, with no volume', () => {
    const d = renderVersionedDeployment(input({ connection: apiKey }));
    for (const c of containers(d)) {
      expect(envOf(c).TEMPORAL_API_KEY).toEqual({
        name: 'TEMPORAL_API_KEY',
        valueFrom: { secretKeyRef: { name: 'temporal-api', key: 'apiKey' } },
      });
      expect(envOf(c).TEMPORAL_TLS).toEqual({ name: 'TEMPORAL_TLS', value: 'true' });
      expect(envOf(c).TEMPORAL_TLS_CLIENT_CERT_PATH).toBeUndefined();
    }
    expect(d.spec!.template.spec!.volumes).toEqual([{ name: 'cache', emptyDir: {} }]);
  });

  test('a TLS server name override is passed on', () => {
    const d = renderVersionedDeployment(input({ connection: { ...apiKey, tls: { serverName: 'ns.example' } } }));
    expect(envOf(containers(d)[0]!).TEMPORAL_TLS_SERVER_NAME).toEqual({
      name: 'TEMPORAL_TLS_SERVER_NAME',
      value: 'ns.example',
    });
  });

  test('no TLS: adds no volumes, mounts or TLS env', () => {
    const d = renderVersionedDeployment(input());
    expect(d.spec!.template.spec!.volumes).toEqual([{ name: 'cache', emptyDir: {} }]);
    const [worker, sidecar] = containers(d);
    expect(worker!.volumeMounts).toEqual([{ name: 'cache', mountPath: '/cache' }]);
    expect(sidecar!.volumeMounts).toBeUndefined();
    for (const c of [worker!, sidecar!]) {
      expect(Object.keys(envOf(c)).filter((n) => n.startsWith('TEMPORAL_TLS') || n === 'TEMPORAL_API_KEY')).toEqual([]);
    }
  });

  test('no TLS and no user volumes: the pod gets no volumes', () => {
    const base = input();
    const { volumes: _volumes, ...podSpec } = base.spec.template.spec;
    const d = renderVersionedDeployment({ ...base, spec: { ...base.spec, template: { spec: podSpec } } });
    expect(d.spec!.template.spec!.volumes).toBeUndefined();
  });

  test.each([
    ['no TLS', plain],
    ['mTLS', mtls],
    ['API key', apiKey],
  ])('does not mutate its input (%s)', (_case, connection) => {
    const given = input({ connection });
    const before = structuredClone(given);
    renderVersionedDeployment(given);
    expect(given).toEqual(before);
  });
});

describe('renderVersionedDeployment env precedence', () => {
  test.each([
    ['TEMPORAL_ADDRESS', 'localhost:7233', 'temporal-frontend.temporal:7233'],
    ['TEMPORAL_WORKER_BUILD_ID', 'mine', '1.2.3-0123456789ab'],
  ])('a user %s=%s is replaced by the injected value %s', (name, userValue, injected) => {
    const [worker] = containers(renderVersionedDeployment(input()));
    const matching = (worker!.env ?? []).filter((e) => e.name === name);
    expect(matching).toEqual([{ name, value: injected }]);
    expect(matching).not.toContainEqual({ name, value: userValue });
  });
});

describe('isOwnedBy', () => {
  const owner = { namespace: 'shop', name: 'orders', uid: 'uid-new' };
  const deployment = (labels: Record<string, string>, ownerUids: string[] = []): k8s.V1Deployment => ({
    metadata: {
      name: 'orders-v1',
      labels: { [Labels.workerDeployment]: 'orders', [Labels.managedBy]: 'glidepath', ...labels },
      ownerReferences: ownerUids.map((uid) => ({
        apiVersion: 'glidepath.dev/v1alpha1',
        kind: 'TemporalWorkerDeployment',
        name: 'orders',
        uid,
      })),
    },
  });

  test.each([
    ['its owner-uid label is the owner', true, deployment({ [Labels.ownerUid]: 'uid-new' }, ['uid-new'])],
    ['its owner-uid label is another uid', false, deployment({ [Labels.ownerUid]: 'uid-old' }, ['uid-old'])],
    ['the label wins over an owner reference', false, deployment({ [Labels.ownerUid]: 'uid-old' }, ['uid-new'])],
    ['unlabelled, even with an owner reference to the owner', false, deployment({}, ['uid-new'])],
    ['unlabelled, no owner reference (a namesake that is not ours)', false, deployment({})],
    ['unlabelled, owner reference to another uid', false, deployment({}, ['uid-old'])],
  ])('%s → owned: %s', (_case, owned, d) => {
    expect(isOwnedBy(d, owner)).toBe(owned);
  });

  test('a rendered Deployment is owned by its owner and by no other incarnation', () => {
    const d = renderVersionedDeployment(input({ owner }));
    expect(isOwnedBy(d, owner)).toBe(true);
    expect(isOwnedBy(d, { ...owner, uid: 'uid-other' })).toBe(false);
  });
});
