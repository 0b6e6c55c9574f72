/**
 * The controller process: a Temporal Worker on the `glidepath` task queue (RolloutWorkflow + activities)
 * and the watcher, in one Node process.
 */
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, type LogLevel, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { Watcher, type WatcherOptions } from '../starter/watcher.js';
import { waitsTaskQueue } from '../workflows/task-queues.js';
import type { Timings } from '../workflows/state.js';

export const defaultTaskQueue = 'glidepath';
const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface ControllerOptions {
  kubeConfig: k8s.KubeConfig;
  /** The controller's own Temporal: where RolloutWorkflows run. */
  temporal: { address: string; namespace: string; tls?: ConnectionOptions['tls']; apiKey?: string };
  taskQueue?: string;
  identity?: string;
  timings?: Partial<Timings>;
  /** Kubernetes namespaces to watch (default: all). */
  namespaces?: string[];
  /** How often the watcher sends every resource's spec again (default 10 minutes). */
  resyncIntervalMs?: WatcherOptions['resyncIntervalMs'];
  /** A prebuilt bundle (tests build it once for many controllers). */
  workflowBundle?: WorkflowBundle;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

export interface Controller {
  client: Client;
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
  stop(): Promise<void>;
}

let runtimeInstalled = false;
/**
 * Sets the Temporal SDK's log level for this process (activity retries log at WARN, so the demo and tests
 * use ERROR). Only the first call counts, and it must come before any worker or native connection.
 */
export function installRuntime(level: LogLevel): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({ logger: new DefaultLogger(level) });
}

let bundle: Promise<WorkflowBundle> | undefined;
/** The RolloutWorkflow bundle, built once per process. */
export function rolloutBundle(): Promise<WorkflowBundle> {
  bundle ??= bundleWorkflowCode({ workflowsPath, logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} } });
  return bundle;
}

export async function startController(options: ControllerOptions): Promise<Controller> {
  const { address, namespace, tls, apiKey } = options.temporal;
  const taskQueue = options.taskQueue ?? defaultTaskQueue;
  const identity = options.identity ?? `glidepath@${hostname()}/${process.pid}`;
  const nativeConnection = await NativeConnection.connect({ address, tls, apiKey });
  const connection = await Connection.connect({ address, tls, apiKey });
  const client = new Client({ connection, namespace, identity });
  const { activities, close } = createActivities(options.kubeConfig, identity);
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace,
    taskQueue,
    identity,
    workflowBundle: options.workflowBundle ?? (await rolloutBundle()),
    activities,
  });
  // Long waits (registration, gates, drainage) on a task queue of their own: hundreds of them cannot take the
  // slots that status writes and routing calls need.
  const waits = await Worker.create({
    connection: nativeConnection,
    namespace,
    taskQueue: waitsTaskQueue(taskQueue),
    identity,
    activities,
    maxConcurrentActivityTaskExecutions: 1000,
  });
  const workers = [worker, waits];
  const done = Promise.all(workers.map((w) => w.run())).then(() => undefined);
  const watcher = new Watcher({
    kubeConfig: options.kubeConfig,
    client,
    taskQueue,
    timings: options.timings,
    namespaces: options.namespaces,
    resyncIntervalMs: options.resyncIntervalMs,
    log: options.log,
  });
  await watcher.start();
  let stopping: Promise<void> | undefined;
  return {
    client,
    done,
    stop() {
      stopping ??= (async () => {
        await watcher.stop();
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
        await done.catch(() => {});
        await close();
        await connection.close();
        await nativeConnection.close();
      })();
      return stopping;
    },
  };
}
