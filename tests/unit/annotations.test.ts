import type * as k8s from '@kubernetes/client-node';
import {
  annotationIdentity,
  annotationRequestId,
  annotationSetter,
  controlsOf,
  inSetOrder,
  parseValue,
  refusalReason,
  removalPatch,
  type AnnotatedControl,
} from '../../starter/annotations.js';

describe('controlsOf', () => {
  test('each control annotation with its arguments, in run order; other keys ignored', () => {
    const controls = controlsOf({
      'glidepath.dev/abort': 'error rate',
      'glidepath.dev/promote': 'full',
      'glidepath.dev/promot': 'full', // a typo must not act
      'glidepath.dev/cleanup': '', // not a control
      'glidepath.dev/status': 'x',
      'example.com/promote': 'full',
      'kubectl.kubernetes.io/last-applied-configuration': '{}',
    });
    expect(controls).toEqual([
      { control: 'promote', key: 'glidepath.dev/promote', value: 'full', request: { full: true } },
      { control: 'abort', key: 'glidepath.dev/abort', value: 'error rate', request: { reason: 'error rate' } },
    ]);
  });

  test('no annotations, no controls', () => {
    expect(controlsOf(undefined)).toEqual([]);
    expect(controlsOf({})).toEqual([]);
  });

  test('several at once run in a fixed order: what makes the rollout go, then what holds or stops it', () => {
    const all = Object.fromEntries(
      ['rollback', 'abort', 'pause', 'promote', 'resume', 'retry'].map((c) => [`glidepath.dev/${c}`, '']),
    );
    expect(controlsOf(all).map((c) => c.control)).toEqual(['retry', 'resume', 'promote', 'pause', 'abort', 'rollback']);
  });
});

describe('inSetOrder', () => {
  const both = controlsOf({ 'glidepath.dev/pause': 'look', 'glidepath.dev/resume': '' });
  const [pause, resume] = [both.find((c) => c.control === 'pause'), both.find((c) => c.control === 'resume')];
  const noSetter = () => undefined;

  test('pause seen before resume: pause runs first, so the rollout ends resumed', () => {
    const seen = (c: AnnotatedControl) => (c.control === 'pause' ? '100' : '105');
    expect(inSetOrder([resume!, pause!], seen, noSetter).map((c) => c.control)).toEqual(['pause', 'resume']);
  });

  test('seen at once, set by two managers: the earlier writer first', () => {
    const at = (c: AnnotatedControl) => ({
      manager: c.control === 'pause' ? 'argocd' : 'kubectl-annotate',
      time: c.control === 'pause' ? '2026-01-01T10:00:05Z' : '2026-01-01T10:00:01Z',
    });
    expect(inSetOrder([pause!, resume!], () => '7', at).map((c) => c.control)).toEqual(['resume', 'pause']);
  });

  test('set at once by one writer: the fixed order', () => {
    expect(inSetOrder([pause!, resume!], () => '7', noSetter).map((c) => c.control)).toEqual(['resume', 'pause']);
  });
});

describe('parseValue', () => {
  test.each([
    ['promote', '', {}],
    ['promote', 'full', { full: true }],
    ['promote', ' full ', { full: true }],
    ['promote', 'full looks good', { full: true, reason: 'looks good' }],
    ['promote', 'fullness', { reason: 'fullness' }],
    ['promote', 'step looks good', { reason: 'step looks good' }],
    ['abort', 'p99 latency doubled', { reason: 'p99 latency doubled' }],
    ['abort', '', {}],
    ['retry', 'flaky gate', { reason: 'flaky gate' }],
    ['pause', 'freeze', { reason: 'freeze' }],
    ['resume', '', {}],
    ['rollback', 'bad deploy', { reason: 'bad deploy' }],
    ['rollback', 'to=1.4.2-3fa9c01b77d2', { toBuildId: '1.4.2-3fa9c01b77d2' }],
    ['rollback', 'to=v1 bad deploy', { toBuildId: 'v1', reason: 'bad deploy' }],
    ['abort', 'to=v1', { reason: 'to=v1' }],
  ] as const)('%s=%j → %j', (control, value, request) => expect(parseValue(control, value)).toEqual(request));
});

const owner = (
  manager: string,
  keys: string[],
  time?: string,
  extra: Partial<k8s.V1ManagedFieldsEntry> = {},
): k8s.V1ManagedFieldsEntry => ({
  manager,
  operation: 'Update',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:metadata': { 'f:annotations': Object.fromEntries(keys.map((k) => [`f:${k}`, {}])) } },
  ...(time ? { time: new Date(time) } : {}),
  ...extra,
});

describe('annotationSetter', () => {
  test('the manager that owns the annotation', () => {
    const fields = [
      owner('kubectl-client-side-apply', ['kubectl.kubernetes.io/last-applied-configuration'], '2025-05-01T09:00:00Z'),
      owner('kubectl-annotate', ['glidepath.dev/promote'], '2025-05-01T10:00:00Z'),
    ];
    expect(annotationSetter(fields, 'glidepath.dev/promote')).toEqual({
      manager: 'kubectl-annotate',
      time: '2025-05-01T10:00:00.000Z',
    });
  });

  test('the newest of several owners; status entries never own annotations', () => {
    const fields = [
      owner('argocd-controller', ['glidepath.dev/abort'], '2025-05-01T09:00:00Z'),
      owner('kubectl-annotate', ['glidepath.dev/abort'], '2025-05-01T11:00:00Z'),
      owner('glidepath', ['glidepath.dev/abort'], '2025-05-01T12:00:00Z', { subresource: 'status' }),
    ];
    expect(annotationSetter(fields, 'glidepath.dev/abort')?.manager).toBe('kubectl-annotate');
  });

  test('nobody known', () => {
    expect(annotationSetter(undefined, 'glidepath.dev/promote')).toBeUndefined();
    expect(
      annotationSetter([owner('kubectl-annotate', ['glidepath.dev/pause'])], 'glidepath.dev/promote'),
    ).toBeUndefined();
  });
});

test('annotationIdentity names the manager, else kubectl', () => {
  expect(annotationIdentity({ manager: 'kubectl-annotate' })).toBe('kubectl annotate (kubectl-annotate)');
  expect(annotationIdentity(undefined)).toBe('kubectl annotate (kubectl)');
});

describe('annotationRequestId', () => {
  const promote: AnnotatedControl = {
    control: 'promote',
    key: 'glidepath.dev/promote',
    value: 'full',
    request: { full: true },
  };
  const setter = { manager: 'kubectl-annotate', time: '2025-05-01T10:00:00.000Z' };

  test('the same for every sighting of one setting, whatever resourceVersion it is seen at', () => {
    expect(annotationRequestId('uid-1', promote, setter, '100')).toBe(
      annotationRequestId('uid-1', promote, setter, '250'),
    );
  });

  test('another setting (time, value, manager, object, control) is another control', () => {
    const id = annotationRequestId('uid-1', promote, setter);
    expect(annotationRequestId('uid-1', promote, { ...setter, time: '2025-05-01T10:00:01.000Z' })).not.toBe(id);
    expect(annotationRequestId('uid-1', { ...promote, value: '' }, setter)).not.toBe(id);
    expect(annotationRequestId('uid-1', promote, { ...setter, manager: 'argocd-controller' })).not.toBe(id);
    expect(annotationRequestId('uid-2', promote, setter)).not.toBe(id);
    expect(annotationRequestId('uid-1', { ...promote, control: 'abort', key: 'glidepath.dev/abort' }, setter)).not.toBe(
      id,
    );
  });

  test('without managedFields, the resourceVersion it was first seen at stands in', () => {
    expect(annotationRequestId('uid-1', promote, undefined, '100')).toBe(
      annotationRequestId('uid-1', promote, undefined, '100'),
    );
    expect(annotationRequestId('uid-1', promote, undefined, '100')).not.toBe(
      annotationRequestId('uid-1', promote, undefined, '101'),
    );
  });
});

test('removalPatch removes the annotation only while it has the value that was run', () => {
  expect(removalPatch('glidepath.dev/abort', 'error rate')).toEqual([
    { op: 'test', path: '/metadata/annotations/glidepath.dev~1abort', value: 'error rate' },
    { op: 'remove', path: '/metadata/annotations/glidepath.dev~1abort' },
  ]);
});

test('refusalReason drops the validator\'s "<control> refused: "', () => {
  expect(refusalReason('resume', 'resume refused: not paused')).toBe('not paused');
  expect(refusalReason('promote', 'no rollout is in flight')).toBe('no rollout is in flight');
});
