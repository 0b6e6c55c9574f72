/**
 * The generated CRDs as kube-apiserver enforces them: every sample in `k8s-manifests/samples/` is accepted,
 * defaults are filled in by the apiserver, and a table of invalid resources is refused with a message that
 * names the offending field. Each invalid spec is also checked against the zod schema the watcher uses, so
 * the two layers refuse the same input (and name the same field).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { describeIssues } from '../../api/common.js';
import { parseConnection, parseWorkerResource, type ConnectionKind, type ResourceKind } from '../../api/kinds.js';
import { TemporalConnectionSpec } from '../../api/temporal-connection.js';
import { TemporalWorkerDeployment, TemporalWorkerDeploymentSpec } from '../../api/temporal-worker-deployment.js';

const samplesDir = join(dirname(fileURLToPath(import.meta.url)), '../../k8s-manifests/samples');
const namespace = `crd-validation-${Date.now().toString(36)}`;

interface KubectlResult {
  ok: boolean;
  stdout: string;
  stderr: string;
}

/** Runs kubectl against the test kube-apiserver; never throws, so a refusal can be inspected. */
function kubectl(args: string[], input?: string): KubectlResult {
  const kubeconfig = process.env.KUBECONFIG;
  const bin = process.env.GLIDEPATH_KUBECTL;
  if (!kubeconfig || !bin) throw new Error('KUBECONFIG and GLIDEPATH_KUBECTL must be set (integration global setup)');
  try {
    const stdout = execFileSync(bin, ['--kubeconfig', kubeconfig, ...args], {
      input,
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
      timeout: 30_000,
    });
    return { ok: true, stdout, stderr: '' };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return { ok: false, stdout: e.stdout ?? '', stderr: e.stderr || e.message };
  }
}

/**
 * Server-side apply, dry run: the whole admission chain (strict field validation, the structural schema,
 * CEL rules) answers, and nothing is stored.
 */
function dryRunApply(args: string[], input?: string): KubectlResult {
  return kubectl(
    ['apply', '--server-side', '--dry-run=server', '--field-manager=crd-validation-test', '-n', namespace, ...args],
    input,
  );
}

// ---------------------------------------------------------------------------------------------------------
// Valid base objects, mutated once per table row.

interface KeyRef {
  name?: string;
  key?: string;
}

interface GateObj {
  workflowType?: string;
  taskQueue?: string;
  input?: Record<string, unknown>;
  inputFrom?: { configMapKeyRef?: KeyRef; secretKeyRef?: KeyRef };
  timeout?: string;
}

interface StepObj {
  rampPercentage: number;
  pauseDuration?: string;
  gate?: GateObj;
}

interface TwdObj {
  apiVersion: string;
  kind: 'TemporalWorkerDeployment';
  metadata: { name: string };
  spec: {
    replicas?: number;
    minReadySeconds?: number;
    progressDeadlineSeconds?: number;
    template: {
      metadata?: { labels?: Record<string, string> };
      spec: { containers: Record<string, unknown>[]; restartPolicy?: string };
    };
    rollout: { strategy: string; steps?: StepObj[]; gate?: GateObj; gateFailurePolicy?: string };
    sunset?: { scaledownDelay?: string; deleteDelay?: string };
    workerOptions: { connectionRef: { name: string }; temporalNamespace: string };
  };
}

interface ConnectionObj {
  apiVersion: string;
  kind: 'TemporalConnection';
  metadata: { name: string };
  spec: { hostPort?: string; mutualTLSSecretRef?: { name: string }; apiKeySecretRef?: KeyRef };
}

function baseTwd(): TwdObj {
  return {
    apiVersion: 'glidepath.dev/v1alpha1',
    kind: 'TemporalWorkerDeployment',
    metadata: { name: 'orders' },
    spec: {
      replicas: 2,
      template: {
        metadata: { labels: { app: 'orders' } },
        spec: {
          containers: [
            {
              name: 'worker',
              image: 'glidepath/example-worker:1.0.0',
              env: [{ name: 'EXAMPLE_WORKFLOW_HOLD', value: '20s' }],
            },
          ],
        },
      },
      rollout: {
        strategy: 'Progressive',
        gate: { workflowType: 'exampleGate', input: { smoke: true } },
        steps: [
          { rampPercentage: 10, pauseDuration: '10s' },
          { rampPercentage: 50, pauseDuration: '20s', gate: { workflowType: 'exampleGate' } },
          { rampPercentage: 90 },
        ],
      },
      sunset: { scaledownDelay: '30s', deleteDelay: '1m' },
      workerOptions: { connectionRef: { name: 'local' }, temporalNamespace: 'default' },
    },
  };
}

function baseConnection(): ConnectionObj {
  return {
    apiVersion: 'glidepath.dev/v1alpha1',
    kind: 'TemporalConnection',
    metadata: { name: 'cloud' },
    spec: { hostPort: 'my-ns.a1b2c.tmprl.cloud:7233', apiKeySecretRef: { name: 'temporal-api-key', key: 'api-key' } },
  };
}

interface InvalidCase {
  name: string;
  /** The resource, built from a valid base with one mutation. */
  resource: TwdObj | ConnectionObj;
  /** A substring of the field path kube-apiserver names, e.g. `spec.rollout.steps`. */
  field: string;
  /** A key part of kube-apiserver's message. */
  message: string;
  /** Set (with the reason) for problems only kube-apiserver checks: the zod spec schema accepts them. */
  apiserverOnly?: string;
}

const twd = (mutate: (r: TwdObj) => void): TwdObj => {
  const r = baseTwd();
  mutate(r);
  return r;
};
const conn = (mutate: (r: ConnectionObj) => void): ConnectionObj => {
  const r = baseConnection();
  mutate(r);
  return r;
};
/** The rollout gate (the base has one, with `input`; its second step has a step gate). */
const rolloutGate = (r: TwdObj): GateObj => r.spec.rollout.gate!;
const step = (r: TwdObj, i: number): StepObj => r.spec.rollout.steps![i]!;

const tooManySteps = Array.from({ length: 21 }, (_, i) => ({ rampPercentage: i + 1, pauseDuration: '1m' }));

const invalid: InvalidCase[] = [
  // --- rollout strategy and steps
  {
    name: 'Progressive without steps',
    resource: twd((r) => delete r.spec.rollout.steps),
    field: 'spec.rollout.steps',
    message: 'a Progressive rollout needs at least one step',
  },
  {
    name: 'Progressive with an empty step list',
    resource: twd((r) => (r.spec.rollout.steps = [])),
    field: 'spec.rollout.steps',
    message: 'a Progressive rollout needs at least one step',
  },
  {
    name: 'rampPercentage 0',
    resource: twd((r) => (step(r, 0).rampPercentage = 0)),
    field: 'spec.rollout.steps[0].rampPercentage',
    message: 'should be greater than or equal to 1',
  },
  {
    name: 'rampPercentage 100',
    resource: twd((r) => (step(r, 2).rampPercentage = 100)),
    field: 'spec.rollout.steps[2].rampPercentage',
    message: 'should be less than or equal to 99',
  },
  {
    name: 'rampPercentage not an integer',
    resource: twd((r) => (step(r, 0).rampPercentage = 12.5)),
    field: 'spec.rollout.steps[0].rampPercentage',
    message: 'integer',
  },
  {
    name: 'equal ramps',
    resource: twd((r) => (step(r, 1).rampPercentage = 10)),
    field: 'spec.rollout.steps',
    message: 'rampPercentage must strictly increase from step to step',
  },
  {
    name: 'decreasing ramps',
    resource: twd((r) => (r.spec.rollout.steps = [{ rampPercentage: 50 }, { rampPercentage: 20 }])),
    field: 'spec.rollout.steps',
    message: 'rampPercentage must strictly increase from step to step',
  },
  {
    name: '21 steps',
    resource: twd((r) => (r.spec.rollout.steps = tooManySteps)),
    field: 'spec.rollout.steps',
    message: 'must have at most 20 items',
  },
  {
    name: 'pauseDuration "5 minutes"',
    resource: twd((r) => (step(r, 0).pauseDuration = '5 minutes')),
    field: 'spec.rollout.steps[0].pauseDuration',
    message: 'should match',
  },
  {
    name: 'pauseDuration "0s"',
    resource: twd((r) => (step(r, 0).pauseDuration = '0s')),
    field: 'spec.rollout.steps[0].pauseDuration',
    message: 'must be a duration > 0s',
  },
  {
    name: 'pauseDuration "-5s"',
    resource: twd((r) => (step(r, 1).pauseDuration = '-5s')),
    field: 'spec.rollout.steps[1].pauseDuration',
    message: 'should match',
  },
  {
    name: 'strategy "Canary"',
    resource: twd((r) => (r.spec.rollout.strategy = 'Canary')),
    field: 'spec.rollout.strategy',
    message: 'Unsupported value: "Canary"',
  },
  {
    name: 'gateFailurePolicy "Retry"',
    resource: twd((r) => (r.spec.rollout.gateFailurePolicy = 'Retry')),
    field: 'spec.rollout.gateFailurePolicy',
    message: 'Unsupported value: "Retry"',
  },
  // --- gates
  {
    name: 'gate with both input and inputFrom',
    resource: twd((r) => (rolloutGate(r).inputFrom = { configMapKeyRef: { name: 'gate-input', key: 'smoke.json' } })),
    field: 'spec.rollout.gate.inputFrom',
    message: 'only one of input or inputFrom may be set',
  },
  {
    name: 'inputFrom with neither configMapKeyRef nor secretKeyRef',
    resource: twd((r) => (step(r, 1).gate!.inputFrom = {})),
    field: 'spec.rollout.steps[1].gate.inputFrom',
    message: 'exactly one of configMapKeyRef or secretKeyRef must be set',
  },
  {
    name: 'inputFrom with both configMapKeyRef and secretKeyRef',
    resource: twd((r) => {
      delete rolloutGate(r).input;
      rolloutGate(r).inputFrom = {
        configMapKeyRef: { name: 'gate-input', key: 'smoke.json' },
        secretKeyRef: { name: 'gate-secret', key: 'token' },
      };
    }),
    field: 'spec.rollout.gate.inputFrom',
    message: 'exactly one of configMapKeyRef or secretKeyRef must be set',
  },
  {
    name: 'gate without workflowType',
    resource: twd((r) => delete rolloutGate(r).workflowType),
    field: 'spec.rollout.gate.workflowType',
    message: 'Required value',
  },
  {
    name: 'step gate without workflowType',
    resource: twd((r) => (step(r, 1).gate = { taskQueue: 'example' })),
    field: 'spec.rollout.steps[1].gate.workflowType',
    message: 'Required value',
  },
  {
    name: 'gate timeout "0s"',
    resource: twd((r) => (rolloutGate(r).timeout = '0s')),
    field: 'spec.rollout.gate.timeout',
    message: 'must be a duration > 0s',
  },
  // --- sunset
  {
    name: 'sunset scaledownDelay "1d"',
    resource: twd((r) => (r.spec.sunset!.scaledownDelay = '1d')),
    field: 'spec.sunset.scaledownDelay',
    message: 'should match',
  },
  {
    name: 'sunset deleteDelay "-1h"',
    resource: twd((r) => (r.spec.sunset!.deleteDelay = '-1h')),
    field: 'spec.sunset.deleteDelay',
    message: 'should match',
  },
  // --- pod template
  {
    name: 'template.spec.restartPolicy Never',
    resource: twd((r) => (r.spec.template.spec.restartPolicy = 'Never')),
    field: 'spec.template.spec.restartPolicy',
    message: 'only "Always" is allowed',
  },
  {
    name: 'a typo in a container field (imagee)',
    resource: twd((r) => {
      const c = r.spec.template.spec.containers[0]!;
      c.imagee = c.image;
      delete c.image;
    }),
    field: 'spec.template.spec.containers[name="worker"].imagee',
    message: 'field not declared in schema',
    apiserverOnly:
      'zod keeps the pod template loose; Kubernetes’ PodTemplateSpec schema in the CRD rejects unknown fields',
  },
  {
    name: 'a container with no name',
    resource: twd((r) => delete r.spec.template.spec.containers[0]!.name),
    field: 'spec.template.spec.containers',
    message: 'omits all key fields ["name"]',
  },
  // --- replicas and deadlines
  {
    name: 'negative replicas',
    resource: twd((r) => (r.spec.replicas = -1)),
    field: 'spec.replicas',
    message: 'should be greater than or equal to 0',
  },
  {
    name: 'progressDeadlineSeconds equal to minReadySeconds',
    resource: twd((r) => {
      r.spec.minReadySeconds = 30;
      r.spec.progressDeadlineSeconds = 30;
    }),
    field: 'spec.progressDeadlineSeconds',
    message: 'must be greater than minReadySeconds',
  },
  {
    name: 'progressDeadlineSeconds below minReadySeconds',
    resource: twd((r) => {
      r.spec.minReadySeconds = 120;
      r.spec.progressDeadlineSeconds = 60;
    }),
    field: 'spec.progressDeadlineSeconds',
    message: 'must be greater than minReadySeconds',
  },
  {
    name: 'progressDeadlineSeconds 0',
    resource: twd((r) => (r.spec.progressDeadlineSeconds = 0)),
    field: 'spec.progressDeadlineSeconds',
    message: 'should be greater than or equal to 1',
  },
  // --- worker options
  {
    name: 'empty temporalNamespace',
    resource: twd((r) => (r.spec.workerOptions.temporalNamespace = '')),
    field: 'spec.workerOptions.temporalNamespace',
    message: 'should be at least 1 chars long',
  },
  {
    name: 'connectionRef name with uppercase',
    resource: twd((r) => (r.spec.workerOptions.connectionRef.name = 'Local')),
    field: 'spec.workerOptions.connectionRef.name',
    message: 'should match',
  },
  {
    name: 'a typo in a spec field (replica)',
    resource: twd((r) => {
      (r.spec as Record<string, unknown>).replica = r.spec.replicas;
      delete r.spec.replicas;
    }),
    field: '.spec.replica',
    message: 'field not declared in schema',
    apiserverOnly: 'zod objects strip unknown keys; the structural schema with strict field validation refuses them',
  },
  {
    name: 'pauseDuration beyond the range of a CEL duration',
    resource: twd((r) => (step(r, 0).pauseDuration = '100000000h')),
    field: 'spec.rollout.steps[0].pauseDuration',
    message: 'must be a duration > 0s',
  },
  {
    name: 'pauseDuration under a nanosecond (CEL reads "0.5ns" as 0s)',
    resource: twd((r) => (step(r, 0).pauseDuration = '0.5ns')),
    field: 'spec.rollout.steps[0].pauseDuration',
    message: 'must be a duration > 0s',
  },
  {
    name: 'a custom build ID a label value cannot hold (refused, not sanitised)',
    resource: twd((r) => Object.assign(r.spec.workerOptions, { unsafeCustomBuildID: 'feature/login' })),
    field: 'spec.workerOptions.unsafeCustomBuildID',
    message: 'should match',
  },
  // --- metadata
  {
    name: 'metadata.name longer than 63 characters',
    resource: twd((r) => (r.metadata.name = 'o'.repeat(64))),
    field: 'metadata.name',
    message: 'may not be more than 63',
    apiserverOnly: 'metadata is outside the spec (the zod TemporalWorkerDeployment object checks it too)',
  },
  {
    name: 'metadata.name with "." (a DNS subdomain, but Temporal refuses "." in a worker deployment name)',
    resource: twd((r) => (r.metadata.name = 'orders.v1')),
    field: 'metadata.name',
    message: 'should match',
    apiserverOnly: 'metadata is outside the spec (the zod TemporalWorkerDeployment object checks it too)',
  },
  // --- TemporalConnection
  {
    name: 'connection with both mutualTLSSecretRef and apiKeySecretRef',
    resource: conn((r) => (r.spec.mutualTLSSecretRef = { name: 'temporal-mtls' })),
    field: 'spec.apiKeySecretRef',
    message: 'only one of mutualTLSSecretRef or apiKeySecretRef may be set',
  },
  {
    name: 'hostPort without a port',
    resource: conn((r) => (r.spec.hostPort = 'my-ns.a1b2c.tmprl.cloud')),
    field: 'spec.hostPort',
    message: 'should match',
  },
  {
    name: 'hostPort missing',
    resource: conn((r) => delete r.spec.hostPort),
    field: 'spec.hostPort',
    message: 'Required value',
  },
  {
    name: 'apiKeySecretRef without key',
    resource: conn((r) => delete r.spec.apiKeySecretRef!.key),
    field: 'spec.apiKeySecretRef.key',
    message: 'Required value',
  },
  {
    name: 'mutualTLSSecretRef name with underscore',
    resource: conn((r) => {
      delete r.spec.apiKeySecretRef;
      r.spec.mutualTLSSecretRef = { name: 'temporal_mtls' };
    }),
    field: 'spec.mutualTLSSecretRef.name',
    message: 'should match',
  },
];

/**
 * Known gaps: resources kube-apiserver should refuse but accepts, because the PodTemplateSpec schema embedded
 * in the CRD lacks what Kubernetes checks in Go (or drops from its OpenAPI: `x-kubernetes-list-type: map`
 * on containers). A Deployment with such a template is refused, so today the rollout fails at deploy time
 * rather than at `kubectl apply`. The fix is in api/crd.ts `renderCrds`: on
 * `template.properties.spec.properties.containers` set `minItems: 1`, `x-kubernetes-list-type: map` and
 * `x-kubernetes-list-map-keys: [name]`, and on its items' `name` the DNS-1123 label pattern (zod already
 * refuses an empty list; it should also refuse duplicate and non-label names). These run as `test.failing`:
 * when the CRD is fixed they fail, and the row belongs in `invalid` above.
 */
/** Container rules a Deployment enforces in Go code, added to the CRD by api/crd.ts. */
const knownGaps: InvalidCase[] = [
  {
    name: 'no containers',
    resource: twd((r) => (r.spec.template.spec.containers = [])),
    field: 'spec.template.spec.containers',
    message: 'should have at least 1 items',
  },
  {
    name: 'two containers with the same name',
    resource: twd((r) =>
      r.spec.template.spec.containers.push({ name: 'worker', image: 'glidepath/example-worker:1.0.1' }),
    ),
    field: 'spec.template.spec.containers',
    message: 'duplicate entries for key [name="worker"]',
  },
  {
    name: 'a container name that is not a DNS-1123 label',
    resource: twd((r) => (r.spec.template.spec.containers[0]!.name = 'Worker_1')),
    field: 'spec.template.spec.containers[0].name',
    message: 'should match',
  },
];

/** The spec schema (zod) matching a resource's kind. */
function zodSpec(resource: TwdObj | ConnectionObj) {
  return resource.kind === 'TemporalWorkerDeployment'
    ? TemporalWorkerDeploymentSpec.safeParse(resource.spec)
    : TemporalConnectionSpec.safeParse(resource.spec);
}

beforeAll(() => {
  const created = kubectl(['create', 'namespace', namespace]);
  if (!created.ok) throw new Error(`could not create namespace ${namespace}: ${created.stderr}`);
});

afterAll(() => {
  // Without kube-controller-manager the namespace stays Terminating; the servers are thrown away anyway.
  kubectl(['delete', 'namespace', namespace, '--wait=false']);
});

describe('samples', () => {
  const files = readdirSync(samplesDir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();

  test('the documented samples exist', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'temporal-connection.yaml',
        'connection-mtls.yaml',
        'connection-api-key.yaml',
        'all-at-once.yaml',
        'progressive.yaml',
        'manual.yaml',
        'progressive-with-step-gates.yaml',
        // temporal-worker-controller ≥ 1.7's kinds
        'worker-deployment.yaml',
        'connection.yaml',
        'cluster-connection.yaml',
      ]),
    );
  });

  test.each(files)('%s is accepted by kube-apiserver', (file) => {
    const result = dryRunApply(['-f', join(samplesDir, file)]);
    expect(result.stderr).toBe('');
    expect(result.ok).toBe(true);
    const docs = parseAllDocuments(readFileSync(join(samplesDir, file), 'utf8')).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string } },
    );
    for (const doc of docs)
      expect(result.stdout).toContain(`/${doc.metadata.name} serverside-applied (server dry run)`);
  });

  test.each(files)('%s parses with the zod schemas and follows the demo conventions', (file) => {
    const docs = parseAllDocuments(readFileSync(join(samplesDir, file), 'utf8')).map(
      (d) => d.toJS() as { kind: string },
    );
    const connectionKinds = ['TemporalConnection', 'Connection', 'ClusterConnection'];
    const ours = docs.filter(
      (d) => d.kind === 'TemporalWorkerDeployment' || d.kind === 'WorkerDeployment' || connectionKinds.includes(d.kind),
    );
    expect(ours.length).toBeGreaterThan(0);
    for (const doc of ours) {
      if (connectionKinds.includes(doc.kind)) {
        const parsed = parseConnection(doc, doc.kind as ConnectionKind);
        expect(parsed.ok ? '' : parsed.problem).toBe('');
        continue;
      }
      // Either kind, as the watcher reads it (a WorkerDeployment's spec.deployment normalized).
      const parsed = parseWorkerResource(doc, doc.kind as ResourceKind);
      expect(parsed.ok ? '' : parsed.problem).toBe('');
      if (doc.kind === 'TemporalWorkerDeployment') expect(TemporalWorkerDeployment.safeParse(doc).success).toBe(true);
      const spec = (parsed as Extract<typeof parsed, { ok: true }>).resource.spec;
      expect(spec.workerOptions).toMatchObject({ connectionRef: { name: 'local' }, temporalNamespace: 'default' });
      const containers = spec.template.spec.containers as {
        image?: string;
        env?: { name: string; value?: string }[];
      }[];
      expect(containers).toHaveLength(1);
      expect(containers[0]!.image).toBe('glidepath/example-worker:1.0.0');
      expect(containers[0]!.env?.map((e) => e.name)).toContain('EXAMPLE_WORKFLOW_HOLD');
    }
  });

  test('temporal-connection.yaml is the local demo connection', () => {
    const doc = parseAllDocuments(readFileSync(join(samplesDir, 'temporal-connection.yaml'), 'utf8'))[0]!.toJS();
    expect(doc).toMatchObject({
      kind: 'TemporalConnection',
      metadata: { name: 'local' },
      spec: { hostPort: '127.0.0.1:7233' },
    });
  });
});

describe('defaults', () => {
  test('kube-apiserver fills in the same defaults as the zod schema for a minimal TemporalWorkerDeployment', () => {
    const minimal = {
      apiVersion: 'glidepath.dev/v1alpha1',
      kind: 'TemporalWorkerDeployment',
      metadata: { name: 'minimal', namespace },
      spec: {
        template: { spec: { containers: [{ name: 'worker', image: 'glidepath/example-worker:1.0.0' }] } },
        rollout: { strategy: 'AllAtOnce' },
        workerOptions: { connectionRef: { name: 'local' }, temporalNamespace: 'default' },
      },
    };
    const result = kubectl(['create', '-o', 'json', '-f', '-'], JSON.stringify(minimal));
    expect(result.stderr).toBe('');
    const created = JSON.parse(result.stdout) as { spec: Record<string, unknown> };
    expect(created.spec).toMatchObject({
      replicas: 1,
      minReadySeconds: 0,
      progressDeadlineSeconds: 600,
      sunset: { scaledownDelay: '1h', deleteDelay: '24h' },
      rollout: { strategy: 'AllAtOnce', gateFailurePolicy: 'Abort' },
    });
    // The watcher parses with zod: it must see exactly what kube-apiserver stored.
    expect(created.spec).toEqual(TemporalWorkerDeploymentSpec.parse(minimal.spec));

    const read = kubectl(['get', 'temporalworkerdeployment', 'minimal', '-n', namespace, '-o', 'json']);
    expect((JSON.parse(read.stdout) as { spec: unknown }).spec).toEqual(created.spec);
  });

  test('a partial sunset gets the other delay defaulted', () => {
    const partial = {
      apiVersion: 'glidepath.dev/v1alpha1',
      kind: 'TemporalWorkerDeployment',
      metadata: { name: 'partial-sunset', namespace },
      spec: {
        template: { spec: { containers: [{ name: 'worker', image: 'glidepath/example-worker:1.0.0' }] } },
        rollout: { strategy: 'Manual' },
        sunset: { scaledownDelay: '30s' },
        workerOptions: { connectionRef: { name: 'local' }, temporalNamespace: 'default' },
      },
    };
    const result = kubectl(['create', '-o', 'json', '-f', '-'], JSON.stringify(partial));
    expect(result.stderr).toBe('');
    const created = JSON.parse(result.stdout) as { spec: Record<string, unknown> };
    expect(created.spec.sunset).toEqual({ scaledownDelay: '30s', deleteDelay: '24h' });
    expect(created.spec).toEqual(TemporalWorkerDeploymentSpec.parse(partial.spec));
  });
});

describe('invalid resources', () => {
  test('the table is wide enough', () => {
    expect(invalid.length).toBeGreaterThanOrEqual(24);
    expect(new Set(invalid.map((c) => c.name)).size).toBe(invalid.length);
  });

  test('the valid bases are accepted by kube-apiserver and zod', () => {
    for (const base of [baseTwd(), baseConnection()]) {
      const result = dryRunApply(['-f', '-'], JSON.stringify(base));
      expect(result.stderr).toBe('');
      const parsed = zodSpec(base);
      expect(parsed.success ? '' : describeIssues(parsed.error, 'spec')).toBe('');
    }
  });

  test.each(invalid)('kube-apiserver refuses: $name', ({ resource, field, message }) => {
    const result = dryRunApply(['-f', '-'], JSON.stringify(resource));
    expect(result.ok).toBe(false);
    expect(result.stderr).toContain(field);
    expect(result.stderr).toContain(message);
  });

  test.each(invalid.filter((c) => !c.apiserverOnly))(
    'zod refuses it too, naming the same field: $name',
    ({ resource, field }) => {
      const parsed = zodSpec(resource);
      expect(parsed.success).toBe(false);
      expect(describeIssues(parsed.error!, 'spec')).toContain(field);
    },
  );

  test.each(invalid.filter((c) => c.apiserverOnly))(
    'zod spec schema accepts (apiserver-only): $name',
    ({ resource }) => {
      expect(zodSpec(resource).success).toBe(true);
    },
  );

  test.each(knownGaps)(
    'kube-apiserver refuses what a Deployment would (container rules): $name',
    ({ resource, field, message }) => {
      const result = dryRunApply(['-f', '-'], JSON.stringify(resource));
      expect(result.ok).toBe(false);
      expect(result.stderr).toContain(field);
      expect(result.stderr).toContain(message);
    },
  );

  test('metadata.name over 63 characters is refused by the zod resource schema as well', () => {
    const long = twd((r) => (r.metadata.name = 'o'.repeat(64)));
    expect(TemporalWorkerDeployment.safeParse(long).success).toBe(false);
    expect(TemporalWorkerDeployment.safeParse(twd((r) => (r.metadata.name = 'orders.v1'))).success).toBe(false);
  });
});
