import { canonicalJson, computeBuildId } from '../../api/build-id.js';
import type { PodTemplate } from '../../api/temporal-worker-deployment.js';

const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

function template(image?: string): PodTemplate {
  return {
    metadata: { labels: { app: 'orders', tier: 'worker' }, annotations: { team: 'payments' } },
    spec: {
      containers: [
        {
          name: 'worker',
          image,
          env: [
            { name: 'LOG_LEVEL', value: 'info' },
            { name: 'REGION', value: 'eu' },
          ],
          resources: { requests: { cpu: '100m', memory: '128Mi' } },
        },
      ],
      serviceAccountName: 'orders',
    },
  };
}

/** The same template as `template(image)`, with every object's keys written in reverse order. */
function reordered(image?: string): PodTemplate {
  return {
    spec: {
      serviceAccountName: 'orders',
      containers: [
        {
          resources: { requests: { memory: '128Mi', cpu: '100m' } },
          env: [
            { value: 'info', name: 'LOG_LEVEL' },
            { value: 'eu', name: 'REGION' },
          ],
          image,
          name: 'worker',
        },
      ],
    },
    metadata: { annotations: { team: 'payments' }, labels: { tier: 'worker', app: 'orders' } },
  };
}

describe('canonicalJson', () => {
  test.each([
    ['flat objects', { a: 1, b: 'x' }, { b: 'x', a: 1 }],
    ['nested objects', { outer: { a: 1, b: { c: true, d: null } } }, { outer: { b: { d: null, c: true }, a: 1 } }],
    ['objects inside arrays', { list: [{ x: 1, y: 2 }] }, { list: [{ y: 2, x: 1 }] }],
    ['an undefined field and a missing one', { a: 1, b: undefined }, { a: 1 }],
  ])('is the same whatever the key order: %s', (_case, a, b) => {
    expect(canonicalJson(a)).toBe(canonicalJson(b));
  });

  test.each([
    [{ b: 1, a: { d: 2, c: 3 } }, '{"a":{"c":3,"d":2},"b":1}'],
    [[3, 1, 2], '[3,1,2]'],
    ['text', '"text"'],
    [42, '42'],
    [null, 'null'],
    [{ 'z"q': 'v' }, '{"z\\"q":"v"}'],
  ])('sorts keys at every level but keeps array order and JSON escaping: %j', (value, expected) => {
    expect(canonicalJson(value)).toBe(expected);
  });

  test.each([
    ['array order', [1, 2], [2, 1]],
    ['a value', { a: 1 }, { a: 2 }],
    ['a value type', { a: 1 }, { a: '1' }],
    ['a key', { a: 1 }, { b: 1 }],
  ])('still tells apart values differing in %s', (_case, a, b) => {
    expect(canonicalJson(a)).not.toBe(canonicalJson(b));
  });
});

describe('computeBuildId', () => {
  test('the same template with keys in a different order gets the same ID', () => {
    expect(computeBuildId(reordered('repo:1.2.3'))).toBe(computeBuildId(template('repo:1.2.3')));
  });

  test('is deterministic', () => {
    expect(computeBuildId(template('repo:1.2.3'))).toBe(computeBuildId(template('repo:1.2.3')));
  });

  const changes: [string, (t: PodTemplate) => void][] = [
    ['the image', (t) => (t.spec.containers[0]!.image = 'repo:1.2.4')],
    ['the image repository only', (t) => (t.spec.containers[0]!.image = 'other/repo:1.2.3')],
    ['an env value', (t) => ((t.spec.containers[0]!.env as { value: string }[])[0]!.value = 'debug')],
    ['a pod label', (t) => (t.metadata!.labels!.tier = 'batch')],
    ['an added pod label', (t) => (t.metadata!.labels!.extra = 'yes')],
    ['an annotation', (t) => (t.metadata!.annotations!.team = 'billing')],
    [
      'a resource request',
      (t) => ((t.spec.containers[0]!.resources as { requests: { cpu: string } }).requests.cpu = '200m'),
    ],
    ['the service account', (t) => (t.spec.serviceAccountName = 'other')],
    ['an added container', (t) => t.spec.containers.push({ name: 'sidecar', image: 'envoy:1' })],
  ];
  test.each(changes)('any change to the template gives a different ID: %s', (_case, change) => {
    const changed = template('repo:1.2.3');
    change(changed);
    expect(computeBuildId(changed)).not.toBe(computeBuildId(template('repo:1.2.3')));
  });

  test.each([
    ['repo:1.2.3', '1.2.3'],
    ['docker.io/library/repo:1.2.3', '1.2.3'],
    ['host:5000/repo:v2', 'v2'],
    ['host:5000/team/repo', 'latest'],
    ['repo', 'latest'],
    [undefined, 'latest'],
    [`repo@sha256:${'ab'.repeat(32)}`, `sha256-${'ab'.repeat(6)}`],
    [`repo:1.0@sha256:${'cd'.repeat(32)}`, `sha256-${'cd'.repeat(6)}`],
    ['repo:V1_rc.2', 'V1_rc.2'],
  ])('starts with the image tag: %s → "%s-<12 hex>"', (image, tag) => {
    const id = computeBuildId(template(image));
    expect(id.startsWith(`${tag}-`)).toBe(true);
    expect(id.slice(tag.length + 1)).toMatch(/^[0-9a-f]{12}$/);
  });

  test.each([
    ['a plain tag', 'repo:1.2.3'],
    ['a 128-character tag', `repo:${'t'.repeat(128)}`],
    ['a long tag with separators at the cut', `repo:${'a'.repeat(49)}._-${'b'.repeat(60)}`],
    ['a digest', `host:5000/repo@sha256:${'0'.repeat(64)}`],
    ['a tag of only underscores', 'repo:__'],
    ['an empty tag', 'repo:'],
    ['no image', undefined],
  ])('is a label value of at most 63 characters: %s', (_case, image) => {
    const id = computeBuildId(template(image));
    expect(id).toMatch(labelValue);
    expect(id.length).toBeGreaterThan(0);
    expect(id.length).toBeLessThanOrEqual(63);
  });

  test.each(['release-42', 'v1.2.3', 'V1_rc.2', 'a', 'a'.repeat(63), '0-9._-Z'])(
    'uses a valid custom build ID as it is, instead of the hash: %s',
    (custom) => {
      expect(computeBuildId(template('repo:1.2.3'), custom)).toBe(custom);
    },
  );

  test('a custom build ID ignores the template', () => {
    expect(computeBuildId(template('repo:1'), 'fixed')).toBe(computeBuildId(template('repo:2'), 'fixed'));
  });

  // Never rewritten behind the user's back: what a label value (or Temporal) cannot hold is refused.
  test.each([
    ['empty', ''],
    ['with slashes and spaces', ' feature/new login '],
    ['with leading punctuation', '--v1.0--'],
    ['of no letters or digits', '---'],
    ['starting with "__" (reserved by Temporal)', '__v1'],
    ['of 64 characters', 'a'.repeat(64)],
    ['with a non-ASCII letter', 'v1-é'],
  ])('a custom build ID %s is refused, not rewritten', (_case, custom) => {
    expect(() => computeBuildId(template('repo:1.2.3'), custom)).toThrow(
      `build ID "${custom}" is not a Kubernetes label value of 1 to 63 characters`,
    );
  });
});
