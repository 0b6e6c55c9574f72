import {
  installationIdPattern,
  shortHash,
  rolloutWorkflowId,
  sanitizeBuildId,
  versionedDeploymentName,
  workerDeploymentName,
} from '../../api/names.js';

const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

describe('workerDeploymentName', () => {
  test.each([
    ['default', 'orders', 'default/orders'],
    ['payments-prod', 'billing-worker', 'payments-prod/billing-worker'],
  ])('is "<namespace>/<name>" (%s, %s → %s), as temporal-worker-controller names it', (ns, name, expected) => {
    expect(workerDeploymentName(ns, name)).toBe(expected);
  });

  test('tells resources of the same name in different namespaces apart', () => {
    expect(workerDeploymentName('a', 'orders')).not.toBe(workerDeploymentName('b', 'orders'));
  });
});

describe('rolloutWorkflowId', () => {
  test.each([
    ['1a2b3c4d', 'default', 'orders', 'glidepath/1a2b3c4d/default/orders'],
    ['team-a', 'payments-prod', 'billing-worker', 'glidepath/team-a/payments-prod/billing-worker'],
  ])('is "glidepath/<installation>/<namespace>/<name>" (%s, %s, %s → %s)', (installation, ns, name, expected) => {
    expect(rolloutWorkflowId(installation, ns, name)).toBe(expected);
  });

  test('is the same for the same resource (idempotency key) and differs across namespaces and installations', () => {
    expect(rolloutWorkflowId('i', 'default', 'orders')).toBe(rolloutWorkflowId('i', 'default', 'orders'));
    expect(rolloutWorkflowId('i', 'a', 'orders')).not.toBe(rolloutWorkflowId('i', 'b', 'orders'));
    expect(rolloutWorkflowId('one', 'a', 'orders')).not.toBe(rolloutWorkflowId('two', 'a', 'orders'));
  });
});

describe('installationIdPattern', () => {
  test.each(['1a2b3c4d', 'team-a', 'a'])('takes %s', (id) => expect(installationIdPattern.test(id)).toBe(true));
  test.each(['', 'Team', '-a', 'a-', 'a/b', 'x'.repeat(33)])('refuses "%s"', (id) =>
    expect(installationIdPattern.test(id)).toBe(false),
  );
});

describe('versionedDeploymentName', () => {
  test.each([
    ['orders', 'v1-ab12cd34ef56', `orders-v1-ab12cd34ef56-${shortHash('orders\u0000v1-ab12cd34ef56')}`],
    ['orders', 'latest-0123456789ab', `orders-latest-0123456789ab-${shortHash('orders\u0000latest-0123456789ab')}`],
    ['orders', 'v1.2-ab12cd34ef56', `orders-v1-2-ab12cd34ef56-${shortHash('orders\u0000v1.2-ab12cd34ef56')}`],
    ['orders', 'V2_RC1', `orders-v2-rc1-${shortHash('orders\u0000V2_RC1')}`],
    ['orders', 'a..__--b', `orders-a-b-${shortHash('orders\u0000a..__--b')}`],
  ])('short names read "<name>-<buildId>-<hash of both>" (%s + %s → %s)', (name, buildId, expected) => {
    expect(versionedDeploymentName(name, buildId)).toBe(expected);
  });

  const longName = 'a'.repeat(63);
  const longBuildId = `${'X'.repeat(50)}.${'y'.repeat(12)}`;
  test.each([
    ['short name, short build ID', 'orders', 'v1-abc'],
    ['63-character name', longName, '1.2.3-0123456789ab'],
    ['63-character build ID', 'orders', longBuildId],
    ['both long', longName, longBuildId],
    ['upper case and dots', 'Orders.Worker', 'V1.2.3_RC'],
    ['name ending near the cut with dashes', `${'b'.repeat(53)}-----c`, 'v1'],
  ])('is a DNS-1123 label of at most 63 characters: %s', (_case, name, buildId) => {
    const result = versionedDeploymentName(name, buildId);
    expect(result).toMatch(dns1123Label);
    expect(result.length).toBeLessThanOrEqual(63);
  });

  test.each([
    ['names differing only past the cut', `${'w'.repeat(60)}-one`, `${'w'.repeat(60)}-two`, 'v1-abc', 'v1-abc'],
    ['build IDs differing only past the cut', 'orders', 'orders', `${'1'.repeat(70)}-aaa`, `${'1'.repeat(70)}-bbb`],
  ])('two long inputs cut to the same prefix stay distinct: %s', (_case, nameA, nameB, buildA, buildB) => {
    const a = versionedDeploymentName(nameA, buildA);
    const b = versionedDeploymentName(nameB, buildB);
    expect(a.slice(0, 40)).toBe(b.slice(0, 40));
    expect(a).not.toBe(b);
    expect(a.length).toBeLessThanOrEqual(63);
    expect(b.length).toBeLessThanOrEqual(63);
  });

  test.each([
    ['short', 'orders', 'v1-abc'],
    ['long', 'z'.repeat(80), 'v1-abc'],
  ])('is deterministic (%s)', (_case, name, buildId) => {
    expect(versionedDeploymentName(name, buildId)).toBe(versionedDeploymentName(name, buildId));
  });

  test('two resources whose name and build read alike never share a Deployment', () => {
    expect(versionedDeploymentName('web', 'api-v1')).not.toBe(versionedDeploymentName('web-api', 'v1'));
  });

  test('keeps a readable prefix of the name when cut', () => {
    expect(versionedDeploymentName('q'.repeat(80), 'v1')).toMatch(/^q{54}-[0-9a-f]{8}$/);
  });
});

describe('sanitizeBuildId', () => {
  test.each([
    ['1.2.3-abc', '1.2.3-abc'],
    ['V1_rc.2', 'V1_rc.2'],
    ['feature/login', 'feature-login'],
    ['a b  c', 'a-b-c'],
    ['---v1---', 'v1'],
    ['_.v1._', 'v1'],
    ['sha256:abc', 'sha256-abc'],
    ['ünïcode-1', 'n-code-1'],
  ])('%s → %s (kept or cleaned, keeping case)', (input, expected) => {
    expect(sanitizeBuildId(input)).toBe(expected);
  });

  test.each([
    ['short', 'v1.2.3'],
    ['exactly 63', 'a'.repeat(63)],
    ['64 characters', 'a'.repeat(64)],
    ['very long', 'Build_'.repeat(40)],
    ['long with separators at the cut', `${'a'.repeat(53)}._-._-._-._-b${'c'.repeat(20)}`],
    ['slashes and spaces', ' feature/branch name with spaces '.repeat(4)],
  ])('gives a label value of at most 63 characters: %s', (_case, input) => {
    const result = sanitizeBuildId(input);
    expect(result).toMatch(labelValue);
    expect(result.length).toBeGreaterThan(0);
    expect(result.length).toBeLessThanOrEqual(63);
  });

  test('keeps 63 characters as they are and cuts 64 with a hash suffix', () => {
    expect(sanitizeBuildId('a'.repeat(63))).toBe('a'.repeat(63));
    expect(sanitizeBuildId('a'.repeat(64))).toMatch(/^a{54}-[0-9a-f]{8}$/);
  });

  test('two long IDs cut to the same prefix stay distinct, and each is deterministic', () => {
    const a = `${'x'.repeat(70)}-one`;
    const b = `${'x'.repeat(70)}-two`;
    expect(sanitizeBuildId(a)).not.toBe(sanitizeBuildId(b));
    expect(sanitizeBuildId(a)).toBe(sanitizeBuildId(a));
  });

  test.each(['', '-', '...', '_-_', '///', '   ', '¿¡'])(
    '"%s" has no letters or digits and is refused with a clear message',
    (input) => {
      expect(() => sanitizeBuildId(input)).toThrow(`build ID "${input}" has no letters or digits`);
    },
  );
});
