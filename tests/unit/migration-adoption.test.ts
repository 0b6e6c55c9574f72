/**
 * The pure half of adopting what temporal-worker-controller left: recognising its Deployments, judging "unchanged"
 * (the live template has kube-apiserver's defaults and the other controller's env; the spec's template is defaulted
 * by a dry run), the patch that takes a Deployment over, the plan of what becomes of each adopted build, and the
 * CA of `tls.caCertSecretRef` in the pods and in Glidepath's own connections.
 */
import type { Connection } from '@temporalio/client';
import {
  adoptionPatch,
  isForeignVersionOf,
  sameUserTemplate,
  templateCheckDeployment,
  userPartOfTemplate,
  type RawDeployment,
} from '../../kube/foreign-deployments.js';
import { caMountPath, renderVersionedDeployment, type Owner } from '../../kube/versioned-deployment.js';
import { PermanentError } from '../../api/errors.js';
import { TemporalConnections } from '../../temporal/connections.js';
import { planAdoption, withAlias, withAliasedControl } from '../../workflows/adoption.js';
import { planSpecChange } from '../../workflows/decisions.js';
import { type RolloutState } from '../../workflows/state.js';
import { defaultTimings } from '../../api/timings.js';
import { type Desired } from '../../api/resource.js';

const owner: Owner = { namespace: 'shop', name: 'orders', uid: 'uid-wd', kind: 'WorkerDeployment' };

/** The spec's template as the user wrote it. */
const userTemplate = () => ({
  metadata: { labels: { app: 'orders' } },
  spec: {
    containers: [
      {
        name: 'worker',
        image: 'orders:1.0.0',
        env: [{ name: 'LOG_LEVEL', value: 'info' }],
        ports: [{ name: 'metrics', containerPort: 9090 }],
        resources: { limits: { memory: '256Mi' } },
      },
    ],
  },
});

/** What kube-apiserver adds to a pod template. */
function defaulted(t: ReturnType<typeof userTemplate>, extraLabels: Record<string, string> = {}) {
  return {
    metadata: { creationTimestamp: null, labels: { ...t.metadata.labels, ...extraLabels } },
    spec: {
      ...t.spec,
      containers: t.spec.containers.map((c) => ({
        ...c,
        ports: c.ports.map((p) => ({ ...p, protocol: 'TCP' })),
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        imagePullPolicy: 'IfNotPresent',
      })),
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      securityContext: {},
      schedulerName: 'default-scheduler',
    },
  };
}

/** The user's template as the other controller made its Deployment of build `buildId` (then defaulted). */
function liveTwcTemplate(t = userTemplate(), buildId = '1.0.0-bb22') {
  const d = defaulted(t, { 'temporal.io/build-id': buildId, 'temporal.io/deployment-name': 'orders' });
  return {
    ...d,
    metadata: {
      ...d.metadata,
      annotations: { 'temporal.io/connection-spec-hash': 'abc', 'temporal.io/pod-template-spec-hash': 'def' },
    },
    spec: {
      ...d.spec,
      containers: d.spec.containers.map((c) => ({
        ...c,
        env: [
          ...c.env,
          { name: 'TEMPORAL_ADDRESS', value: 'temporal:7233' },
          { name: 'TEMPORAL_NAMESPACE', value: 'orders' },
          { name: 'TEMPORAL_DEPLOYMENT_NAME', value: 'shop/orders' },
          { name: 'TEMPORAL_WORKER_BUILD_ID', value: buildId },
          { name: 'TEMPORAL_TLS', value: 'true' },
          { name: 'TEMPORAL_TLS_CLIENT_KEY_PATH', value: '/etc/temporal/tls/tls.key' },
          { name: 'TEMPORAL_TLS_CLIENT_CERT_PATH', value: '/etc/temporal/tls/tls.crt' },
        ],
        volumeMounts: [{ name: 'temporal-tls', mountPath: '/etc/temporal/tls' }],
      })),
      volumes: [{ name: 'temporal-tls', secret: { secretName: 'orders-mtls', defaultMode: 420 } }],
    },
  };
}

/** The dry run of a Deployment made from the user's template: defaults, and the check's own label. */
const dryRun = (t = userTemplate()) => defaulted(t, { 'glidepath.dev/template-check': 'true' });

describe('"unchanged": the live template against the spec\'s, both as kube-apiserver stores them', () => {
  test("the same template, with the other controller's env, TLS volume, labels and annotations: unchanged", () => {
    expect(sameUserTemplate(liveTwcTemplate(), dryRun())).toBe(true);
  });

  test.each<{ name: string; change: (t: ReturnType<typeof userTemplate>) => void }>([
    { name: 'an env value', change: (t) => void (t.spec.containers[0]!.env[0]!.value = 'debug') },
    { name: 'an env var added', change: (t) => void t.spec.containers[0]!.env.push({ name: 'FEATURE', value: 'on' }) },
    { name: 'a limit removed', change: (t) => void (t.spec.containers[0]!.resources = { limits: {} } as never) },
    { name: 'the image', change: (t) => void (t.spec.containers[0]!.image = 'orders:1.0.1') },
    { name: 'a pod label', change: (t) => void (t.metadata.labels = { app: 'orders', tier: 'backend' } as never) },
  ])('changed: $name', ({ change }) => {
    const spec = userTemplate();
    change(spec);
    expect(sameUserTemplate(liveTwcTemplate(), dryRun(spec))).toBe(false);
  });

  test('what is no template change: `kubectl rollout restart`, empty values, env the spec sets that a controller injects anyway', () => {
    const live = liveTwcTemplate();
    (live.metadata.annotations as Record<string, string>)['kubectl.kubernetes.io/restartedAt'] = '2026-11-22T10:00:00Z';
    const spec = userTemplate();
    spec.spec.containers[0]!.env.push({ name: 'TEMPORAL_ADDRESS', value: 'localhost:7233' });
    (spec.spec as Record<string, unknown>).volumes = [];
    expect(sameUserTemplate(live, dryRun(spec))).toBe(true);
  });

  test("userPartOfTemplate keeps the user's volumes and mounts, drops only the controllers'", () => {
    const spec = userTemplate();
    const live = liveTwcTemplate();
    live.spec.volumes.push({ name: 'cache', emptyDir: {} } as never);
    live.spec.containers[0]!.volumeMounts.push({ name: 'cache', mountPath: '/cache' });
    const part = userPartOfTemplate(live) as {
      spec: { volumes: unknown[]; containers: { volumeMounts: unknown[]; env: { name: string }[] }[] };
    };
    expect(part.spec.volumes).toEqual([{ name: 'cache' }]); // (emptyDir: {} is empty)
    expect(part.spec.containers[0]!.volumeMounts).toEqual([{ name: 'cache', mountPath: '/cache' }]);
    expect(part.spec.containers[0]!.env.map((e) => e.name)).toEqual(['LOG_LEVEL']);
    expect(sameUserTemplate(live, dryRun(spec))).toBe(false);
  });

  test("the dry-run Deployment: the user's template under a throwaway selector, never replicas", () => {
    const d = templateCheckDeployment(owner, userTemplate()) as {
      metadata: Record<string, string>;
      spec: { replicas: number; selector: unknown; template: { metadata: { labels: Record<string, string> } } };
    };
    expect(d.metadata.generateName).toBe('orders-template-check-');
    expect(d.spec.replicas).toBe(0);
    expect(d.spec.selector).toEqual({ matchLabels: { 'glidepath.dev/template-check': 'true' } });
    expect(d.spec.template.metadata.labels).toEqual({ app: 'orders', 'glidepath.dev/template-check': 'true' });
  });
});

describe("recognising the other controller's Deployments of this worker deployment", () => {
  const deployment = (
    over: { labels?: Record<string, string>; pollsAs?: string; deleting?: boolean } = {},
  ): RawDeployment => ({
    metadata: {
      name: 'orders-1-0-0-bb22',
      namespace: 'shop',
      labels: over.labels ?? { 'temporal.io/build-id': '1.0.0-bb22', 'temporal.io/deployment-name': 'orders' },
      ...(over.deleting ? { deletionTimestamp: '2026-11-22T10:00:00Z' } : {}),
    },
    spec: {
      template: {
        spec: {
          containers: [
            { name: 'worker', env: [{ name: 'TEMPORAL_DEPLOYMENT_NAME', value: over.pollsAs ?? 'shop/orders' }] },
          ],
        },
      },
    },
  });
  test.each([
    { name: 'its labels, its pods polling as shop/orders', d: deployment(), expected: true },
    {
      name: 'adopted by this resource already',
      d: deployment({
        labels: {
          'temporal.io/build-id': 'b',
          'temporal.io/deployment-name': 'orders',
          'glidepath.dev/owner-uid': 'uid-wd',
        },
      }),
      expected: true,
    },
    {
      name: 'adopted by another incarnation',
      d: deployment({
        labels: {
          'temporal.io/build-id': 'b',
          'temporal.io/deployment-name': 'orders',
          'glidepath.dev/owner-uid': 'uid-old',
        },
      }),
      expected: false,
    },
    {
      name: 'of another resource',
      d: deployment({ labels: { 'temporal.io/build-id': 'b', 'temporal.io/deployment-name': 'payments' } }),
      expected: false,
    },
    {
      name: 'without a build ID',
      d: deployment({ labels: { 'temporal.io/deployment-name': 'orders' } }),
      expected: false,
    },
    {
      name: 'pods polling as another worker deployment (an old "<name>/<namespace>" name)',
      d: deployment({ pollsAs: 'orders/shop' }),
      expected: false,
    },
    { name: 'being deleted', d: deployment({ deleting: true }), expected: false },
  ])('$name: $expected', ({ d, expected }) => {
    expect(isForeignVersionOf(d, owner)).toBe(expected);
  });
});

describe('the patch that takes a Deployment over', () => {
  const twcRef = {
    apiVersion: 'temporal.io/v1alpha1',
    kind: 'WorkerDeployment',
    name: 'orders',
    uid: 'uid-twc',
    controller: true,
  };
  const other = { apiVersion: 'example.com/v1', kind: 'Thing', name: 'x', uid: 'uid-x' };

  test("Glidepath's labels beside the other controller's, our owner reference instead of its, others kept", () => {
    const patch = adoptionPatch(
      { metadata: { labels: { 'temporal.io/build-id': 'b' }, ownerReferences: [twcRef, other] } },
      owner,
      '1.0.0-bb22',
    );
    expect(patch).toEqual({
      metadata: {
        labels: {
          'app.kubernetes.io/managed-by': 'glidepath',
          'glidepath.dev/worker-deployment': 'orders',
          'glidepath.dev/build-id': '1.0.0-bb22',
          'glidepath.dev/owner-uid': 'uid-wd',
        },
        ownerReferences: [
          other,
          {
            apiVersion: 'glidepath.dev/v1alpha1',
            kind: 'WorkerDeployment',
            name: 'orders',
            uid: 'uid-wd',
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
    });
  });

  test('nothing to patch once it is ours', () => {
    const adopted = adoptionPatch({ metadata: { labels: {}, ownerReferences: [twcRef] } }, owner, 'b') as RawDeployment;
    expect(adoptionPatch(adopted, owner, 'b')).toBeUndefined();
  });
});

describe('planAdoption: what becomes of each adopted build', () => {
  const v = (buildId: string, matchesTemplate: boolean) => ({
    buildId,
    deploymentName: `orders-${buildId}`,
    matchesTemplate,
  });
  test.each([
    {
      name: 'current runs the template, an old version drains: current is the build, the old one is sunset',
      found: [v('v0', false), v('v1', true)],
      routing: { current: 'v1', rampPercentage: 0 },
      expected: { match: 'v1', retire: ['v0'] },
    },
    {
      name: 'the template changed: no match; current stays current until the new build replaces it',
      found: [v('v0', false), v('v1', false)],
      routing: { current: 'v1', rampPercentage: 0 },
      expected: { retire: ['v0'] },
    },
    {
      name: 'the other controller was ramping to the template: that rollout goes on from the live ramp',
      found: [v('v1', false), v('v2', true)],
      routing: { current: 'v1', ramping: 'v2', rampPercentage: 25 },
      expected: { match: 'v2', retire: [], liveRamp: 25 },
    },
    {
      name: 'ramping to another template: its ramp is cleared, it is sunset',
      found: [v('v1', true), v('v2', false)],
      routing: { current: 'v1', ramping: 'v2', rampPercentage: 25 },
      expected: { match: 'v1', retire: ['v2'], clearRamp: 'v2' },
    },
    {
      name: 'two builds run the template (a custom build ID): current wins',
      found: [v('a', true), v('b', true)],
      routing: { current: 'b', rampPercentage: 0 },
      expected: { match: 'b', retire: ['a'] },
    },
  ])('$name', ({ found, routing, expected }) => {
    const plan = planAdoption(found, routing);
    expect(plan).toEqual({ foreign: Object.fromEntries(found.map((f) => [f.buildId, f.deploymentName])), ...expected });
  });

  test("an alias maps the spec's computed build, and a control naming it, to the adopted build; nothing else", () => {
    const state = { aliases: { 'g1-0123456789ab': 'v1' } };
    const d = { buildId: 'g1-0123456789ab' } as Desired;
    expect(withAlias(state, d).buildId).toBe('v1');
    expect(withAlias({}, d)).toBe(d);
    expect(withAliasedControl(state, { buildId: 'g1-0123456789ab' })).toEqual({ buildId: 'v1' });
    expect(withAliasedControl(state, 'not a control')).toBe('not a control');
  });
});

describe('tls.caCertSecretRef', () => {
  const connection = {
    hostPort: 'temporal.internal:7233',
    tls: { serverName: 'temporal.internal', caCertSecretRef: { name: 'temporal-ca' } },
  };

  test("the pods: the CA mounted (its ca.crt only), TLS on, its path in Temporal's envconfig name", () => {
    const d = renderVersionedDeployment({
      owner,
      spec: {
        replicas: 1,
        minReadySeconds: 0,
        progressDeadlineSeconds: 600,
        workerOptions: { connectionRef: { name: 't' }, temporalNamespace: 'orders' },
        template: userTemplate(),
      },
      connection,
      buildId: '1.0.0-0123456789ab',
    });
    const pod = d.spec!.template.spec!;
    expect(pod.volumes).toContainEqual({
      name: 'temporal-tls-ca',
      secret: { secretName: 'temporal-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
    });
    expect(pod.containers[0]!.volumeMounts).toContainEqual({
      name: 'temporal-tls-ca',
      mountPath: caMountPath,
      readOnly: true,
    });
    const env = Object.fromEntries((pod.containers[0]!.env ?? []).map((e) => [e.name, e.value]));
    expect(env).toMatchObject({
      TEMPORAL_TLS: 'true',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      TEMPORAL_TLS_SERVER_CA_CERT_PATH: `${caMountPath}/ca.crt`,
    });
    expect(d.metadata!.ownerReferences).toEqual([
      {
        apiVersion: 'glidepath.dev/v1alpha1',
        kind: 'WorkerDeployment',
        name: 'orders',
        uid: 'uid-wd',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  test("Glidepath's own connection trusts it (read in the resource's namespace, a ClusterConnection's too); a rotated CA reconnects; a missing one is permanent", async () => {
    const secrets = new Map<string, Record<string, Buffer>>([['shop/temporal-ca', { 'ca.crt': Buffer.from('CA-1') }]]);
    const opened: { options: unknown }[] = [];
    const connections = new TemporalConnections(async (ns, name) => secrets.get(`${ns}/${name}`), {
      closeDelayMs: 10,
      connect: async (options) => {
        opened.push({ options });
        return { close: async () => {} } as unknown as Connection;
      },
    });
    const target = (k8sNamespace: string) => ({
      connection,
      k8sNamespace,
      temporalNamespace: 'orders',
      deploymentName: `${k8sNamespace}/orders`,
    });
    await connections.get(target('shop'));
    expect(opened[0]!.options).toEqual({
      connectTimeout: '5s',
      address: 'temporal.internal:7233',
      tls: { serverNameOverride: 'temporal.internal', serverRootCACertificate: Buffer.from('CA-1') },
    });
    secrets.set('shop/temporal-ca', { 'ca.crt': Buffer.from('CA-2') });
    await connections.get(target('shop'));
    expect(opened).toHaveLength(2);
    await expect(connections.get(target('billing'))).rejects.toThrow(
      new PermanentError('Secret billing/temporal-ca not found (named by the TemporalConnection)'),
    );
    secrets.set('shop/temporal-ca', {});
    await expect(connections.get(target('shop'))).rejects.toThrow(
      new PermanentError('Secret shop/temporal-ca has no key "ca.crt"'),
    );
    await connections.closeAll();
  });

  test('with an API key, the CA is trusted too', async () => {
    const opened: unknown[] = [];
    const secrets: Record<string, Record<string, Buffer>> = {
      ca: { 'ca.crt': Buffer.from('CA') },
      api: { key: Buffer.from('secret-key\n') },
    };
    const connections = new TemporalConnections(async (_ns, name) => secrets[name], {
      connect: async (options) => {
        opened.push(options);
        return { close: async () => {} } as unknown as Connection;
      },
    });
    await connections.get({
      connection: {
        hostPort: 'x:7233',
        tls: { caCertSecretRef: { name: 'ca' } },
        apiKeySecretRef: { name: 'api', key: 'key' },
      },
      k8sNamespace: 'shop',
      temporalNamespace: 'n',
      deploymentName: 'shop/o',
    });
    expect(opened[0]).toEqual({
      connectTimeout: '5s',
      address: 'x:7233',
      tls: { serverNameOverride: undefined, serverRootCACertificate: Buffer.from('CA') },
      apiKey: 'secret-key',
    });
    await connections.closeAll();
  });
});

describe("spec.deployment's own settings reach every versioned Deployment", () => {
  test('revisionHistoryLimit and strategy are rendered when given, absent otherwise', () => {
    const spec = {
      replicas: 2,
      minReadySeconds: 0,
      progressDeadlineSeconds: 600,
      workerOptions: { connectionRef: { name: 't' }, temporalNamespace: 'orders' },
      template: userTemplate(),
    };
    const strategy = { type: 'RollingUpdate' as const, rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } };
    const rendered = renderVersionedDeployment({
      owner,
      spec: { ...spec, revisionHistoryLimit: 3, strategy },
      connection: { hostPort: 't:7233' },
      buildId: 'b',
    });
    expect(rendered.spec).toMatchObject({ revisionHistoryLimit: 3, strategy });
    const plain = renderVersionedDeployment({ owner, spec, connection: { hostPort: 't:7233' }, buildId: 'b' });
    expect(plain.spec).not.toHaveProperty('revisionHistoryLimit');
    expect(plain.spec).not.toHaveProperty('strategy');
  });
});

describe('a new strategy or revisionHistoryLimit in spec.deployment re-applies the live Deployments', () => {
  const spec = (extra: Record<string, unknown>) => ({ ...desiredSpec(), ...extra });
  const desiredSpec = () => ({
    replicas: 1,
    minReadySeconds: 0,
    progressDeadlineSeconds: 600,
    template: userTemplate(),
    rollout: { strategy: 'AllAtOnce' as const, gateFailurePolicy: 'Abort' as const, rollbackWindow: '1h' },
    sunset: { scaledownDelay: '1h', deleteDelay: '24h' },
    workerOptions: { connectionRef: { name: 't', kind: 'Connection' as const }, temporalNamespace: 'orders' },
  });
  const at = new Date('2026-11-22T10:00:00Z');
  const state = (extra: Record<string, unknown>): RolloutState => ({
    owner,
    deprecated: [],
    phase: 'Ready',
    reason: 'RolloutComplete',
    message: '',
    since: at.toISOString(),
    deleting: false,
    deployments: {},
    timings: defaultTimings,
    current: { buildId: 'b', since: at.toISOString() },
    desired: {
      generation: 1,
      spec: spec(extra),
      buildId: 'b',
      connection: { hostPort: 't:7233' },
      connectionVersion: '1',
      uid: owner.uid,
    },
  });
  test.each([
    { name: 'strategy added', before: {}, after: { strategy: { type: 'Recreate' } }, reapply: true },
    {
      name: 'revisionHistoryLimit changed',
      before: { revisionHistoryLimit: 2 },
      after: { revisionHistoryLimit: 5 },
      reapply: true,
    },
    { name: 'strategy removed', before: { strategy: { type: 'Recreate' } }, after: {}, reapply: true },
    {
      name: 'nothing of it changed',
      before: { revisionHistoryLimit: 2 },
      after: { revisionHistoryLimit: 2 },
      reapply: false,
    },
  ])('$name: re-apply $reapply', ({ before, after, reapply }) => {
    const next: Desired = {
      generation: 2,
      spec: spec(after),
      buildId: 'b',
      connection: { hostPort: 't:7233' },
      connectionVersion: '1',
      uid: owner.uid,
    };
    expect(planSpecChange(state(before), next, at).reapply).toBe(reapply);
  });
});
