/**
 * `npm run demo`: the local demo on the embedded defaults. Starts (or reuses) the real servers, runs the
 * controller and the pod simulator in this process, and rolls a worker from v1 to v2 progressively while a
 * pinned workflow keeps v1 alive, printing each transition; then deletes the resource and shows the cleanup.
 * The servers stay up afterwards for `kubectl` / `temporal` / the Web UI (`npm run servers:down` stops them).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { group, version } from '../api/common.js';
import { rolloutWorkflowId } from '../api/names.js';
import { ignoreNotFound } from '../kube/client.js';
import { PodSimulator } from '../simulator/pod-simulator.js';
import { installRuntime, startController } from '../worker/controller.js';

installRuntime('ERROR');
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
execFileSync('npx', ['tsx', join(root, 'scripts/servers-up.ts')], { stdio: 'inherit', cwd: root });
const env = Object.fromEntries(
  readFileSync(join(root, '.dev/env.sh'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('export '))
    .map((l) => l.slice('export '.length).split(/=(.*)/s).slice(0, 2) as [string, string]),
);
const namespace = 'glidepath-demo';
const kc = new k8s.KubeConfig();
kc.loadFromFile(env.KUBECONFIG!);
const core = kc.makeApiClient(k8s.CoreV1Api);
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const started = Date.now();
const log = (m: string) => console.log(`[demo +${((Date.now() - started) / 1000).toFixed(1)}s] ${m}`);

await ignoreNotFound(
  core
    .createNamespace({ body: { metadata: { name: namespace } } })
    .catch((e: k8s.ApiException<unknown>) => (e.code === 409 ? undefined : Promise.reject(e))),
);
const simulator = new PodSimulator(kc, { namespaces: [namespace], log });
await simulator.start();
const controller = await startController({
  kubeConfig: kc,
  temporal: { address: env.TEMPORAL_ADDRESS!, namespace: 'default' },
  namespaces: [namespace],
  timings: { drainPollMaxMs: 1000 },
});
const connection = await Connection.connect({ address: env.TEMPORAL_ADDRESS! });
const client = new Client({ connection });

const plural = 'temporalworkerdeployments';
const resource = (versionLabel: string) => ({
  apiVersion: `${group}/${version}`,
  kind: 'TemporalWorkerDeployment',
  metadata: { name: 'demo', namespace },
  spec: {
    replicas: 1,
    rollout: {
      strategy: 'Progressive',
      steps: [
        { rampPercentage: 25, pauseDuration: '3s' },
        { rampPercentage: 50, pauseDuration: '3s' },
        { rampPercentage: 75, pauseDuration: '3s' },
      ],
    },
    sunset: { scaledownDelay: '2s', deleteDelay: '4s' },
    workerOptions: { connectionRef: { name: 'local' }, temporalNamespace: 'default' },
    template: {
      spec: {
        containers: [
          {
            name: 'worker',
            image: `glidepath/example-worker:${versionLabel}`,
            // DEMO_RUN makes each run's builds new ones (Temporal keeps what it knows of a build ID).
            env: [
              { name: 'EXAMPLE_TASK_QUEUE', value: 'demo' },
              { name: 'EXAMPLE_WORKFLOW_HOLD', value: '8s' },
              { name: 'DEMO_RUN', value: String(started) },
            ],
          },
        ],
      },
    },
  },
});
const get = async () =>
  (await ignoreNotFound(custom.getNamespacedCustomObject({ group, version, namespace, plural, name: 'demo' }))) as
    { status?: Record<string, any> } | undefined; // eslint-disable-line @typescript-eslint/no-explicit-any
let last = '';
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function watchUntil(done: (s: Record<string, any> | undefined) => boolean, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const s = (await get())?.status;
    const line = s
      ? `phase=${s.phase} current=${s.currentVersion?.buildID ?? '-'} target=${s.targetVersion?.buildID ?? '-'} ramp=${s.targetVersion?.rampPercentage ?? '-'}% deprecated=[${(s.deprecatedVersions ?? []).map((v: { buildID: string; status?: string }) => `${v.buildID}:${v.status ?? '?'}`).join(',')}] — ${s.message ?? ''}`
      : 'resource gone';
    if (line !== last) log((last = line));
    if (done(s)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the demo rollout did not finish in time');
}

try {
  if (await get()) {
    log('deleting the resource a previous demo left behind');
    await custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name: 'demo' });
    await watchUntil((s) => s === undefined);
  }
  last = '';
  execFileSync(
    join(env.PATH!.split(':')[0]!, 'kubectl'),
    [
      '--kubeconfig',
      env.KUBECONFIG!,
      '-n',
      namespace,
      'apply',
      '-f',
      join(root, 'k8s-manifests/samples/temporal-connection.yaml'),
    ],
    { stdio: 'inherit' },
  );
  log('applying v1 (the first version becomes current at once)');
  await custom.patchNamespacedCustomObject(
    { group, version, namespace, plural, name: 'demo', body: resource('1.0.0'), fieldManager: 'demo', force: true },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply),
  );
  await watchUntil((s) => s?.phase === 'Ready');
  const pinned = await client.workflow.start('exampleWork', {
    taskQueue: 'demo',
    workflowId: `demo-pinned-${Date.now()}`,
  });
  log(`started ${pinned.workflowId} (PINNED to v1, open for 8s)`);
  log('applying v2: ramp 25% → 50% → 75% → current; v1 drains, then scales to 0, then is deleted');
  await custom.patchNamespacedCustomObject(
    { group, version, namespace, plural, name: 'demo', body: resource('2.0.0'), fieldManager: 'demo', force: true },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply),
  );
  await watchUntil(
    (s) =>
      s?.phase === 'Ready' && s.currentVersion?.buildID?.startsWith('2.0.0') && !(s.deprecatedVersions ?? []).length,
  );
  log(`pinned workflow finished on ${await pinned.result()} (the build it started on)`);
  log('deleting the resource: routing cleared, versions deleted in Temporal, Deployments deleted, finalizer removed');
  await custom.deleteNamespacedCustomObject({ group, version, namespace, plural, name: 'demo' });
  await watchUntil((s) => s === undefined);
  log(
    `done. See it in the Web UI: http://127.0.0.1:8233/namespaces/default/workflows?query=${encodeURIComponent(`WorkflowId="${rolloutWorkflowId(controller.installation, namespace, 'demo')}"`)}`,
  );
} finally {
  await controller.stop();
  await simulator.stop();
  await connection.close();
}
process.exit(0);
