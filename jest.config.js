// Six tiers, one command: unit (pure code), workflow (real Temporal dev server), integration (real
// kube-apiserver + etcd + kube-controller-manager + Temporal dev server + simulated pods), chaos (faults:
// the controller SIGKILLed, the servers restarted), security (an attacker with Temporal access only: forged activity
// calls and completions, on the same real servers), e2e (a real node: containerd + kubelet, the images installed
// with kubectl apply -k). `npm run test:all` (scripts/test-all.sh) runs e2e in a jest run of its own: its
// global setup points KUBECONFIG and TEMPORAL_ADDRESS at its own servers.
const common = {
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
  testEnvironment: 'node',
};

/** @type {import('jest').Config} */
export default {
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/tests/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'workflow',
      testMatch: ['<rootDir>/tests/workflow/**/*.test.ts'],
      globalSetup: '<rootDir>/tests/harness/global-setup.mjs',
      globalTeardown: '<rootDir>/tests/harness/global-teardown.mjs',
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/tests/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/tests/harness/global-setup.mjs',
      globalTeardown: '<rootDir>/tests/harness/global-teardown.mjs',
    },
    {
      ...common,
      displayName: 'chaos',
      testMatch: ['<rootDir>/tests/chaos/**/*.test.ts'],
      globalSetup: '<rootDir>/tests/harness/global-setup.mjs',
      globalTeardown: '<rootDir>/tests/harness/global-teardown.mjs',
    },
    {
      ...common,
      displayName: 'security',
      testMatch: ['<rootDir>/tests/security/**/*.test.ts'],
      globalSetup: '<rootDir>/tests/harness/global-setup.mjs',
      globalTeardown: '<rootDir>/tests/harness/global-teardown.mjs',
    },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/tests/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/tests/e2e/global-setup.mjs',
      globalTeardown: '<rootDir>/tests/e2e/global-teardown.mjs',
    },
  ],
  testTimeout: 120_000,
  // Every tier has passed or failed by then; a handle left open (a gRPC channel retrying a server the teardown
  // stopped) must not hold CI until its time runs out.
  forceExit: true,
  // Two cores: test files run one at a time, so timing checks measure Glidepath, not contention.
  maxWorkers: 1,
};
