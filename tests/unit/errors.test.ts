import { Metadata, status as GrpcCode } from '@grpc/grpc-js';
import * as k8s from '@kubernetes/client-node';
import { ServiceError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { FetchError } from 'node-fetch';
import { PermanentError } from '../../api/errors.js';
import {
  TransientError,
  classifyFailure,
  describeCall,
  permanentFailure,
  toActivityError,
  withFailureClassification,
} from '../../activities/errors.js';
import { classifyKubernetesError, isNamespaceTerminating } from '../../kube/errors.js';
import { classifyTemporalError, pollersRemembered } from '../../temporal/errors.js';
import { createKubernetesActivities } from '../../activities/kubernetes.js';
import { gateInputReader } from '../../kube/gate-input.js';

/** A table row: the case, the error, how it is classified (`undefined`: not at all, it is thrown as it is). */
type Row = [string, unknown, 'permanent' | 'transient' | undefined];

/** As client-node 1.4 throws it: the Status object arrives as the response text (`getBodyAsAny`). */
function kubeError(code: number, status: Record<string, unknown>): k8s.ApiException<unknown> {
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code, ...status });
  return new k8s.ApiException(code, 'Unknown API Status Code!', body, { 'content-type': 'application/json' });
}

/** As grpc-js's callErrorFromStatus builds it (what WorkflowService calls reject with). */
function grpcError(code: GrpcCode, details: string): Error {
  return Object.assign(new Error(`${code} ${GrpcCode[code]}: ${details}`), { code, details, metadata: new Metadata() });
}

const invalidDeployment = kubeError(422, {
  message: 'Deployment.apps "orders-abc" is invalid: spec.template.spec.containers[0].image: Required value',
  reason: 'Invalid',
  details: {
    name: 'orders-abc',
    group: 'apps',
    kind: 'Deployment',
    causes: [
      { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.template.spec.containers[0].image' },
    ],
  },
});
const terminatingNamespace = kubeError(403, {
  message:
    'events "orders.18a2b3c4d5e6f708" is forbidden: unable to create new content in namespace shop because it is being terminated',
  reason: 'Forbidden',
  details: {
    name: 'orders.18a2b3c4d5e6f708',
    kind: 'events',
    causes: [
      { reason: 'NamespaceTerminating', message: 'namespace shop is being terminated', field: 'metadata.namespace' },
    ],
  },
});
const rbacForbidden = kubeError(403, {
  message:
    'deployments.apps "orders-abc" is forbidden: User "system:serviceaccount:glidepath:glidepath" cannot patch resource "deployments" in API group "apps" in the namespace "shop"',
  reason: 'Forbidden',
  details: { name: 'orders-abc', group: 'apps', kind: 'deployments' },
});
const conflict = kubeError(409, {
  message:
    'Operation cannot be fulfilled on deployments.apps "orders-abc": the object has been modified; please apply your changes to the latest version and try again',
  reason: 'Conflict',
  details: { name: 'orders-abc', group: 'apps', kind: 'deployments' },
});
const connectionRefused = new FetchError(
  'request to https://127.0.0.1:6443/apis/apps/v1/namespaces/shop/deployments/orders-abc failed, reason: connect ECONNREFUSED 127.0.0.1:6443',
  'system',
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }),
);

describe('classifyKubernetesError', () => {
  test.each(
    (
      [
        ['422 Invalid', invalidDeployment, 'permanent'],
        [
          '400 BadRequest',
          kubeError(400, {
            message: 'json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32',
            reason: 'BadRequest',
          }),
          'permanent',
        ],
        ['403 Forbidden by RBAC', rbacForbidden, 'permanent'],
        ['403 in a namespace being terminated', terminatingNamespace, 'permanent'],
        [
          '404 of a ConfigMap the user named',
          kubeError(404, {
            message: 'configmaps "gate-input" not found',
            reason: 'NotFound',
            details: { name: 'gate-input', kind: 'configmaps' },
          }),
          'permanent',
        ],
        [
          '404 of a Secret the user named',
          kubeError(404, {
            message: 'secrets "temporal-mtls" not found',
            reason: 'NotFound',
            details: { name: 'temporal-mtls', kind: 'secrets' },
          }),
          'permanent',
        ],
        [
          '404 of a Deployment (callers decide what gone means)',
          kubeError(404, {
            message: 'deployments.apps "orders-abc" not found',
            reason: 'NotFound',
            details: { name: 'orders-abc', group: 'apps', kind: 'deployments' },
          }),
          undefined,
        ],
        ['401 (client-node keeps no body)', new k8s.ApiException(401, 'Unauthorized', undefined, {}), 'transient'],
        ['409 Conflict', conflict, 'transient'],
        [
          '429 TooManyRequests',
          kubeError(429, {
            message: 'storage is (re)initializing',
            reason: 'TooManyRequests',
            details: { retryAfterSeconds: 1 },
          }),
          'transient',
        ],
        [
          '500 InternalError',
          kubeError(500, {
            message: 'Internal error occurred: etcdserver: request timed out',
            reason: 'InternalError',
          }),
          'transient',
        ],
        [
          '503 ServiceUnavailable',
          kubeError(503, {
            message: 'the server is currently unable to handle the request',
            reason: 'ServiceUnavailable',
          }),
          'transient',
        ],
        [
          '504 Timeout',
          kubeError(504, {
            message: 'Timeout: request did not complete within the allotted timeout',
            reason: 'Timeout',
          }),
          'transient',
        ],
        ['a refused connection', connectionRefused, 'transient'],
        ['410 Gone', kubeError(410, { message: 'too old resource version', reason: 'Expired' }), undefined],
        ['a gRPC error (not Kubernetes)', grpcError(GrpcCode.UNAVAILABLE, 'connection refused'), undefined],
        ['a plain Error', new Error('boom'), undefined],
      ] as Row[]
    ).map(([name, err, kind]) => [name, kind ?? 'not classified', err] as const),
  )('%s → %s', (_case, kind, err) => {
    expect(classifyKubernetesError(err, { namespace: 'shop' })?.kind ?? 'not classified').toBe(kind);
  });

  test('a permanent refusal names the object, the code and the field in one line', () => {
    expect(classifyKubernetesError(invalidDeployment, { namespace: 'shop' })).toEqual({
      kind: 'permanent',
      message:
        'kube-apiserver refused Deployment shop/orders-abc (422): spec.template.spec.containers[0].image: Required value',
    });
  });

  test('a refusal without causes gives the Status message', () => {
    expect(classifyKubernetesError(rbacForbidden, { namespace: 'shop' })!.message).toBe(
      'kube-apiserver refused deployments shop/orders-abc (403): deployments.apps "orders-abc" is forbidden: User "system:serviceaccount:glidepath:glidepath" cannot patch resource "deployments" in API group "apps" in the namespace "shop"',
    );
  });

  test('a refusal in a terminating namespace says so', () => {
    expect(classifyKubernetesError(terminatingNamespace, { namespace: 'shop' })!.message).toBe(
      'kube-apiserver refused events shop/orders.18a2b3c4d5e6f708 (403): metadata.namespace: namespace shop is being terminated',
    );
  });

  test('a refusal of an unnamed object names the call instead', () => {
    const err = kubeError(400, { message: 'the body of the request was in an unknown format', reason: 'BadRequest' });
    expect(classifyKubernetesError(err, { call: 'writeStatus shop/orders' })!.message).toBe(
      'kube-apiserver refused writeStatus shop/orders (400): the body of the request was in an unknown format',
    );
  });

  test('a transient failure gives code, reason and message', () => {
    expect(classifyKubernetesError(conflict)).toEqual({
      kind: 'transient',
      message:
        'kube-apiserver 409 Conflict: Operation cannot be fulfilled on deployments.apps "orders-abc": the object has been modified; please apply your changes to the latest version and try again',
    });
  });
});

describe('isNamespaceTerminating', () => {
  test.each(
    (
      [
        ['the NamespaceTerminating cause', terminatingNamespace, true],
        [
          'only the message',
          kubeError(403, {
            message: 'unable to create new content in namespace shop because it is being terminated',
            reason: 'Forbidden',
          }),
          true,
        ],
        ['RBAC', rbacForbidden, false],
        ['another code', conflict, false],
        ['not Kubernetes', new Error('because it is being terminated'), false],
      ] as [string, unknown, boolean][]
    ).map(([name, err, terminating]) => [name, terminating, err] as const),
  )('%s → %s', (_case, terminating, err) => {
    expect(isNamespaceTerminating(err)).toBe(terminating);
  });
});

describe('classifyTemporalError', () => {
  test.each(
    (
      [
        [
          'INVALID_ARGUMENT',
          grpcError(GrpcCode.INVALID_ARGUMENT, "worker deployment name cannot contain ':'"),
          'permanent',
        ],
        ['PERMISSION_DENIED', grpcError(GrpcCode.PERMISSION_DENIED, 'Request unauthorized.'), 'permanent'],
        ['UNAUTHENTICATED', grpcError(GrpcCode.UNAUTHENTICATED, 'Invalid API key'), 'permanent'],
        [
          'FAILED_PRECONDITION: missing task queues',
          grpcError(
            GrpcCode.FAILED_PRECONDITION,
            'proposed ramping version is missing active task queues from the current version; these would become unversioned if it is set as the ramping version',
          ),
          'permanent',
        ],
        [
          'FAILED_PRECONDITION: another manager',
          grpcError(
            GrpcCode.FAILED_PRECONDITION,
            "ManagerIdentity 'ops' is set and does not match user identity 'glidepath@host/1'",
          ),
          'permanent',
        ],
        [
          'FAILED_PRECONDITION: conflict token mismatch',
          grpcError(GrpcCode.FAILED_PRECONDITION, 'conflict token mismatch'),
          'transient',
        ],
        [
          'FAILED_PRECONDITION: mismatched conflict token',
          grpcError(GrpcCode.FAILED_PRECONDITION, 'mismatched conflict token'),
          'transient',
        ],
        [
          "FAILED_PRECONDITION: a describe between the server workflow's runs",
          grpcError(GrpcCode.FAILED_PRECONDITION, 'Workflow task is not scheduled yet.'),
          'transient',
        ],
        [
          'FAILED_PRECONDITION: version still has pollers',
          grpcError(GrpcCode.FAILED_PRECONDITION, 'Version cannot be deleted since it has active pollers.'),
          'transient',
        ],
        [
          'FAILED_PRECONDITION: version draining',
          grpcError(GrpcCode.FAILED_PRECONDITION, 'Version cannot be deleted since it is draining.'),
          'transient',
        ],
        [
          'UNAVAILABLE',
          grpcError(GrpcCode.UNAVAILABLE, 'No connection established. Last error: connect ECONNREFUSED 127.0.0.1:7233'),
          'transient',
        ],
        ['DEADLINE_EXCEEDED', grpcError(GrpcCode.DEADLINE_EXCEEDED, 'Deadline exceeded after 10.001s'), 'transient'],
        ['RESOURCE_EXHAUSTED', grpcError(GrpcCode.RESOURCE_EXHAUSTED, 'namespace rate limit exceeded'), 'transient'],
        ['ABORTED', grpcError(GrpcCode.ABORTED, 'workflow is busy'), 'transient'],
        ['INTERNAL', grpcError(GrpcCode.INTERNAL, 'internal error'), 'transient'],
        ['NOT_FOUND (callers decide)', grpcError(GrpcCode.NOT_FOUND, 'Worker Deployment Version not found'), undefined],
        ['CANCELLED', grpcError(GrpcCode.CANCELLED, 'Call cancelled'), undefined],
        [
          'UNAVAILABLE wrapped by the client',
          new ServiceError('Failed to start Workflow', {
            cause: grpcError(GrpcCode.UNAVAILABLE, 'upstream connect error'),
          }),
          'transient',
        ],
        [
          'PERMISSION_DENIED wrapped by the client',
          new ServiceError('Failed to start Workflow', {
            cause: grpcError(GrpcCode.PERMISSION_DENIED, 'Request unauthorized.'),
          }),
          'permanent',
        ],
        ['a Kubernetes error', conflict, undefined],
        ['a plain Error', new Error('boom'), undefined],
      ] as Row[]
    ).map(([name, err, kind]) => [name, kind ?? 'not classified', err] as const),
  )('%s → %s', (_case, kind, err) => {
    expect(classifyTemporalError(err)?.kind ?? 'not classified').toBe(kind);
  });

  test('a permanent refusal names the call, the code and the server message', () => {
    const err = grpcError(GrpcCode.PERMISSION_DENIED, 'Request unauthorized.');
    expect(classifyTemporalError(err, { call: 'setCurrent ns/shop/orders v2' })!.message).toBe(
      'Temporal refused setCurrent ns/shop/orders v2 (PERMISSION_DENIED): Request unauthorized.',
    );
  });
});

describe('classifyFailure', () => {
  test.each(
    (
      [
        ['a missing Secret key', new PermanentError('Secret shop/temporal-mtls has no key "tls.key"'), 'permanent'],
        [
          'gate input that is not JSON',
          new PermanentError('gate input in ConfigMap shop/gate key "input" is not JSON'),
          'permanent',
        ],
        ['Kubernetes', invalidDeployment, 'permanent'],
        ['Temporal', grpcError(GrpcCode.UNAVAILABLE, 'unavailable'), 'transient'],
        ['cancellation (the SDK handles it)', new CancelledFailure('CANCELLED'), undefined],
        ['a failure thrown on purpose', ApplicationFailure.create({ message: 'x', nonRetryable: true }), undefined],
        ['an unknown error', new TypeError("Cannot read properties of undefined (reading 'spec')"), undefined],
      ] as Row[]
    ).map(([name, err, kind]) => [name, kind ?? 'not classified', err] as const),
  )('%s → %s', (_case, kind, err) => {
    expect(classifyFailure(err)?.kind ?? 'not classified').toBe(kind);
  });
});

describe('toActivityError', () => {
  test('a permanent failure becomes a non-retryable ApplicationFailure of type Permanent', () => {
    const thrown = toActivityError(invalidDeployment, {
      call: 'ensureVersionedDeployment shop/orders abc',
      namespace: 'shop',
    });
    expect(thrown).toBeInstanceOf(ApplicationFailure);
    expect(thrown).toMatchObject({
      nonRetryable: true,
      type: 'Permanent',
      message:
        'kube-apiserver refused Deployment shop/orders-abc (422): spec.template.spec.containers[0].image: Required value',
    });
  });

  test('a transient failure becomes one line naming the call and the cause, with no stack', () => {
    const thrown = toActivityError(grpcError(GrpcCode.FAILED_PRECONDITION, 'conflict token mismatch'), {
      call: 'setRamping ns/default/orders v2',
    });
    expect(thrown).toBeInstanceOf(TransientError);
    const { message, stack } = thrown as Error;
    expect(message).toBe('setRamping ns/default/orders v2: FAILED_PRECONDITION conflict token mismatch (will retry)');
    expect(stack).toBe(`TransientError: ${message}`);
  });

  test('a multi-line server message still makes one line', () => {
    const thrown = toActivityError(
      grpcError(GrpcCode.UNAVAILABLE, 'upstream connect error\n  reset reason: overflow'),
      { call: 'describeRouting ns/default/orders' },
    ) as Error;
    expect(thrown.message).toBe(
      'describeRouting ns/default/orders: UNAVAILABLE upstream connect error reset reason: overflow (will retry)',
    );
  });

  test.each([
    ['an unknown error', new TypeError('x is undefined')],
    ['a cancellation', new CancelledFailure('CANCELLED')],
  ])('%s is thrown as it is', (_case, err) => {
    expect(toActivityError(err, { call: 'describeRouting ns/default/orders' })).toBe(err);
  });
});

describe('permanentFailure', () => {
  test('is non-retryable, typed Permanent, and one line', () => {
    const failure = permanentFailure('Secret shop/api has no key "apiKey"\n');
    expect(failure).toMatchObject({
      nonRetryable: true,
      type: 'Permanent',
      message: 'Secret shop/api has no key "apiKey"',
    });
    expect(failure.stack).not.toContain('\n');
  });
});

describe('describeCall', () => {
  const owner = { namespace: 'shop', name: 'orders', uid: 'u-1' };
  const target = {
    connection: { hostPort: 'temporal:7233' },
    k8sNamespace: 'shop',
    temporalNamespace: 'ns',
    deploymentName: 'shop/orders',
  };
  test.each<[string, unknown[], { call: string; namespace?: string }]>([
    ['setRamping', [target, 'v2', 25], { call: 'setRamping ns/shop/orders v2 25', namespace: 'shop' }],
    ['scaleDeployment', [owner, 'v1', 0], { call: 'scaleDeployment shop/orders v1 0', namespace: 'shop' }],
    [
      'ensureVersionedDeployment',
      [{ owner, desired: {}, buildId: 'v2', template: {} }],
      { call: 'ensureVersionedDeployment shop/orders v2', namespace: 'shop' },
    ],
    [
      'runGate',
      [target, { buildId: 'v2', workflowType: 'Smoke', taskQueue: 'q', workflowId: 'g', timeoutMs: 1 }],
      { call: 'runGate ns/shop/orders v2', namespace: 'shop' },
    ],
    [
      'removeStrayDeployments',
      [owner, ['v1', 'v2'], []],
      { call: 'removeStrayDeployments shop/orders', namespace: 'shop' },
    ],
    [
      'readGateInput',
      ['shop', { configMapKeyRef: { name: 'gate', key: 'input' } }],
      { call: 'readGateInput shop', namespace: 'shop' },
    ],
  ])('%s', (name, args, expected) => {
    expect(describeCall(name, args)).toEqual(expected);
  });
});

describe('withFailureClassification', () => {
  const owner = { namespace: 'shop', name: 'orders', uid: 'u-1' };
  const activities = withFailureClassification({
    async ok(o: typeof owner) {
      return o.name;
    },
    async refused(_o: typeof owner, _buildId: string): Promise<void> {
      throw invalidDeployment;
    },
    async conflicted(_o: typeof owner): Promise<void> {
      throw conflict;
    },
    async broken(): Promise<void> {
      throw new RangeError('bug');
    },
  });

  test('results pass through', async () => {
    await expect(activities.ok(owner)).resolves.toBe('orders');
  });

  test('a permanent failure is thrown as a non-retryable ApplicationFailure', async () => {
    await expect(activities.refused(owner, 'abc')).rejects.toMatchObject({
      nonRetryable: true,
      type: 'Permanent',
      message:
        'kube-apiserver refused Deployment shop/orders-abc (422): spec.template.spec.containers[0].image: Required value',
    });
  });

  test('a transient failure is thrown as one line naming the activity and its target', async () => {
    await expect(activities.conflicted(owner)).rejects.toThrow(
      /^conflicted shop\/orders: kube-apiserver 409 Conflict: Operation cannot be fulfilled .* \(will retry\)$/,
    );
  });

  test('an unknown failure is thrown as it is', async () => {
    await expect(activities.broken()).rejects.toThrow(RangeError);
  });
});

/** Kubernetes activities over a fake API: each client is the same object holding the calls a test needs. */
function kubeActivities(api: Record<string, (...args: never[]) => Promise<unknown>>) {
  const kc = new k8s.KubeConfig();
  kc.makeApiClient = (() => api) as unknown as typeof kc.makeApiClient;
  return createKubernetesActivities(kc);
}

/** Runs `fn` with console.warn captured (outside an activity the warnings go there). */
async function warnings(fn: () => Promise<unknown>): Promise<string[]> {
  const lines: string[] = [];
  const original = console.warn;
  console.warn = (line: string) => void lines.push(line);
  try {
    await fn();
  } finally {
    console.warn = original;
  }
  return lines;
}

describe('failures the Kubernetes activities absorb', () => {
  const owner = { namespace: 'shop', name: 'orders', uid: 'uid-1' };
  const event = { type: 'Normal' as const, reason: 'VersionDrained', message: 'v1 is drained' };

  test.each([
    ['a namespace being terminated', terminatingNamespace],
    [
      'an Events quota',
      kubeError(403, {
        message:
          'events "orders.1" is forbidden: exceeded quota: events, requested: count/events=1, used: count/events=1000, limited: count/events=1000',
        reason: 'Forbidden',
        details: { name: 'orders.1', kind: 'events' },
      }),
    ],
    ['a refused connection', connectionRefused],
    ['an unknown error', new TypeError('fetch failed')],
  ])('recordEvent drops its Event on %s with one warning line, and does not throw', async (_case, err) => {
    const kube = kubeActivities({ createNamespacedEvent: async () => Promise.reject(err) });
    const lines = await warnings(() => expect(kube.recordEvent(owner, event)).resolves.toBeUndefined());
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^recordEvent shop\/orders VersionDrained: dropped \(.+\)$/);
    expect(lines[0]).not.toContain('\n');
  });

  test('writeStatus onto a new object under the same name (uid precondition, 409) returns with one warning line', async () => {
    let body: unknown;
    const precondition = kubeError(409, {
      message:
        'Operation cannot be fulfilled on temporalworkerdeployments.glidepath.dev "orders": Precondition failed: UID in precondition: uid-1, UID in object meta: uid-2',
      reason: 'Conflict',
      details: { name: 'orders', group: 'glidepath.dev', kind: 'temporalworkerdeployments' },
    });
    const kube = kubeActivities({
      patchNamespacedCustomObjectStatus: async (request: never) => {
        body = (request as { body: unknown }).body;
        throw precondition;
      },
    });
    const lines = await warnings(() => expect(kube.writeStatus(owner, { phase: 'Ready' })).resolves.toBe(false)); // false: gone
    expect(body).toMatchObject({ metadata: { name: 'orders', namespace: 'shop', uid: 'uid-1' } });
    expect(lines).toEqual(['writeStatus shop/orders: not written, the object is another one now (uid uid-1 is gone)']);
  });

  test('an Event with an id is named by it, and one recorded already (409) is not a failure: a retried report records it once', async () => {
    const names: string[] = [];
    const exists = kubeError(409, {
      message: 'events "orders.run-1.3" already exists',
      reason: 'AlreadyExists',
      details: { name: 'orders.run-1.3', kind: 'events' },
    });
    const kube = kubeActivities({
      createNamespacedEvent: async (request: never) => {
        const name = (request as { body: { metadata: { name: string } } }).body.metadata.name;
        if (names.includes(name)) throw exists;
        names.push(name);
      },
    });
    const lines = await warnings(async () => {
      await kube.recordEvent(owner, { ...event, id: 'run-1.3' });
      await kube.recordEvent(owner, { ...event, id: 'run-1.3' });
    });
    expect(names).toEqual(['orders.run-1.3']);
    expect(lines).toEqual([]);
  });

  describe('report: the status, then the Events, in one activity', () => {
    const events = [
      event,
      { type: 'Warning' as const, reason: 'CleanupIncomplete', message: 'deleted, but could not: x' },
    ];
    /** A kube API whose status write does `status` and whose Event creations are listed in `recorded`. */
    const reporting = (status: () => Promise<unknown>) => {
      const recorded: string[] = [];
      const kube = kubeActivities({
        patchNamespacedCustomObjectStatus: status,
        createNamespacedEvent: async (request: never) =>
          void recorded.push((request as { body: { reason: string } }).body.reason),
      });
      return { kube, recorded };
    };
    const notFound = kubeError(404, {
      message: 'temporalworkerdeployments.glidepath.dev "orders" not found',
      reason: 'NotFound',
      details: { name: 'orders', kind: 'temporalworkerdeployments' },
    });

    test('written: true, and the Events recorded after it', async () => {
      const order: string[] = [];
      const kube = kubeActivities({
        patchNamespacedCustomObjectStatus: async () => void order.push('status'),
        createNamespacedEvent: async (request: never) =>
          void order.push((request as { body: { reason: string } }).body.reason),
      });
      await expect(kube.report(owner, { status: { phase: 'Ready' }, events })).resolves.toBe(true);
      expect(order).toEqual(['status', 'VersionDrained', 'CleanupIncomplete']);
    });

    test('Events alone (no status change): recorded, true', async () => {
      const { kube, recorded } = reporting(async () => Promise.reject(new Error('no status write expected')));
      await expect(kube.report(owner, { events })).resolves.toBe(true);
      expect(recorded).toEqual(['VersionDrained', 'CleanupIncomplete']);
    });

    test('the resource deleted (404): false, and its Events still recorded (they name it by uid)', async () => {
      const { kube, recorded } = reporting(async () => Promise.reject(notFound));
      await expect(kube.report(owner, { status: { phase: 'Deleting' }, events })).resolves.toBe(false);
      expect(recorded).toEqual(['VersionDrained', 'CleanupIncomplete']);
    });

    test('another object under its name (409): false, no Event onto it, one warning line', async () => {
      const { kube, recorded } = reporting(async () => Promise.reject(conflict));
      const lines = await warnings(() =>
        expect(kube.report(owner, { status: { phase: 'Ready' }, events })).resolves.toBe(false),
      );
      expect(recorded).toEqual([]);
      expect(lines).toEqual([
        'writeStatus shop/orders: not written, the object is another one now (uid uid-1 is gone)',
        'report shop/orders: 2 Events not recorded, the object is another one now',
      ]);
    });

    test('a status refused for good (403): the Events still go out, then the refusal is thrown', async () => {
      const { kube, recorded } = reporting(async () => Promise.reject(rbacForbidden));
      await expect(kube.report(owner, { status: { phase: 'Ready' }, events })).rejects.toBe(rbacForbidden);
      expect(recorded).toEqual(['VersionDrained', 'CleanupIncomplete']);
    });

    test('a status write that fails for now (unreachable): thrown before any Event, so the retry records them once', async () => {
      const { kube, recorded } = reporting(async () => Promise.reject(connectionRefused));
      await expect(kube.report(owner, { status: { phase: 'Ready' }, events })).rejects.toBe(connectionRefused);
      expect(recorded).toEqual([]);
    });
  });

  test('removeFinalizer leaves a new object under the same name alone', async () => {
    let patched = false;
    const kube = kubeActivities({
      getNamespacedCustomObject: async () => ({
        metadata: { name: 'orders', uid: 'uid-2', finalizers: ['glidepath.dev/cleanup'], resourceVersion: '7' },
      }),
      patchNamespacedCustomObject: async () => (patched = true),
    });
    await kube.removeFinalizer(owner);
    expect(patched).toBe(false);
  });
});

describe('gate input from a ConfigMap or Secret', () => {
  const core = (configMaps: Record<string, Record<string, string>>, secrets: Record<string, Record<string, string>>) =>
    ({
      readNamespacedConfigMap: async ({ name }: { name: string }) => {
        if (!configMaps[name])
          throw kubeError(404, {
            message: `configmaps "${name}" not found`,
            reason: 'NotFound',
            details: { name, kind: 'configmaps' },
          });
        return { data: configMaps[name] };
      },
      readNamespacedSecret: async ({ name }: { name: string }) => {
        if (!secrets[name])
          throw kubeError(404, {
            message: `secrets "${name}" not found`,
            reason: 'NotFound',
            details: { name, kind: 'secrets' },
          });
        const data = Object.fromEntries(
          Object.entries(secrets[name]).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
        );
        return { data };
      },
    }) as unknown as k8s.CoreV1Api;
  const read = gateInputReader(
    core(
      { gate: { input: '{"orders":3}', broken: 'not json' } },
      { 'gate-secret': { token: '{"token":"s3cr3t"}', broken: 's3cr3t' } },
    ),
  );

  test.each([
    ['a ConfigMap key', { configMapKeyRef: { name: 'gate', key: 'input' } }, { orders: 3 }],
    ['a Secret key', { secretKeyRef: { name: 'gate-secret', key: 'token' } }, { token: 's3cr3t' }],
  ])('reads JSON from %s', async (_case, source, value) => {
    await expect(read('shop', source)).resolves.toEqual(value);
  });

  test.each([
    ['a missing ConfigMap', { configMapKeyRef: { name: 'nope', key: 'input' } }, 'ConfigMap shop/nope not found'],
    [
      'a missing ConfigMap key',
      { configMapKeyRef: { name: 'gate', key: 'nope' } },
      'ConfigMap shop/gate has no key "nope"',
    ],
    [
      'a ConfigMap value that is not JSON',
      { configMapKeyRef: { name: 'gate', key: 'broken' } },
      'gate input in ConfigMap shop/gate key "broken" is not JSON',
    ],
    ['a missing Secret', { secretKeyRef: { name: 'nope', key: 'token' } }, 'Secret shop/nope not found'],
    [
      'a missing Secret key',
      { secretKeyRef: { name: 'gate-secret', key: 'nope' } },
      'Secret shop/gate-secret has no key "nope"',
    ],
    [
      'a Secret value that is not JSON (never quoted)',
      { secretKeyRef: { name: 'gate-secret', key: 'broken' } },
      'gate input in Secret shop/gate-secret key "broken" is not JSON',
    ],
  ])('%s is a permanent failure', async (_case, source, message) => {
    const err = await read('shop', source).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermanentError);
    expect((err as Error).message).toBe(message);
    expect(toActivityError(err, { call: 'runGate ns/shop/orders v2' })).toMatchObject({
      nonRetryable: true,
      type: 'Permanent',
      message,
    });
  });
});

describe('pollersRemembered', () => {
  test.each([
    [grpcError(GrpcCode.FAILED_PRECONDITION, 'Version cannot be deleted since it has active pollers.'), true],
    [new Error('wrapped', { cause: grpcError(GrpcCode.FAILED_PRECONDITION, 'it has active pollers') }), true],
    [grpcError(GrpcCode.FAILED_PRECONDITION, "version 'x' cannot be deleted since it is draining"), false],
    [grpcError(GrpcCode.UNAVAILABLE, 'active pollers'), false],
    [new Error('active pollers'), false],
  ])('%#: %s', (err, remembered) => {
    expect(pollersRemembered(err)).toBe(remembered);
  });
});
