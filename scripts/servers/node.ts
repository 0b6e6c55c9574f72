/**
 * A real single-node cluster for the e2e tier: startKube's etcd + kube-apiserver (pods get ServiceAccount tokens)
 * and kube-controller-manager with all its controllers (Deployments, ReplicaSets, …), plus kube-scheduler, kubelet
 * and containerd with CNI (a bridge). Pods run for real; images come from the local Docker engine (no registry is
 * reachable: `importImages`). Binaries: kube.sh and node.sh (cached), containerd/runc/CNI plugins from Debian's
 * packages (debian-packages.sh). Needs root, as any kubelet does. Settings: ../shared/reference/infrastructure.md,
 * "A real node".
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { startKube, type KubeServer } from './kube-server.js';
import { deleteAllPods, killContainers, unmountUnder } from './node-teardown.js';
import { freePort, launch, stopProcesses, type ServerProcess } from './processes.js';

const scriptsDir = dirname(fileURLToPath(import.meta.url));

/** The pod sandbox image: node.sh's `pause`, imported by `scripts/image/build.sh pause`. */
export const pauseImage = 'glidepath/pause:1';

/** Pods' addresses on the node's bridge (pods with `hostNetwork: true` have the node's). */
export const podSubnet = '10.244.0.0/24';

/** Folder holding kubelet, kube-scheduler and pause (built into the cache on first use). */
export function nodeBinaries(): string {
  return execFileSync('bash', [join(scriptsDir, 'node.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

/** A running node and the control plane around it. */
export interface KubeNode extends KubeServer {
  nodeName: string;
  /** containerd's socket: `ctr --address <it> -n k8s.io …`. */
  containerdSocket: string;
  /** Containers' logs, as kubelet writes them: `<namespace>_<pod>_<uid>/<container>/<restart>.log`. */
  podLogsDir: string;
  /** Copies images from the Docker engine (DOCKER_HOST) into the node's containerd: pods use them without a pull. */
  importImages(images: string[]): void;
  /** Stops everything, pods first, and unmounts what kubelet mounted; the logs stay. */
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(
  what: string,
  proc: { child: ChildProcess; proc: ServerProcess },
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null)
      throw new Error(`${proc.proc.name} exited with code ${proc.child.exitCode}; read ${proc.proc.logFile}`);
    try {
      if (await check()) return;
    } catch {
      // not yet
    }
    await sleep(200);
  }
  throw new Error(`${what} not within ${timeoutMs / 1000}s; read ${proc.proc.logFile}`);
}

/**
 * containerd's snapshotter: overlayfs when the kernel mounts an overlay on `dir`'s filesystem (each layer stored
 * once), else native, which works everywhere but copies the whole file system for every layer and container
 * (≈ 6 GB for the e2e tier's three images, and minutes to write and delete on this machine).
 */
function snapshotterFor(dir: string): 'overlayfs' | 'native' {
  const probe = join(dir, 'overlay-probe');
  const [lower, upper, work, merged] = ['lower', 'upper', 'work', 'merged'].map((d) => join(probe, d));
  for (const d of [lower, upper, work, merged]) mkdirSync(d!, { recursive: true });
  try {
    execFileSync(
      'mount',
      ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, merged!],
      { stdio: 'ignore' },
    );
    execFileSync('umount', [merged!], { stdio: 'ignore' });
    return 'overlayfs';
  } catch {
    return 'native';
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
}

/**
 * Starts the control plane (startKube with every controller and ServiceAccount tokens for pods), containerd,
 * kube-scheduler and kubelet, all with their state in `dir`, and waits until the node is Ready. The pause image
 * must be in the Docker engine (`scripts/image/build.sh pause`); it is imported first.
 */
export async function startNode(opts: { dir: string; crds?: boolean; nodeName?: string }): Promise<KubeNode> {
  const dir = opts.dir;
  const nodeName = opts.nodeName ?? 'glidepath-node';
  const bin = nodeBinaries();
  mkdirSync(dir, { recursive: true });
  const kube = await startKube({ dir, crds: opts.crds, controllers: ['*', '-nodeipam'], podServiceAccounts: true });
  const [kcm] = kube.processes; // stop order: kube-controller-manager, kube-apiserver, etcd
  const nodeProcesses: ServerProcess[] = [];
  const containerdDir = join(dir, 'containerd');
  const containerdSocket = join(containerdDir, 'containerd.sock');
  const kubeletDir = join(dir, 'kubelet');
  const podLogsDir = join(dir, 'pod-logs');
  const ctr = (...args: string[]) => ['--address', containerdSocket, '-n', 'k8s.io', ...args];
  const snapshotter = snapshotterFor(dir);

  const node: KubeNode = {
    ...kube,
    nodeName,
    containerdSocket,
    podLogsDir,
    importImages(images) {
      // Unpacked for the CRI's snapshotter, so pods start from them at once.
      const script =
        'docker save "$@" | ctr --address "$CONTAINERD_SOCKET" -n k8s.io images import --snapshotter "$SNAPSHOTTER" -';
      execFileSync('bash', ['-o', 'pipefail', '-c', script, 'import', ...images], {
        env: { ...process.env, CONTAINERD_SOCKET: containerdSocket, SNAPSHOTTER: snapshotter },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    },
    async stop() {
      await stopNode();
    },
  };

  let stopping: Promise<void> | undefined;
  const stopNode = () =>
    (stopping ??= (async () => {
      const [scheduler, kubelet, containerd] = ['kube-scheduler', 'kubelet', 'containerd'].map((n) =>
        nodeProcesses.find((p) => p.name === n),
      );
      // Nothing recreates pods once these are gone; kubelet then stops each pod as a cluster would (volumes unmounted).
      await stopProcesses([kcm!, ...(scheduler ? [scheduler] : [])]);
      if (kubelet) await deleteAllPods(kube.kubeconfig);
      await stopProcesses(kubelet ? [kubelet] : []);
      if (containerd) {
        await killContainers(ctr);
        await stopProcesses([containerd]);
      }
      unmountUnder(dir);
      await stopProcesses(kube.processes.slice(1)); // kube-apiserver, then etcd
      // The images and containers' file systems (GBs); the logs stay.
      for (const d of [join(containerdDir, 'root'), join(containerdDir, 'state'), kubeletDir])
        rmSync(d, { recursive: true, force: true });
    })());

  try {
    await startContainerd();
    await startScheduler();
    await startKubelet();
    return node;
  } catch (err) {
    await stopNode();
    throw err;
  }

  async function startContainerd() {
    mkdirSync(containerdDir, { recursive: true });
    const cniConf = join(dir, 'cni', 'net.d');
    mkdirSync(cniConf, { recursive: true });
    writeFileSync(
      join(cniConf, '10-glidepath.conflist'),
      JSON.stringify(
        {
          cniVersion: '1.0.0',
          name: 'glidepath',
          plugins: [
            {
              type: 'bridge',
              bridge: 'glidepath0',
              isGateway: true,
              ipMasq: false,
              ipam: {
                type: 'host-local',
                ranges: [[{ subnet: podSubnet }]],
                routes: [{ dst: '0.0.0.0/0' }],
                dataDir: join(dir, 'cni', 'ipam'),
              },
            },
            { type: 'loopback' },
          ],
        },
        null,
        2,
      ),
    );
    const config = join(containerdDir, 'config.toml');
    writeFileSync(
      config,
      [
        'version = 2',
        `root = "${join(containerdDir, 'root')}"`,
        `state = "${join(containerdDir, 'state')}"`,
        '[grpc]',
        `  address = "${containerdSocket}"`,
        '[plugins."io.containerd.internal.v1.opt"]',
        `  path = "${join(containerdDir, 'opt')}"`,
        '[plugins."io.containerd.grpc.v1.cri"]',
        `  sandbox_image = "${pauseImage}"`,
        // This VM refuses a negative oom_score_adj: without it every sandbox fails ("can't get final child's PID from pipe").
        '  restrict_oom_score_adj = true',
        '  [plugins."io.containerd.grpc.v1.cri".containerd]',
        `    snapshotter = "${snapshotter}"`,
        '  [plugins."io.containerd.grpc.v1.cri".cni]',
        '    bin_dir = "/usr/lib/cni"',
        `    conf_dir = "${cniConf}"`,
        '',
      ].join('\n'),
    );
    const containerd = launch('containerd', 'containerd', ['--config', config], dir, false);
    nodeProcesses.push(containerd.proc);
    await until(
      'containerd answering',
      containerd,
      () => {
        execFileSync('ctr', ctr('version'), { stdio: 'ignore' });
        return true;
      },
      30_000,
    );
    node.importImages([pauseImage]);
  }

  async function startScheduler() {
    const k = kube.kubeconfig;
    const scheduler = launch(
      'kube-scheduler',
      join(bin, 'kube-scheduler'),
      [
        '--kubeconfig',
        k,
        '--authentication-kubeconfig',
        k,
        '--authorization-kubeconfig',
        k,
        '--leader-elect=false',
        '--secure-port',
        '0',
      ],
      dir,
      false,
    );
    nodeProcesses.push(scheduler.proc);
  }

  async function startKubelet() {
    mkdirSync(kubeletDir, { recursive: true });
    mkdirSync(podLogsDir, { recursive: true });
    const config = join(dir, 'kubelet-config.yaml');
    writeFileSync(
      config,
      JSON.stringify(
        {
          apiVersion: 'kubelet.config.k8s.io/v1beta1',
          kind: 'KubeletConfiguration',
          // Its API only on loopback, open: the apiserver never calls it here (pod logs are read from podLogsDir).
          address: '127.0.0.1',
          port: await freePort(),
          readOnlyPort: 0,
          healthzBindAddress: '127.0.0.1',
          healthzPort: await freePort(),
          authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
          authorization: { mode: 'AlwaysAllow' },
          containerRuntimeEndpoint: `unix://${containerdSocket}`,
          // This machine: cgroup v1, swap allowed, a disk that is mostly full of other things.
          failCgroupV1: false,
          cgroupDriver: 'cgroupfs',
          failSwapOn: false,
          enforceNodeAllocatable: [],
          evictionHard: { 'nodefs.available': '1%', 'imagefs.available': '1%', 'memory.available': '1%' },
          imageGCHighThresholdPercent: 100,
          imageGCLowThresholdPercent: 99,
          localStorageCapacityIsolation: false,
          podLogsDir,
          serializeImagePulls: false,
        },
        null,
        2,
      ),
    );
    const kubelet = launch(
      'kubelet',
      join(bin, 'kubelet'),
      ['--config', config, '--kubeconfig', kube.kubeconfig, '--hostname-override', nodeName, '--root-dir', kubeletDir],
      dir,
      false,
    );
    nodeProcesses.push(kubelet.proc);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kube.kubeconfig);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await until(
      `node ${nodeName} Ready`,
      kubelet,
      async () => {
        const n = await core.readNode({ name: nodeName });
        return n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      },
      120_000,
    );
  }
}
