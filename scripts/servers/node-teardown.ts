/**
 * Tearing the e2e node down: its pods, containerd's containers (their shims outlive it), kubelet's mounts, and what
 * a killed run left behind.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Mount points at or below `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4]?.replace(/\\040/g, ' '))
    .filter((p): p is string => !!p && (p === dir || p.startsWith(`${dir}/`)));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/** Unmounts everything at or below `dir` (lazily what is busy). */
export function unmountUnder(dir: string): void {
  for (const point of mountsUnder(dir)) {
    try {
      execFileSync('umount', [point], { stdio: 'ignore' });
    } catch {
      execFileSync('umount', ['-l', point], { stdio: 'ignore' }); // busy: detach it now, freed when unused
    }
  }
}

/**
 * What an earlier run in `dir` left behind when it was killed: its servers (every process whose output goes to a
 * log in `dir`: the Temporal dev server too), containerd's shims with their containers, and kubelet's mounts.
 * Done before the folder is emptied, which the mounts would refuse.
 */
export function cleanUpAfterKilledRun(dir: string): void {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/1`).startsWith(`${dir}/`)) process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone, or not ours to read
    }
  }
  // containerd's shims outlive it, and so would their containers: for each shim of this folder's containerd,
  // its children (each container's first process: killing it ends the container's PID namespace), then itself.
  const pids = (...pgrepArgs: string[]) => {
    try {
      return execFileSync('pgrep', pgrepArgs, { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
    } catch {
      return []; // none
    }
  };
  for (const shim of pids('-f', `containerd-shim.*-address ${join(dir, 'containerd', 'containerd.sock')}`)) {
    for (const pid of [...pids('-P', String(shim)), shim]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  }
  if (existsSync(dir)) unmountUnder(dir);
}

/** Deletes every pod and waits (up to a minute) until kubelet has stopped them all and they are gone. */
export async function deleteAllPods(kubeconfig: string): Promise<void> {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    let pods: k8s.V1Pod[];
    try {
      pods = (await core.listPodForAllNamespaces()).items;
    } catch {
      return; // no apiserver: nothing to ask kubelet through
    }
    if (pods.length === 0) return;
    for (const p of pods) {
      if (p.metadata?.deletionTimestamp) continue;
      await core
        .deleteNamespacedPod({ name: p.metadata!.name!, namespace: p.metadata!.namespace!, gracePeriodSeconds: 1 })
        .catch(() => {});
    }
    await sleep(500);
  }
}

/** Kills whatever containers containerd still runs (kubelet gone before its pods): their shims outlive containerd. */
export async function killContainers(ctr: (...args: string[]) => string[]): Promise<void> {
  const run = (...args: string[]) =>
    execFileSync('ctr', ctr(...args), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  let tasks: string[];
  try {
    tasks = run('tasks', 'ls', '-q').split('\n').filter(Boolean);
  } catch {
    return; // containerd not answering: nothing to ask
  }
  for (const id of tasks) {
    try {
      run('tasks', 'kill', '-s', 'SIGKILL', id);
    } catch {
      // already stopped
    }
    for (let i = 0; i < 50; i++) {
      try {
        run('tasks', 'delete', id); // refused until the task has exited
        break;
      } catch {
        await sleep(100);
      }
    }
  }
}
