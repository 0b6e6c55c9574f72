/**
 * temporal-worker-controller ≥ 1.7's kinds as the watcher reads them: a WorkerDeployment normalized into the one spec
 * the workflow gets (spec.deployment wins, the deprecated top-level fields still read, both given inconsistently
 * refused naming the fields), connectionRef.kind defaulted per kind, and the connection kinds' shared spec.
 */
import { describeIssues } from '../../api/common.js';
import { parseConnection, parseWorkerResource, type ConnectionKind, type ResourceKind } from '../../api/kinds.js';
import {
  WorkerDeploymentSpec,
  movedFieldProblems,
  normalizeWorkerDeploymentSpec,
  type WorkerDeploymentSpecInput,
} from '../../api/worker-deployment.js';

const template = (image = 'orders:1.0.0') => ({ spec: { containers: [{ name: 'worker', image }] } });
const policy = {
  rollout: { strategy: 'AllAtOnce' as const },
  workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'orders' },
};
const wd = (spec: Record<string, unknown>, name = 'orders') => ({
  apiVersion: 'glidepath.dev/v1alpha1',
  kind: 'WorkerDeployment',
  metadata: { name, namespace: 'shop' },
  spec: { ...policy, ...spec },
});
const twd = (spec: Record<string, unknown>) => ({
  apiVersion: 'glidepath.dev/v1alpha1',
  kind: 'TemporalWorkerDeployment',
  metadata: { name: 'orders', namespace: 'shop' },
  spec: { ...policy, ...spec },
});

function normalized(obj: unknown, kind: ResourceKind = 'WorkerDeployment') {
  const parsed = parseWorkerResource(obj, kind);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.resource;
}

describe('a WorkerDeployment normalized into the spec the workflow gets', () => {
  test.each([
    {
      name: 'spec.deployment alone',
      spec: { deployment: { replicas: 3, template: template(), minReadySeconds: 5, progressDeadlineSeconds: 120 } },
      expected: { replicas: 3, template: template(), minReadySeconds: 5, progressDeadlineSeconds: 120 },
    },
    {
      name: 'the deprecated top-level fields alone (a 1.6 spec)',
      spec: { replicas: 2, template: template(), minReadySeconds: 1, progressDeadlineSeconds: 60 },
      expected: { replicas: 2, template: template(), minReadySeconds: 1, progressDeadlineSeconds: 60 },
    },
    {
      name: 'both, agreeing',
      spec: { replicas: 2, template: template(), deployment: { replicas: 2, template: template() } },
      expected: { replicas: 2, template: template(), minReadySeconds: 0, progressDeadlineSeconds: 600 },
    },
    {
      name: 'neither: the defaults of a TemporalWorkerDeployment',
      spec: { deployment: { template: template() } },
      expected: { replicas: 1, template: template(), minReadySeconds: 0, progressDeadlineSeconds: 600 },
    },
    {
      name: 'mixed: each field from where it is given',
      spec: { template: template(), deployment: { replicas: 4 }, minReadySeconds: 10 },
      expected: { replicas: 4, template: template(), minReadySeconds: 10, progressDeadlineSeconds: 600 },
    },
  ])('$name', ({ spec, expected }) => {
    const resource = normalized(wd(spec));
    expect(resource.spec).toMatchObject(expected);
    expect(resource.spec).not.toHaveProperty('deployment');
    expect(resource.spec.sunset).toEqual({ scaledownDelay: '1h', deleteDelay: '24h' });
  });

  test('revisionHistoryLimit and strategy come along; the top-level spec has none of them', () => {
    const strategy = { type: 'RollingUpdate' as const, rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } };
    const resource = normalized(wd({ deployment: { template: template(), revisionHistoryLimit: 2, strategy } }));
    expect(resource.spec).toMatchObject({ revisionHistoryLimit: 2, strategy });
    expect(normalized(wd({ deployment: { template: template() } })).spec).not.toHaveProperty('strategy');
  });

  test('the same template in either place gives the same spec (and so the same build)', () => {
    const a = normalized(wd({ template: template() })).spec;
    const b = normalized(wd({ deployment: { template: template() } })).spec;
    expect(a).toEqual(b);
  });

  test('normalizing a spec without a template (one that did not pass the schema) names the field', () => {
    const spec = { ...policy, sunset: { scaledownDelay: '1h', deleteDelay: '24h' } } as unknown as WorkerDeploymentSpec;
    expect(() => normalizeWorkerDeploymentSpec(spec)).toThrow(/^spec\.deployment\.template: /);
  });
});

describe('refused, naming the fields', () => {
  test.each<{ name: string; spec: WorkerDeploymentSpecInput | Record<string, unknown>; problem: string }>([
    {
      name: 'no template anywhere',
      spec: { deployment: { replicas: 1 } },
      problem:
        'spec.deployment.template: a pod template is required: set spec.deployment.template (or the deprecated spec.template)',
    },
    {
      name: 'replicas in both places, different',
      spec: { replicas: 2, deployment: { replicas: 3, template: template() } },
      problem:
        'spec.replicas: spec.replicas (deprecated) and spec.deployment.replicas differ: set only spec.deployment.replicas',
    },
    {
      name: 'templates in both places, different',
      spec: { template: template('orders:1.0.0'), deployment: { template: template('orders:2.0.0') } },
      problem:
        'spec.template: spec.template (deprecated) and spec.deployment.template differ: set only spec.deployment.template',
    },
    {
      name: 'minReadySeconds in both places, different',
      spec: { minReadySeconds: 1, deployment: { minReadySeconds: 2, template: template() } },
      problem:
        'spec.minReadySeconds: spec.minReadySeconds (deprecated) and spec.deployment.minReadySeconds differ: set only spec.deployment.minReadySeconds',
    },
    {
      name: 'progressDeadlineSeconds in both places, different',
      spec: { progressDeadlineSeconds: 60, deployment: { progressDeadlineSeconds: 90, template: template() } },
      problem:
        'spec.progressDeadlineSeconds: spec.progressDeadlineSeconds (deprecated) and spec.deployment.progressDeadlineSeconds differ: set only spec.deployment.progressDeadlineSeconds',
    },
    {
      name: 'the deadline in spec.deployment not after minReadySeconds (from the top level)',
      spec: { minReadySeconds: 30, deployment: { progressDeadlineSeconds: 30, template: template() } },
      problem: 'spec.deployment.progressDeadlineSeconds: must be greater than minReadySeconds',
    },
    {
      name: 'the deprecated deadline not after minReadySeconds',
      spec: { template: template(), progressDeadlineSeconds: 10, minReadySeconds: 10 },
      problem: 'spec.progressDeadlineSeconds: must be greater than minReadySeconds',
    },
    {
      name: 'no deadline, minReadySeconds in spec.deployment past the default one',
      spec: { deployment: { template: template(), minReadySeconds: 600 } },
      problem: 'spec.deployment.minReadySeconds: must be less than progressDeadlineSeconds (600 when not set)',
    },
    {
      name: 'no deadline, the deprecated minReadySeconds past the default one',
      spec: { template: template(), minReadySeconds: 700 },
      problem: 'spec.minReadySeconds: must be less than progressDeadlineSeconds (600 when not set)',
    },
    {
      name: 'a maxSurge that is neither a count nor a percentage',
      spec: { deployment: { template: template(), strategy: { rollingUpdate: { maxSurge: 'half' } } } },
      problem: 'spec.deployment.strategy.rollingUpdate.maxSurge: must be a count or a percentage such as "25%"',
    },
    {
      name: 'a connectionRef.kind Glidepath does not serve',
      spec: {
        deployment: { template: template() },
        workerOptions: {
          connectionRef: { name: 'temporal', kind: 'TemporalCloudConnection' },
          temporalNamespace: 'orders',
        },
      },
      problem:
        'spec.workerOptions.connectionRef.kind: Invalid option: expected one of "TemporalConnection"|"Connection"|"ClusterConnection"',
    },
  ])('$name', ({ spec, problem }) => {
    const parsed = parseWorkerResource(wd(spec), 'WorkerDeployment');
    expect(parsed.ok ? '' : parsed.problem).toBe(problem);
  });

  test('movedFieldProblems agrees with the schema on a consistent spec: no problem', () => {
    expect(
      movedFieldProblems({ replicas: 2, template: template(), deployment: { replicas: 2, template: template() } }),
    ).toEqual([]);
    const parsed = WorkerDeploymentSpec.safeParse({ ...policy, deployment: { template: template() } });
    expect(parsed.success ? '' : describeIssues(parsed.error)).toBe('');
  });
});

describe('connectionRef.kind: the default depends on the resource kind', () => {
  test.each<{ kind: ResourceKind; ref: Record<string, string>; expected: ConnectionKind }>([
    { kind: 'TemporalWorkerDeployment', ref: { name: 'temporal' }, expected: 'TemporalConnection' },
    { kind: 'WorkerDeployment', ref: { name: 'temporal' }, expected: 'Connection' },
    {
      kind: 'TemporalWorkerDeployment',
      ref: { name: 'temporal', kind: 'ClusterConnection' },
      expected: 'ClusterConnection',
    },
    { kind: 'WorkerDeployment', ref: { name: 'temporal', kind: 'TemporalConnection' }, expected: 'TemporalConnection' },
  ])('$kind with $ref names a $expected', ({ kind, ref, expected }) => {
    const spec = {
      workerOptions: { connectionRef: ref, temporalNamespace: 'orders' },
      ...(kind === 'WorkerDeployment' ? { deployment: { template: template() } } : { template: template() }),
    };
    const resource = normalized(kind === 'WorkerDeployment' ? wd(spec) : twd(spec), kind);
    expect(resource.connectionRef).toEqual({ kind: expected, name: 'temporal' });
    // The workflow's spec says it too.
    expect(resource.spec.workerOptions.connectionRef).toEqual({ kind: expected, name: 'temporal' });
  });

  test('a TemporalWorkerDeployment reads as before (top-level fields, its defaults)', () => {
    const resource = normalized(twd({ template: template(), replicas: 3 }), 'TemporalWorkerDeployment');
    expect(resource.spec).toMatchObject({
      replicas: 3,
      minReadySeconds: 0,
      progressDeadlineSeconds: 600,
      template: template(),
    });
  });

  test('a WorkerDeployment whose name is not a DNS-1123 label is refused, naming metadata.name', () => {
    const parsed = parseWorkerResource(wd({ deployment: { template: template() } }, 'orders.v2'), 'WorkerDeployment');
    expect(parsed.ok ? '' : parsed.problem).toMatch(/^metadata\.name: must be a DNS-1123 label/);
  });
});

describe('connections: one spec for TemporalConnection, Connection and ClusterConnection', () => {
  const conn = (kind: ConnectionKind, spec: Record<string, unknown>) => ({
    apiVersion: 'glidepath.dev/v1alpha1',
    kind,
    metadata: { name: 'temporal' },
    spec,
  });

  test.each<ConnectionKind>(['TemporalConnection', 'Connection', 'ClusterConnection'])(
    '%s takes tls.caCertSecretRef',
    (kind) => {
      const spec = {
        hostPort: 'temporal.internal:7233',
        tls: { serverName: 'temporal.internal', caCertSecretRef: { name: 'temporal-ca' } },
        apiKeySecretRef: { name: 'temporal-api', key: 'key' },
      };
      expect(parseConnection(conn(kind, spec), kind)).toEqual({ ok: true, spec });
    },
  );

  test.each([
    {
      spec: {
        hostPort: 'temporal:7233',
        mutualTLSSecretRef: { name: 'mtls' },
        tls: { caCertSecretRef: { name: 'ca' } },
      },
      problem:
        "spec.tls.caCertSecretRef: tls.caCertSecretRef cannot be combined with mutualTLSSecretRef: put the CA in that Secret's ca.crt key instead",
    },
    {
      spec: { hostPort: 'temporal:7233', tls: { caCertSecretRef: { name: 'Temporal_CA' } } },
      problem:
        'spec.tls.caCertSecretRef.name: must be a DNS-1123 label: lower-case letters, digits and "-", starting and ending alphanumeric',
    },
    {
      spec: { hostPort: 'temporal' },
      problem: 'spec.hostPort: must be host:port, e.g. "temporal-frontend.temporal:7233"',
    },
  ])('refused: $problem', ({ spec, problem }) => {
    const parsed = parseConnection(conn('Connection', spec), 'Connection');
    expect(parsed.ok ? '' : parsed.problem).toBe(problem);
  });

  test('the kind must be the one asked for', () => {
    const parsed = parseConnection(conn('Connection', { hostPort: 'temporal:7233' }), 'ClusterConnection');
    expect(parsed.ok ? '' : parsed.problem).toMatch(/^kind: /);
  });
});
