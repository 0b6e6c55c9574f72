/**
 * k8s-manifests/base/rbac.yaml is enough: the controller, authenticated as the glidepath ServiceAccount, rolls a resource
 * out and deletes it; and it cannot do what it does not need. Its Secrets can be granted per namespace instead. The
 * namespaced variant, a Role in the watched namespace bound to a ServiceAccount of another, is enough for a controller
 * run with `--namespace`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
const namespacedRbac = fileURLToPath(
  new URL('../../k8s-manifests/overlays/namespaced/team/role.yaml', import.meta.url),
);
const kubectlWith = (input: string | undefined, ...args: string[]) =>
  execFileSync(process.env.GLIDEPATH_KUBECTL!, ['--kubeconfig', process.env.KUBECONFIG!, ...args], {
    encoding: 'utf8',
    input,
  }).trim();
const kubectl = (...args: string[]) => kubectlWith(undefined, ...args);

/**
 * The namespaced Role and its RoleBinding in `namespace`, the binding's subject moved to the ServiceAccount glidepath
 * of `controllerNamespace` (role.yaml's comment: change the subject's namespace).
 */
function applyNamespacedRbac(namespace: string, controllerNamespace: string): void {
  const yaml = readFileSync(namespacedRbac, 'utf8');
  const subject = '    name: glidepath\n    namespace: glidepath-team\n';
  expect(yaml).toContain(subject);
  kubectlWith(
    yaml.replace(subject, `    name: glidepath\n    namespace: ${controllerNamespace}\n`),
    'apply',
    '-n',
    namespace,
    '-f',
    '-',
  );
}

let env: RolloutEnv;
let controller: Controller | undefined;

beforeAll(async () => {
  env = await startRolloutEnv('rbac', { inProcessController: false });
  kubectl('apply', '-f', rbac);
});
afterAll(async () => {
  await controller?.stop();
  if (env) kubectl('delete', 'namespace', `${env.namespace}-glidepath`, '--ignore-not-found', '--wait=false');
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

test('glidepath-controller-secrets bound per namespace instead of cluster-wide: nothing on Secrets where it is not bound', () => {
  const serviceAccount = 'system:serviceaccount:glidepath-system:glidepath';
  const can = (verb: string, what: string, namespace: string) => canI(serviceAccount, verb, what, namespace);
  expect(can('get', 'secrets', 'default')).toBe(true); // as shipped: cluster-wide
  // What docs/install.md says to do for each namespace whose resources Glidepath rolls out.
  kubectl('delete', 'clusterrolebinding', 'glidepath-controller-secrets');
  try {
    kubectl(
      'create',
      'rolebinding',
      'glidepath-controller-secrets',
      '-n',
      env.namespace,
      '--clusterrole=glidepath-controller-secrets',
      '--serviceaccount=glidepath-system:glidepath',
    );
    expect(can('get', 'secrets', env.namespace)).toBe(true);
    expect(can('get', 'configmaps', env.namespace)).toBe(true);
    for (const verb of ['get', 'list', 'watch', 'create', 'patch', 'delete']) {
      expect([verb, can(verb, 'secrets', 'default')]).toEqual([verb, false]);
    }
    expect(can('get', 'configmaps', 'default')).toBe(false);
    // The rest of the ClusterRole still reaches every namespace.
    expect(can('watch', 'temporalworkerdeployments.glidepath.dev', 'default')).toBe(true);
  } finally {
    kubectl('delete', 'rolebinding', 'glidepath-controller-secrets', '-n', env.namespace, '--ignore-not-found');
    kubectl('apply', '-f', rbac); // the ClusterRoleBinding back, for the tests after
  }
});

test('with --namespace the controller needs only the namespaced Role: a rollout to current and not one watch error', async () => {
  await controller?.stop();
  controller = undefined;
  // The controller's ServiceAccount in a namespace of its own; the Role and its binding in the watched one.
  const own = `${env.namespace}-glidepath`;
  kubectl('create', 'namespace', own);
  kubectl('create', 'serviceaccount', 'glidepath', '-n', own);
  applyNamespacedRbac(env.namespace, own);
  const lines: string[] = [];
  controller = await startController({
    kubeConfig: kubeConfigAs('glidepath', own),
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' },
    // Given: out of a cluster the controller would keep its installation ConfigMap in the watched namespace, where
    // the Role only reads (in a pod it is the controller's own namespace, with the base's Role for it).
    installation: env.installation,
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
    canI(`system:serviceaccount:${own}:glidepath`, verb, what, namespace);
  expect(can('watch', 'temporalworkerdeployments.glidepath.dev')).toBe(true);
  expect(can('get', 'secrets')).toBe(true);
  expect(can('get', 'secrets', 'default')).toBe(false);
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
  applyNamespacedRbac(env.namespace, `${env.namespace}-glidepath`); // the Role (the test before applied it too)
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
