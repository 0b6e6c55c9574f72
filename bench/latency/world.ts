/**
 * What the latency benchmark runs against: a Temporal dev server and a kube-apiserver on free loopback ports, the
 * controller in this process, simulated pods in a process of their own, and the resources it rolls out.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { group, version } from '../../api/common.js';
import { benchResource } from '../resource.js';
import { createRolloutNamespace } from '../../scripts/servers/rollout-namespace.js';
import { startController, type Controller } from '../../worker/controller.js';
import { installCrds } from '../../scripts/servers/install-crds.js';
import { startKube, startTemporal, stopProcesses, type ServerProcess } from '../../scripts/servers/servers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

export const namespace = 'bench';

export interface World {
  serverAddress: string;
  kc: k8s.KubeConfig;
  custom: k8s.CustomObjectsApi;
  apps: k8s.AppsV1Api;
  core: k8s.CoreV1Api;
  controller: Controller;
  connection: Connection;
  client: Client;
  /** What the watcher did and when (BENCH_VERBOSE prints a new resource's, beside its apply). */
  watcherLines: { at: number; message: string; fields?: Record<string, unknown> }[];
  stop(): Promise<void>;
}

/** Starts the servers, the pods and the controller; stops what it started if one of them fails. */
export async function startWorld(): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'glidepath-bench-'));
  const servers: ServerProcess[] = [];
  let pods: ChildProcess | undefined;
  let controller: Controller | undefined;
  let connection: Connection | undefined;
  const stop = async () => {
    await controller?.stop();
    pods?.kill('SIGTERM');
    await connection?.close();
    await stopProcesses(servers);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const server = await startTemporal({ dir });
    servers.push(server.process);
    const kube = await startKube({ dir });
    servers.unshift(...kube.processes); // stop order: kube-controller-manager, apiserver, etcd, Temporal
    installCrds(kube.kubeconfig, kube.kubectl);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(kube.kubeconfig);
    await createRolloutNamespace(kc, namespace, server.address);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    // Their own process, as real pods: their workers must not share the controller's CPU time slice.
    pods = spawn(process.execPath, ['--import', 'tsx', join(root, 'simulator/main.ts')], {
      env: { ...process.env, KUBECONFIG: kube.kubeconfig, NODE_OPTIONS: '' },
      stdio: 'ignore',
    });
    const watcherLines: World['watcherLines'] = [];
    controller = await startController({
      kubeConfig: kc,
      temporal: { address: server.address, namespace: 'default' },
      namespaces: [namespace],
      timings: { drainPollMaxMs: 1000 },
      log: (message, fields) => void watcherLines.push({ at: performance.now(), message, fields }),
      ...(process.env.BENCH_TEMPORAL_QPS ? { temporalQps: Number(process.env.BENCH_TEMPORAL_QPS) } : {}),
    });
    connection = await Connection.connect({ address: server.address });
    return {
      serverAddress: server.address,
      kc,
      custom,
      apps: kc.makeApiClient(k8s.AppsV1Api),
      core,
      controller,
      connection,
      client: new Client({ connection }),
      watcherLines,
      stop,
    };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

/** The resource `name` at `marker` (v1, v2): a Progressive rollout with two 1 s steps. */
export const twd = (name: string, marker: string) =>
  benchResource({
    name,
    namespace,
    marker,
    rollout: {
      strategy: 'Progressive',
      steps: [
        { rampPercentage: 20, pauseDuration: '1s' },
        { rampPercentage: 60, pauseDuration: '1s' },
      ],
    },
    temporalNamespace: 'default',
    taskQueuePrefix: 'bench',
  });

export interface Status {
  phase?: string;
  currentVersion?: { buildID: string };
  deprecatedVersions?: unknown[];
}

export const status = async (world: World, name: string) =>
  (
    (await world.custom.getNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'temporalworkerdeployments',
      name,
    })) as { status?: Status }
  ).status;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `probe` every `everyMs` until it answers (a refusal is read again), for at most `timeoutMs`. */
export async function until<T>(probe: () => Promise<T | undefined>, everyMs = 2, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s`);
    await sleep(everyMs);
  }
}
