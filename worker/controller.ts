/**
 * The controller process: a Temporal Worker on its installation's task queue (RolloutWorkflow + activities)
 * and the watcher, in one Node process.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type * as k8s from '@kubernetes/client-node';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import type { Logger } from '@temporalio/common';
import {
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  bundleWorkflowCode,
  type LogLevel,
  type WorkerOptions,
  type WorkflowBundle,
} from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { installationManagerIdentity, installationTaskQueue } from '../api/names.js';
import { controllerNamespace, keepInstallation, resolveInstallation } from './installation.js';
import { Watcher, type WatcherOptions } from '../starter/watcher.js';
import { temporalLimits } from './temporal-limits.js';
import {
  activityErrorCounter,
  initializeCounters,
  prometheusMetrics,
  recordResourceGauges,
  temporalRequestCounter,
} from './metrics.js';
import { searchAttributeKeys } from '../workflows/search-attributes.js';
import { waitsTaskQueue } from '../workflows/task-queues.js';
import type { Timings } from '../api/timings.js';

export const defaultMaxCachedWorkflows = 100;
/** The Temporal calls a second a controller process makes, by default (rollouts past it wait their turn). */
export const defaultTemporalQps = 50;
/**
 * Pollers scale with the work the server reports, from one per queue when idle (a fixed ten per queue would cost
 * hundreds of empty long polls an hour) to four: the slots, not the pollers, bound the tasks a second.
 */
const autoscaling: NonNullable<WorkerOptions['workflowTaskPollerBehavior']> = {
  type: 'autoscaling',
  minimum: 1,
  initial: 2,
  maximum: 4,
};
const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface ControllerOptions {
  kubeConfig: k8s.KubeConfig;
  /** The controller's own Temporal: where RolloutWorkflows run. */
  temporal: { address: string; namespace: string; tls?: ConnectionOptions['tls']; apiKey?: string };
  /**
   * The installation ID (default: the one the cluster gives, see ./installation.ts, whose ConfigMap the controller
   * then keeps while it runs: keepInstallation).
   */
  installation?: string;
  /** `installation` is the one the cluster gives (worker/main.ts resolved it first): keep its ConfigMap all the same. */
  installationFromConfigMap?: boolean;
  /** Default `glidepath-<installation>`. */
  taskQueue?: string;
  identity?: string;
  /**
   * The worker deployments' manager identity Glidepath claims and makes its routing calls with: the same for every
   * process and restart of one installation (default `glidepath/<installation>`).
   */
  managerIdentity?: string;
  timings?: Partial<Timings>;
  /** Kubernetes namespaces to watch (default: all). */
  namespaces?: string[];
  /** How often the watcher wakes every resource's workflow again (default 1 hour). */
  resyncIntervalMs?: WatcherOptions['resyncIntervalMs'];
  signalDeployments?: WatcherOptions['signalDeployments'];
  /**
   * Workflows kept in memory between their tasks (default 100): more costs memory, fewer costs CPU (an evicted
   * rollout replays its history at its next task). See docs/scaling.md, "Tuning".
   */
  maxCachedWorkflows?: number;
  /**
   * Temporal calls a second the process makes (the watcher's signals, the activities' describes and routing calls,
   * heartbeats and its workers' task polls and completions; default 50), one bucket pacing the SDK's own hooks
   * (./temporal-limits.ts).
   */
  temporalQps?: number;
  /**
   * Activities a second the server hands out on the controller's task queue, for all its replicas together
   * (Temporal's `maxTaskQueueActivitiesPerSecond`); default: unbounded.
   */
  maxActivitiesPerSecond?: number;
  /** A prebuilt bundle (tests build it once for many controllers). */
  workflowBundle?: WorkflowBundle;
  log?: (message: string, fields?: Record<string, unknown>) => void;
}

export interface Controller {
  client: Client;
  /** The installation ID this controller runs as. */
  installation: string;
  taskQueue: string;
  /** For the probes: `true`, or why the process is not live / not ready. */
  health(): { live: true | string; ready: true | string };
  /** Resolves when the worker has stopped. */
  done: Promise<void>;
  stop(): Promise<void>;
}

let runtimeInstalled = false;
/**
 * Sets the Temporal SDK's logging for this process (activity retries log at WARN, so the demo and tests use
 * ERROR) and, with `metrics`, serves `/metrics` there. Only the first call counts, and it must come before any
 * worker or native connection.
 */
export function installRuntime(
  level: LogLevel,
  opts: { logger?: Logger; metrics?: { host: string; port: number } } = {},
): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  Runtime.install({
    logger: opts.logger ?? new DefaultLogger(level),
    ...(opts.metrics ? { telemetryOptions: { metrics: prometheusMetrics(opts.metrics) } } : {}),
  });
}

/**
 * The RolloutWorkflow bundle for the controller process. A prebuilt one when there is one: the file named by
 * `GLIDEPATH_WORKFLOW_BUNDLE`, or `workflow-bundle.js` at the compiled code's root (`npm run build` writes
 * `dist/workflow-bundle.js`; the image has no webpack run at start and no tsx). Otherwise built by a child process
 * (worker/bundle.ts): the controller's own memory then holds the bundle's code, not webpack's heap.
 */
export async function rolloutBundleApart(): Promise<WorkflowBundle> {
  const named = process.env.GLIDEPATH_WORKFLOW_BUNDLE;
  // A named bundle that is missing is an error (readFileSync throws), not a reason to build another.
  if (named) return { code: readFileSync(named, 'utf8') };
  // Compiled code only: beside the TypeScript sources a bundle file would be a stale copy of them.
  const compiled = import.meta.url.endsWith('.js')
    ? fileURLToPath(new URL('../workflow-bundle.js', import.meta.url))
    : undefined;
  if (compiled && existsSync(compiled)) return { code: readFileSync(compiled, 'utf8') };
  const dir = mkdtempSync(join(tmpdir(), 'glidepath-bundle-'));
  const out = join(dir, 'workflows.js');
  try {
    await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('./bundle.ts', import.meta.url)), out],
      { env: { ...process.env, NODE_OPTIONS: '' } },
    );
    return { code: readFileSync(out, 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let bundle: Promise<WorkflowBundle> | undefined;
/** The RolloutWorkflow bundle, built once per process. */
export function rolloutBundle(): Promise<WorkflowBundle> {
  bundle ??= bundleWorkflowCode({
    workflowsPath,
    logger: { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} },
  }).then((b) => ({ ...b, code: latin1Source(b.code) }));
  return bundle;
}

/**
 * JavaScript source with its characters beyond Latin-1 (→, ≤, — in comments and messages) as `\u` escapes: V8 keeps
 * a string holding any such character at two bytes a character, and the bundle's source is kept by the main thread
 * and by the workflow thread (2.4 MB each instead of 4.8 MB). In strings, templates and regular expressions an
 * escape is the same character; in comments it is only text.
 */
export function latin1Source(code: string): string {
  return code.replace(/[\u0100-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export async function startController(options: ControllerOptions): Promise<Controller> {
  const { address, namespace, tls, apiKey } = options.temporal;
  const installation = await resolveInstallation(options.kubeConfig, options.namespaces, options.installation);
  const taskQueue = options.taskQueue ?? installationTaskQueue(installation);
  const identity = options.identity ?? `glidepath@${hostname()}/${process.pid}`;
  const limits = temporalLimits(options.temporalQps ?? defaultTemporalQps);
  const interceptors = [...limits.interceptors, temporalRequestCounter()];
  const nativeConnection = await NativeConnection.connect({ address, tls, apiKey });
  const connection = await Connection.connect({
    address,
    tls,
    apiKey,
    interceptors: [...limits.watcherInterceptors, temporalRequestCounter()],
  });
  const client = new Client({ connection, namespace, identity });
  const log = options.log ?? (() => {});
  const managerIdentity = options.managerIdentity ?? installationManagerIdentity(installation);
  // The workflows take their timings from this controller, in their read of the resource. Upserting an unregistered
  // search attribute fails every workflow task: without them, rollouts run without.
  const timings: Partial<Timings> = { ...options.timings };
  if (!(await searchAttributesRegistered(connection, namespace, log))) timings.searchAttributes = false;
  // Checked again each minute while they are missing (or the check failed): once they are there, every workflow
  // sets them from its next read of its resource (the reads hand it these timings, this very object).
  const searchAttributesChecked = setInterval(() => {
    if (timings.searchAttributes !== false) return;
    void searchAttributesRegistered(connection, namespace, () => {}).then((registered) => {
      if (!registered) return;
      delete timings.searchAttributes;
      log(`the search attributes are registered in namespace ${namespace}: rollouts set them from their next read`);
    });
  }, 60_000).unref();
  const { activities, close } = createActivities(options.kubeConfig, managerIdentity, {
    temporalInterceptors: interceptors,
    timings,
    installation,
    ownTemporal: { hostPort: options.temporal.address, namespace },
  });
  const polling = { workflowTaskPollerBehavior: autoscaling, activityTaskPollerBehavior: autoscaling };
  // The server's limit on each task queue, for every replica of the installation together.
  const queueLimit = options.maxActivitiesPerSecond
    ? { maxTaskQueueActivitiesPerSecond: options.maxActivitiesPerSecond }
    : {};
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace,
    taskQueue,
    identity,
    workflowBundle: options.workflowBundle ?? (await rolloutBundle()),
    activities,
    maxCachedWorkflows: options.maxCachedWorkflows ?? defaultMaxCachedWorkflows,
    ...limits.main,
    ...queueLimit,
    interceptors: { activity: [activityErrorCounter()] },
    ...polling,
  });
  // Long waits (registration, gates, drainage) on a task queue of their own: hundreds of them cannot take the
  // slots that status writes and routing calls need.
  const waits = await Worker.create({
    connection: nativeConnection,
    namespace,
    taskQueue: waitsTaskQueue(taskQueue),
    identity,
    activities,
    ...limits.waits,
    ...queueLimit,
    interceptors: { activity: [activityErrorCounter(), limits.waitsCalls] },
    ...polling,
  });
  const workers = [worker, waits];
  const done = Promise.all(workers.map((w) => w.run())).then(() => undefined);
  const watcher = new Watcher({
    kubeConfig: options.kubeConfig,
    client,
    taskQueue,
    installation,
    namespaces: options.namespaces,
    resyncIntervalMs: options.resyncIntervalMs,
    signalDeployments: options.signalDeployments,
    log: options.log,
    onResourceSeen: recordResourceGauges,
  });
  await watcher.start();
  // An ID from the ConfigMap: a deleted ConfigMap, or one re-created without data.id, gets it back.
  const installationKept =
    options.installation === undefined || options.installationFromConfigMap
      ? keepInstallation(
          options.kubeConfig,
          controllerNamespace(options.kubeConfig, options.namespaces),
          installation,
          log,
        )
      : undefined;
  let stopping: Promise<void> | undefined;
  initializeCounters();
  const failed = () => workers.find((w) => w.getState() === 'FAILED');
  return {
    client,
    installation,
    taskQueue,
    done,
    health() {
      const broken = failed();
      const live = broken ? `the worker of task queue ${broken.options.taskQueue} failed` : true;
      const notRunning = workers.find((w) => w.getState() !== 'RUNNING');
      const watching = watcher.problems();
      const ready =
        live !== true
          ? live
          : stopping
            ? 'stopping'
            : notRunning
              ? `the worker of task queue ${notRunning.options.taskQueue} is ${notRunning.getState()}`
              : (watching ?? true);
      return { live, ready };
    },
    stop() {
      stopping ??= (async () => {
        clearInterval(searchAttributesChecked);
        await installationKept?.stop();
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

/**
 * Whether the controller's Temporal namespace has Glidepath's search attributes; says how to register them if not
 * (a production server does not have them; the dev server started by `npm run servers:up` does).
 */
async function searchAttributesRegistered(
  connection: Connection,
  namespace: string,
  log: NonNullable<ControllerOptions['log']>,
): Promise<boolean> {
  let registered: Record<string, unknown>;
  try {
    registered = (await connection.operatorService.listSearchAttributes({ namespace })).customAttributes ?? {};
  } catch (err) {
    log(
      `could not list the search attributes of namespace ${namespace} (${(err as Error).message}); rollouts run without them`,
    );
    return false;
  }
  const missing = searchAttributeKeys.filter((k) => !(k.name in registered));
  if (missing.length === 0) return true;
  log(
    `the search attributes ${missing.map((k) => k.name).join(', ')} are not registered in namespace ${namespace}: rollouts run without them ` +
      `(no GlidepathPhase in the Web UI and \`npm run glidepath -- list\`). Register them (checked again each minute):\n` +
      missing
        .map(
          (k) => `  temporal operator search-attribute create --namespace ${namespace} --name ${k.name} --type Keyword`,
        )
        .join('\n'),
  );
  return false;
}
