/**
 * Jest global setup of the e2e tier: the images (controller, example worker, pause) built with Docker, a real
 * node (containerd, kubelet, kube-scheduler, kube-controller-manager with every controller, kube-apiserver, etcd)
 * with the images imported, and the Temporal dev server. State and logs in .dev/test-servers/e2e/ (pod logs in
 * its pod-logs/).
 *
 * Pods reach the servers over the host's network: Glidepath's pods and the workers' pods run with
 * `hostNetwork: true` (the test's patches), and the dev server and kube-apiserver listen on 127.0.0.1 only, as in
 * the other tiers. Nothing listens beyond loopback; the bridge network is there because a node is not Ready
 * without one.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { alive, stopProcesses, type ServerProcess } from '../../scripts/servers/processes.js';
import { startTemporal } from '../../scripts/servers/temporal-server.js';
import { cleanUpAfterKilledRun } from '../../scripts/servers/node-teardown.js';
import { startNode, type KubeNode } from '../../scripts/servers/node.js';

/** The images the test runs: v1 and v2 of the worker are two tags of one image (a new tag is a new build). */
export const images = {
  controller: 'glidepath/controller:0.1.0',
  workerV1: 'glidepath/example-worker:1.0.0',
  workerV2: 'glidepath/example-worker:2.0.0',
};

interface E2eState {
  node?: KubeNode;
  temporal?: ServerProcess;
  /** This run started Glidepath's own dockerd, so it stops it. */
  startedDocker: boolean;
  rootDir: string;
}

declare global {
  var glidepathE2e: E2eState | undefined;
}

function sh(rootDir: string, script: string, args: string[], env = process.env): string {
  return execFileSync('bash', [join(rootDir, script), ...args], {
    encoding: 'utf8',
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

function dockerAnswers(host: string | undefined): boolean {
  try {
    execFileSync('docker', ['version'], { env: { ...process.env, DOCKER_HOST: host ?? '' }, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export async function setup(_global: unknown, project: { rootDir: string }): Promise<void> {
  const rootDir = project.rootDir;
  if (process.getuid?.() !== 0)
    throw new Error('the e2e tier runs containerd and a kubelet: it needs root (a VM or a CI machine)');
  const dir = join(rootDir, '.dev/test-servers/e2e');
  const ownerFile = join(dir, 'run.pid');
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8')) : NaN;
  if (owner && owner !== process.pid && alive(owner))
    throw new Error(`another e2e run (pid ${owner}) has the node; one at a time per machine`);

  const state: E2eState = { startedDocker: false, rootDir };
  globalThis.glidepathE2e = state;
  try {
    await start(state, dir, ownerFile);
  } catch (err) {
    await teardown(); // jest runs no teardown after a failed setup: leave nothing running
    throw err;
  }
}

async function start(state: E2eState, dir: string, ownerFile: string): Promise<void> {
  const rootDir = state.rootDir;
  sh(rootDir, 'scripts/servers/debian-packages.sh', [
    'docker.io',
    'containerd',
    'runc',
    'containernetworking-plugins',
    'debootstrap',
  ]);
  const ownDocker = 'unix:///run/glidepath-docker/docker.sock';
  const dockerBefore = !!process.env.DOCKER_HOST || dockerAnswers(undefined) || dockerAnswers(ownDocker);
  const dockerHost = sh(rootDir, 'scripts/image/dockerd.sh', []);
  state.startedDocker = !dockerBefore && dockerHost === ownDocker;
  if (dockerHost) process.env.DOCKER_HOST = dockerHost;

  const start = Date.now();
  sh(rootDir, 'scripts/image/build.sh', ['controller', 'example-worker', 'pause']);
  execFileSync('docker', ['tag', images.workerV1, images.workerV2]);
  const built = Date.now();

  cleanUpAfterKilledRun(dir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(ownerFile, String(process.pid));
  const temporal = await startTemporal({ dir });
  state.temporal = temporal.process;
  process.env.TEMPORAL_ADDRESS = temporal.address;
  process.env.TEMPORAL_NAMESPACE = temporal.namespace;
  const node = await startNode({ dir });
  state.node = node;
  const ready = Date.now();
  node.importImages(Object.values(images));
  process.env.KUBECONFIG = node.kubeconfig;
  process.env.GLIDEPATH_KUBECTL = node.kubectl;
  process.env.GLIDEPATH_E2E_NODE = node.nodeName;
  process.env.GLIDEPATH_E2E_POD_LOGS = node.podLogsDir;
  process.env.GLIDEPATH_E2E_DIR = dir;
  const s = (from: number, to: number) => `${((to - from) / 1000).toFixed(0)} s`;
  console.log(
    `\n[glidepath] e2e: images built ${s(start, built)}, servers up and node Ready ${s(built, ready)}, images imported ${s(ready, Date.now())}; logs in ${dir}`,
  );
}

export async function teardown(): Promise<void> {
  const state = globalThis.glidepathE2e;
  if (!state) return;
  globalThis.glidepathE2e = undefined;
  await state.node?.stop();
  if (state.temporal) await stopProcesses([state.temporal]);
  if (state.startedDocker) sh(state.rootDir, 'scripts/image/dockerd.sh', ['stop']);
}
