/**
 * k8s-manifests/base/rbac.yaml is enough: the controller, authenticated as the glidepath ServiceAccount, rolls a resource
 * out and deletes it; and it cannot do what it does not need. The namespaced variant is enough for a controller
 * run with `--namespace`.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../../api/common.js';
import { installationTaskQueue } from '../../api/names.js';
import { startController, type Controller } from '../../worker/controller.js';
import {
  apply,
  deployments,
  eventually,
  plural,
  resource,
  startRolloutEnv,
  twdStatus,
  type RolloutEnv,
} from '../harness/rollout-env.js';

const rbac = fileURLToPath(new URL('../../k8s-manifests/base/rbac.yaml', import.meta.url));
const namespacedRbac = fileURLToPath(new URL('../../k8s-manifests/overlays/namespaced/role.yaml', import.meta.url));
const kubectl = (...args: string[]) =>
  execFileSync(process.env.GLIDEPATH_KUBECTL!, ['--kubeconfig', process.env.KUBECONFIG!, ...args], {
    encoding: 'utf8',
  }).trim();

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

/**
 * `kubectl auth can-i` for `user`; `what` is `resource[/subresource]` (kubectl itself would read the part after
 * the slash as an object name). It answers "no" with exit status 1.
 */
function canI(user: string, verb: string, what: string, namespace: string): boolean {
  const [resource, subresource] = what.split('/');
  try {
    return (
      kubectl(
        'auth',
        'can-i',
        verb,
        resource!,
        ...(subresource ? [`--subresource=${subresource}`] : []),
        '-n',
        namespace,
        '--as',
        user,
      ) === 'yes'
    );
  } catch (err) {
    if (String((err as { stdout?: string }).stdout).trim() === 'no') return false;
    throw err;
  }
}

/** A kubeconfig authenticated as a ServiceAccount, by a token from the TokenRequest API. */
function kubeConfigAs(serviceAccount: string, namespace: string): k8s.KubeConfig {
  const token = kubectl('create', 'token', serviceAccount, '-n', namespace, '--duration', '1h');
  const cluster = env.kc.getCurrentCluster()!;
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'test', server: cluster.server, skipTLSVerify: true }],
    users: [{ name: serviceAccount, token }],
    contexts: [{ name: serviceAccount, cluster: 'test', user: serviceAccount }],
    currentContext: serviceAccount,
  });
  return kc;
}

test('the controller runs as the glidepath ServiceAccount with only the ClusterRole it ships with', async () => {
  const asServiceAccount = kubeConfigAs('glidepath', 'glidepath-system');
  controller = await startController({
    kubeConfig: asServiceAccount,
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' },
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
  await eventually(
    'deleted, finalizer removed',
    async () => (await twdStatus(env, 'least').catch(() => undefined)) === undefined,
  );
  expect(env.violations).toEqual([]);

  const can = (verb: string, what: string) =>
    canI('system:serviceaccount:glidepath-system:glidepath', verb, what, env.namespace);
  expect(can('patch', 'temporalworkerdeployments.glidepath.dev/status')).toBe(true);
  expect(can('delete', 'secrets')).toBe(false);
  expect(can('create', 'pods')).toBe(false);
  expect(can('delete', 'temporalworkerdeployments.glidepath.dev')).toBe(false);
  expect(can('update', 'temporalworkerdeployments.glidepath.dev/finalizers')).toBe(true);
});

test('with --namespace the controller needs only the namespaced Role: a rollout to current and not one watch error', async () => {
  await controller?.stop();
  controller = undefined;
  kubectl('apply', '-n', env.namespace, '-f', namespacedRbac);
  const lines: string[] = [];
  controller = await startController({
    kubeConfig: kubeConfigAs('glidepath', env.namespace),
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' },
    namespaces: [env.namespace],
    timings: { drainPollMaxMs: 1000 },
    log: (message, fields) => lines.push(`${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`),
  });

  // The default task queue, as the shipped overlay runs it: the installation's own (no private queue in the test).
  expect(controller.taskQueue).toBe(installationTaskQueue(env.installation));
  await apply(env, resource(env, 'scoped', { env: { VERSION: 'v1' } }));
  const v1 = await eventually('v1 current', async () => (await twdStatus(env, 'scoped'))?.currentVersion?.buildID);
  await apply(env, resource(env, 'scoped', { env: { VERSION: 'v2' } }));
  await eventually('v2 current, v1 sunset', async () => {
    const s = await twdStatus(env, 'scoped');
    return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1 && (await deployments(env, 'scoped')).size === 1;
  });
  expect(env.violations).toEqual([]);
  expect(lines.filter((l) => /watch error|restarting|failed/.test(l))).toEqual([]);
  expect(lines.some((l) => l.startsWith('signalled specChanged'))).toBe(true);

  const can = (verb: string, what: string, namespace = env.namespace) =>
    canI(`system:serviceaccount:${env.namespace}:glidepath`, verb, what, namespace);
  expect(can('watch', 'temporalworkerdeployments.glidepath.dev')).toBe(true);
  expect(can('watch', 'temporalworkerdeployments.glidepath.dev', 'default')).toBe(false);
  expect(can('list', 'deployments.apps', 'kube-system')).toBe(false);
  expect(can('update', 'temporalworkerdeployments.glidepath.dev/finalizers')).toBe(true);
  expect(can('patch', 'temporalworkerdeployments.glidepath.dev/status')).toBe(true);
});

test('without the rights to watch, the controller is not ready and says why; granted them, it becomes ready', async () => {
  await controller?.stop();
  controller = undefined;
  kubectl('create', 'serviceaccount', 'bare', '-n', env.namespace);
  controller = await startController({
    kubeConfig: kubeConfigAs('bare', env.namespace),
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' },
    installation: env.installation, // given: a ServiceAccount with no rights cannot read the installation's ConfigMap
    taskQueue: `glidepath-${env.namespace}-bare`,
    namespaces: [env.namespace],
  });
  const notReady = await eventually('not ready, naming the failing watches', () => {
    const { live, ready } = controller!.health();
    return live === true && typeof ready === 'string' && ready.includes('failing') ? ready : undefined;
  });
  expect(notReady).toMatch(/forbidden|403/i);
  kubectl('apply', '-n', env.namespace, '-f', namespacedRbac); // the Role (the test before applied it too)
  kubectl(
    'create',
    'rolebinding',
    'bare',
    '--role',
    'glidepath-controller',
    `--serviceaccount=${env.namespace}:bare`,
    '-n',
    env.namespace,
  );
  // The watches are started again with a backoff of up to 30 s.
  await eventually('ready once the watches work', () => controller!.health().ready === true, 90_000, 200);
});
