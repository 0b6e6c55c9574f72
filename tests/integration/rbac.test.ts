/**
 * k8s-manifests/rbac/ is enough: the controller, authenticated as the glidepath ServiceAccount, rolls a resource
 * out and deletes it; and it cannot do what it does not need.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../../api/common.js';
import { startController, type Controller } from '../../worker/controller.js';
import { apply, deployments, eventually, plural, resource, startRolloutEnv, twdStatus, type RolloutEnv } from '../harness/rollout-env.js';

const rbac = fileURLToPath(new URL('../../k8s-manifests/rbac/', import.meta.url));
const kubectl = (...args: string[]) =>
  execFileSync(process.env.GLIDEPATH_KUBECTL!, ['--kubeconfig', process.env.KUBECONFIG!, ...args], { encoding: 'utf8' }).trim();

let env: RolloutEnv;
let controller: Controller | undefined;

beforeAll(async () => {
  env = await startRolloutEnv('rbac', { inProcessController: false });
  kubectl('apply', '-f', rbac);
});
afterAll(async () => {
  await controller?.stop();
  await env?.stop();
});

test('the controller runs as the glidepath ServiceAccount with only the ClusterRole it ships with', async () => {
  const token = kubectl('create', 'token', 'glidepath', '-n', 'glidepath-system', '--duration', '1h');
  const cluster = env.kc.getCurrentCluster()!;
  const asServiceAccount = new k8s.KubeConfig();
  asServiceAccount.loadFromOptions({
    clusters: [{ name: 'test', server: cluster.server, skipTLSVerify: true }],
    users: [{ name: 'glidepath', token }],
    contexts: [{ name: 'glidepath', cluster: 'test', user: 'glidepath' }],
    currentContext: 'glidepath',
  });
  controller = await startController({
    kubeConfig: asServiceAccount,
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' },
    taskQueue: `glidepath-${env.namespace}`,
    namespaces: [env.namespace],
    timings: { drainPollMaxMs: 1000 },
  });

  await apply(env, resource(env, 'least', { env: { VERSION: 'v1' } }));
  const v1 = await eventually('v1 current', async () => (await twdStatus(env, 'least'))?.currentVersion?.buildID);
  await apply(env, resource(env, 'least', { env: { VERSION: 'v2' } }));
  await eventually('v2 current, v1 sunset', async () => {
    const s = await twdStatus(env, 'least');
    return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1 && (await deployments(env, 'least')).size === 1;
  });
  env.deleting.add('least');
  await env.custom.deleteNamespacedCustomObject({ group, version, namespace: env.namespace, plural, name: 'least' });
  await eventually('deleted, finalizer removed', async () => (await twdStatus(env, 'least').catch(() => undefined)) === undefined);
  expect(env.violations).toEqual([]);

  // `kubectl auth can-i` answers "no" with exit status 1.
  const can = (verb: string, what: string) => {
    try {
      return kubectl('auth', 'can-i', verb, what, '-n', env.namespace, '--as', 'system:serviceaccount:glidepath-system:glidepath') === 'yes';
    } catch (err) {
      if (String((err as { stdout?: string }).stdout).trim() === 'no') return false;
      throw err;
    }
  };
  expect(can('patch', 'temporalworkerdeployments.glidepath.dev/status')).toBe(true);
  expect(can('delete', 'secrets')).toBe(false);
  expect(can('create', 'pods')).toBe(false);
  expect(can('delete', 'temporalworkerdeployments.glidepath.dev')).toBe(false);
});
