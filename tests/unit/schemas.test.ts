import type { z } from 'zod';
import { describeIssues } from '../../api/common.js';
import { TemporalConnectionSpec } from '../../api/temporal-connection.js';
import {
  TemporalWorkerDeploymentSpec,
  type TemporalWorkerDeploymentSpecInput,
} from '../../api/temporal-worker-deployment.js';

function validSpec(): TemporalWorkerDeploymentSpecInput {
  return {
    template: { spec: { containers: [{ name: 'worker', image: 'orders:1.2.3' }] } },
    rollout: {
      strategy: 'Progressive',
      steps: [
        { rampPercentage: 10, pauseDuration: '5m' },
        { rampPercentage: 50, pauseDuration: '30s', gate: { workflowType: 'Check', input: { level: 1 } } },
        { rampPercentage: 99 },
      ],
      gate: {
        workflowType: 'Smoke',
        inputFrom: { configMapKeyRef: { name: 'smoke', key: 'input.json' } },
        timeout: '10m',
      },
    },
    workerOptions: { connectionRef: { name: 'temporal' }, temporalNamespace: 'orders' },
  };
}

/** Parses and returns the issues as `path: message` lines, failing if the spec is accepted. */
function rejection(spec: unknown, schema: z.ZodType = TemporalWorkerDeploymentSpec): string {
  const result = schema.safeParse(spec);
  if (result.success) throw new Error(`accepted: ${JSON.stringify(spec)}`);
  return describeIssues(result.error);
}

type Spec = Record<string, unknown> & TemporalWorkerDeploymentSpecInput;
const edit = (change: (s: Spec) => void) => (): unknown => {
  const s = validSpec() as Spec;
  change(s);
  return s;
};
const steps = (s: Spec) => s.rollout.steps!;
const gate = (s: Spec) => s.rollout.gate!;

describe('TemporalWorkerDeploymentSpec: valid specs', () => {
  test('a valid spec parses and gets its defaults', () => {
    const parsed = TemporalWorkerDeploymentSpec.parse(validSpec());
    expect(parsed).toMatchObject({
      replicas: 1,
      minReadySeconds: 0,
      progressDeadlineSeconds: 600,
      sunset: { scaledownDelay: '1h', deleteDelay: '24h' },
      rollout: { strategy: 'Progressive', gateFailurePolicy: 'Abort' },
    });
    expect(parsed.rollout.steps).toHaveLength(3);
    expect(parsed.template.spec.containers[0]).toEqual({ name: 'worker', image: 'orders:1.2.3' });
  });

  test('a partial sunset gets the missing delay defaulted', () => {
    expect(TemporalWorkerDeploymentSpec.parse({ ...validSpec(), sunset: { scaledownDelay: '5m' } }).sunset).toEqual({
      scaledownDelay: '5m',
      deleteDelay: '24h',
    });
  });

  test.each([
    ['given values are kept', { replicas: 0, minReadySeconds: 10, progressDeadlineSeconds: 11 }],
    ['AllAtOnce without steps', { rollout: { strategy: 'AllAtOnce' } }],
    ['Manual without steps', { rollout: { strategy: 'Manual', gateFailurePolicy: 'Pause' } }],
    ['zero sunset delays', { sunset: { scaledownDelay: '0s', deleteDelay: '0s' } }],
    ['restartPolicy Always', { template: { spec: { containers: [{ name: 'w' }], restartPolicy: 'Always' } } }],
    [
      '20 steps',
      {
        rollout: { strategy: 'Progressive', steps: Array.from({ length: 20 }, (_, i) => ({ rampPercentage: i + 1 })) },
      },
    ],
    [
      'unknown pod template fields are kept',
      { template: { spec: { containers: [{ name: 'w', ports: [] }], nodeSelector: { a: 'b' } } } },
    ],
    [
      'inputFrom with a Secret key',
      {
        rollout: {
          strategy: 'AllAtOnce',
          gate: { workflowType: 'G', inputFrom: { secretKeyRef: { name: 's', key: 'k' } } },
        },
      },
    ],
    [
      'a custom build ID that is a label value',
      { workerOptions: { connectionRef: { name: 't' }, temporalNamespace: 'n', unsafeCustomBuildID: 'V1.2_rc-3' } },
    ],
    [
      'the longest duration Go has',
      { rollout: { strategy: 'AllAtOnce', gate: { workflowType: 'G', timeout: '2562047h47m16.854775807s' } } },
    ],
  ])('accepts %s', (_case, overrides) => {
    const result = TemporalWorkerDeploymentSpec.safeParse({ ...validSpec(), ...overrides });
    expect(result.success ? '' : describeIssues(result.error)).toBe('');
    expect(result.data).toMatchObject(overrides);
  });
});

describe('TemporalWorkerDeploymentSpec: invalid specs name the offending field', () => {
  test.each<[string, () => unknown, string]>([
    [
      'Progressive without steps',
      edit((s) => delete s.rollout.steps),
      'rollout.steps: a Progressive rollout needs at least one step',
    ],
    [
      'Progressive with an empty step list',
      edit((s) => (s.rollout.steps = [])),
      'rollout.steps: a Progressive rollout needs at least one step',
    ],
    ['a ramp of 0', edit((s) => (steps(s)[0]!.rampPercentage = 0)), 'rollout.steps[0].rampPercentage'],
    ['a ramp of 100', edit((s) => (steps(s)[2]!.rampPercentage = 100)), 'rollout.steps[2].rampPercentage'],
    ['a fractional ramp', edit((s) => (steps(s)[0]!.rampPercentage = 12.5)), 'rollout.steps[0].rampPercentage'],
    [
      'equal ramps',
      edit((s) => (steps(s)[1]!.rampPercentage = 10)),
      'rollout.steps: rampPercentage must strictly increase',
    ],
    [
      'decreasing ramps',
      edit((s) => (steps(s)[1]!.rampPercentage = 5)),
      'rollout.steps: rampPercentage must strictly increase',
    ],
    [
      '21 steps',
      edit((s) => (s.rollout.steps = Array.from({ length: 21 }, (_, i) => ({ rampPercentage: i + 1 })))),
      'rollout.steps: Too big',
    ],
    [
      'a duration "5 minutes"',
      edit((s) => (steps(s)[0]!.pauseDuration = '5 minutes')),
      'rollout.steps[0].pauseDuration: must be a duration such as',
    ],
    [
      'a zero pauseDuration',
      edit((s) => (steps(s)[0]!.pauseDuration = '0s')),
      'rollout.steps[0].pauseDuration: must be a duration > 0s',
    ],
    ['a zero gate timeout', edit((s) => (gate(s).timeout = '0s')), 'rollout.gate.timeout: must be a duration > 0s'],
    [
      'a bad sunset delay',
      edit((s) => (s.sunset = { scaledownDelay: '1d' })),
      'sunset.scaledownDelay: must be a duration such as',
    ],
    [
      'a gate with input and inputFrom',
      edit((s) => (gate(s).input = { a: 1 })),
      'rollout.gate.inputFrom: only one of input or inputFrom may be set',
    ],
    [
      'a step gate with input and inputFrom',
      edit((s) => (steps(s)[1]!.gate!.inputFrom = { secretKeyRef: { name: 's', key: 'k' } })),
      'rollout.steps[1].gate.inputFrom: only one of input or inputFrom may be set',
    ],
    [
      'inputFrom with neither ref',
      edit((s) => (gate(s).inputFrom = {})),
      'rollout.gate.inputFrom: exactly one of configMapKeyRef or secretKeyRef',
    ],
    [
      'inputFrom with both refs',
      edit(
        (s) =>
          (gate(s).inputFrom = { configMapKeyRef: { name: 'c', key: 'k' }, secretKeyRef: { name: 's', key: 'k' } }),
      ),
      'rollout.gate.inputFrom: exactly one of configMapKeyRef or secretKeyRef',
    ],
    [
      'an inputFrom ref with a bad name',
      edit((s) => (gate(s).inputFrom = { configMapKeyRef: { name: 'Bad_Name', key: 'k' } })),
      'rollout.gate.inputFrom.configMapKeyRef.name',
    ],
    ['a gate without workflowType', edit((s) => (gate(s).workflowType = '')), 'rollout.gate.workflowType'],
    [
      'an unknown strategy',
      edit((s) => ((s.rollout as Record<string, unknown>).strategy = 'BlueGreen')),
      'rollout.strategy',
    ],
    [
      'an unknown gateFailurePolicy',
      edit((s) => ((s.rollout as Record<string, unknown>).gateFailurePolicy = 'Retry')),
      'rollout.gateFailurePolicy',
    ],
    [
      'restartPolicy Never',
      edit((s) => (s.template.spec.restartPolicy = 'Never')),
      'template.spec.restartPolicy: only "Always" is allowed',
    ],
    ['no containers', edit((s) => (s.template.spec.containers = [])), 'template.spec.containers'],
    ['negative replicas', edit((s) => (s.replicas = -1)), 'replicas: Too small'],
    ['fractional replicas', edit((s) => (s.replicas = 1.5)), 'replicas'],
    ['negative minReadySeconds', edit((s) => (s.minReadySeconds = -1)), 'minReadySeconds'],
    ['zero progressDeadlineSeconds', edit((s) => (s.progressDeadlineSeconds = 0)), 'progressDeadlineSeconds'],
    [
      'progressDeadlineSeconds equal to minReadySeconds',
      edit((s) => Object.assign(s, { minReadySeconds: 30, progressDeadlineSeconds: 30 })),
      'progressDeadlineSeconds: must be greater than minReadySeconds',
    ],
    [
      'progressDeadlineSeconds below minReadySeconds',
      edit((s) => Object.assign(s, { minReadySeconds: 700 })),
      'progressDeadlineSeconds: must be greater than minReadySeconds',
    ],
    [
      'an empty temporalNamespace',
      edit((s) => (s.workerOptions.temporalNamespace = '')),
      'workerOptions.temporalNamespace',
    ],
    [
      'a connectionRef name that is not a DNS label',
      edit((s) => (s.workerOptions.connectionRef.name = 'Temporal_Conn')),
      'workerOptions.connectionRef.name: must be a DNS-1123 label',
    ],
    [
      'a 64-character connectionRef name',
      edit((s) => (s.workerOptions.connectionRef.name = 'a'.repeat(64))),
      'workerOptions.connectionRef.name',
    ],
    [
      'a 64-character unsafeCustomBuildID',
      edit((s) => (s.workerOptions.unsafeCustomBuildID = 'b'.repeat(64))),
      'workerOptions.unsafeCustomBuildID',
    ],
    [
      'an unsafeCustomBuildID with a slash',
      edit((s) => (s.workerOptions.unsafeCustomBuildID = 'feature/x')),
      'workerOptions.unsafeCustomBuildID: must be a Kubernetes label value',
    ],
    [
      'an unsafeCustomBuildID of no letters or digits',
      edit((s) => (s.workerOptions.unsafeCustomBuildID = '---')),
      'workerOptions.unsafeCustomBuildID: must be a Kubernetes label value',
    ],
    [
      'an unsafeCustomBuildID starting with "__"',
      edit((s) => (s.workerOptions.unsafeCustomBuildID = '__v1')),
      'workerOptions.unsafeCustomBuildID: must be a Kubernetes label value',
    ],
    [
      'an empty unsafeCustomBuildID',
      edit((s) => (s.workerOptions.unsafeCustomBuildID = '')),
      'workerOptions.unsafeCustomBuildID',
    ],
    // CEL reads durations as Go does: whole nanoseconds, at most 2^63-1 of them.
    [
      'a pauseDuration under a nanosecond',
      edit((s) => (steps(s)[0]!.pauseDuration = '0.5ns')),
      'rollout.steps[0].pauseDuration: must be a duration > 0s',
    ],
    [
      'a pauseDuration past int64 nanoseconds',
      edit((s) => (steps(s)[0]!.pauseDuration = '2562048h')),
      'rollout.steps[0].pauseDuration: must be a duration of at most 2562047h',
    ],
    ['no workerOptions', edit((s) => delete (s as Record<string, unknown>).workerOptions), 'workerOptions'],
  ])('rejects %s', (_case, spec, expected) => {
    expect(rejection(spec())).toContain(expected);
  });

  test('every offending field is reported, one per line', () => {
    const lines = rejection({ ...validSpec(), replicas: -1, minReadySeconds: -1 }).split('\n');
    expect(lines).toEqual(
      expect.arrayContaining([expect.stringMatching(/^replicas: /), expect.stringMatching(/^minReadySeconds: /)]),
    );
  });
});

describe('TemporalConnectionSpec', () => {
  test.each([
    ['plain', { hostPort: 'temporal-frontend.temporal:7233' }],
    ['mTLS', { hostPort: 'ns.tmprl.cloud:7233', mutualTLSSecretRef: { name: 'mtls' }, tls: { serverName: 'ns' } }],
    ['API key', { hostPort: 'ns.tmprl.cloud:7233', apiKeySecretRef: { name: 'api', key: 'key' } }],
  ])('accepts a %s connection', (_case, spec) => {
    expect(TemporalConnectionSpec.parse(spec)).toEqual(spec);
  });

  test.each<[string, unknown, string]>([
    [
      'both mTLS and an API key',
      { hostPort: 'h:7233', mutualTLSSecretRef: { name: 'mtls' }, apiKeySecretRef: { name: 'api', key: 'key' } },
      'apiKeySecretRef: only one of mutualTLSSecretRef or apiKeySecretRef may be set',
    ],
    ['a hostPort without a port', { hostPort: 'temporal-frontend' }, 'hostPort: must be host:port'],
    ['a hostPort with a scheme', { hostPort: 'https://temporal:7233' }, 'hostPort: must be host:port'],
    ['a hostPort with a non-numeric port', { hostPort: 'temporal:http' }, 'hostPort: must be host:port'],
    ['an empty hostPort', { hostPort: '' }, 'hostPort: must be host:port'],
    ['no hostPort', {}, 'hostPort'],
    [
      'an mTLS Secret name that is not a DNS label',
      { hostPort: 'h:7233', mutualTLSSecretRef: { name: 'My.Secret' } },
      'mutualTLSSecretRef.name',
    ],
    [
      'an API key ref without a key',
      { hostPort: 'h:7233', apiKeySecretRef: { name: 'api', key: '' } },
      'apiKeySecretRef.key',
    ],
  ])('rejects %s, naming the field', (_case, spec, expected) => {
    expect(rejection(spec, TemporalConnectionSpec)).toContain(expected);
  });
});
