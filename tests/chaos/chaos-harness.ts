/**
 * What the chaos tests need beside tests/harness/: a seeded PRNG, the controller as a separate process (the
 * one `npm start` runs) that can be SIGKILLed, a watch of every Deployment uid ever seen, the routing changes a
 * rollout's workflow chain completed (read off the histories of all its runs), and relaunching a server process
 * with the command line it was started with.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { Labels } from '../../kube/versioned-deployment.js';
import { localActivityType } from '../../scripts/history.js';
import { portOpen, type ServerProcess } from '../../scripts/servers/processes.js';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Where the chaos tests keep their logs (controller output, own servers). */
export function chaosDir(name: string): string {
  const dir = join(root, '.dev/chaos', name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The seed of this run: `CHAOS_SEED` to reproduce one, else a fresh one. */
export function chaosSeed(): number {
  const given = process.env.CHAOS_SEED;
  return given ? Number(given) : Math.floor(Math.random() * 2 ** 31);
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Controllers started side by side (and beside `npm start`) must not all bind :8080 and :8081. */
const noServedPorts = ['--metrics-bind-address=0', '--health-probe-bind-address=0'];

export interface ControllerProcess {
  child: ChildProcess;
  exited: Promise<void>;
}

/**
 * Starts `worker/main.ts` (what `npm start` runs) for one namespace; resolves once it is watching. Its output is
 * appended to `logFile`. `env` overrides the environment (KUBECONFIG, TEMPORAL_ADDRESS of a test's own servers).
 */
export function startControllerProcess(opts: {
  namespace: string;
  logFile: string;
  env?: Record<string, string>;
}): Promise<ControllerProcess> {
  appendFileSync(opts.logFile, `\n==== ${new Date().toISOString()} controller start\n`);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'worker/main.ts',
      '--namespace',
      opts.namespace,
      '--task-queue',
      `glidepath-${opts.namespace}`,
      ...noServedPorts,
    ],
    {
      cwd: root,
      env: {
        ...process.env,
        NODE_OPTIONS: '',
        GLIDEPATH_DRAIN_POLL_MAX: '1000',
        GLIDEPATH_LOG_LEVEL: 'WARN',
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let output = '';
  let running = false;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`controller did not start within 180 s; read ${opts.logFile}`)),
      180_000,
    );
    const onData = (chunk: Buffer) => {
      appendFileSync(opts.logFile, chunk);
      if (running) return;
      output += chunk.toString();
      if (output.includes('glidepath controller running')) {
        running = true;
        clearTimeout(timer);
        resolve({ child, exited });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`controller exited (${code ?? signal}) before it ran; read ${opts.logFile}`));
    });
  });
}

/** SIGKILL, then waits until the process is gone. */
export async function killController(c: ControllerProcess | undefined): Promise<void> {
  if (!c || c.child.exitCode !== null || c.child.signalCode !== null) return;
  c.child.kill('SIGKILL');
  await c.exited;
}

/**
 * Every Deployment of a namespace as the watch reports it: the uids seen per (resource, build), and the builds
 * whose Deployment was seen at 0 replicas (scaled down) and deleted. Restarts its watch after an error (an
 * apiserver that went away).
 */
export class DeploymentWatch {
  /** `<resource>/<build>` → every uid seen. */
  readonly uids = new Map<string, Set<string>>();
  readonly scaledToZero = new Set<string>();
  readonly deleted = new Set<string>();
  private readonly informer: k8s.Informer<k8s.V1Deployment>;
  private stopped = false;

  constructor(kc: k8s.KubeConfig, namespace: string) {
    const apps = kc.makeApiClient(k8s.AppsV1Api);
    this.informer = k8s.makeInformer(kc, `/apis/apps/v1/namespaces/${namespace}/deployments`, () =>
      apps.listNamespacedDeployment({ namespace }),
    );
    const seen = (d: k8s.V1Deployment, deleted: boolean) => {
      const key = `${d.metadata?.labels?.[Labels.workerDeployment] ?? '?'}/${d.metadata?.labels?.[Labels.buildId] ?? '?'}`;
      const uids = this.uids.get(key) ?? new Set<string>();
      uids.add(d.metadata!.uid!);
      this.uids.set(key, uids);
      if (d.spec?.replicas === 0) this.scaledToZero.add(key);
      if (deleted) this.deleted.add(key);
    };
    this.informer.on('add', (d) => seen(d, false));
    this.informer.on('update', (d) => seen(d, false));
    this.informer.on('delete', (d) => seen(d, true));
    this.informer.on('error', () => {
      if (!this.stopped) setTimeout(() => void this.informer.start().catch(() => {}), 500);
    });
  }

  start(): Promise<void> {
    return this.informer.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }
}

function decode(payload: { data?: Uint8Array | null } | null | undefined): unknown {
  if (!payload?.data) return undefined;
  return JSON.parse(Buffer.from(payload.data).toString('utf8'));
}

export interface ChainReport {
  runs: number;
  /** Percentages of `setRamping` for the build, in the order their activities completed, across all runs. */
  rampsCompleted: number[];
  /**
   * How many `setRamping` activities for the build were scheduled (a retried activity counts once); a local one
   * is in the history only once it completed, and counts then.
   */
  rampsScheduled: number;
  /** Activities and workflow tasks that timed out (what a killed controller costs: each waits out its timeout). */
  activityTimeouts: Record<string, number>;
  workflowTaskTimeouts: number;
  /** WorkflowTaskFailed events, with their cause. */
  taskFailures: string[];
  /** Events of every run, for the report of a failure. */
  summary: string[];
}

/**
 * Reads every run of the workflow chain `workflowId` (listed by WorkflowId, oldest first; the chain checked:
 * each run but the last continued as new into the next) and what it did with `buildId`'s ramp.
 */
export async function chainReport(client: Client, workflowId: string, buildId: string): Promise<ChainReport> {
  const runs: { runId: string; start: number }[] = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = "${workflowId}"` }))
    runs.push({ runId: w.runId, start: w.startTime.getTime() });
  runs.sort((a, b) => a.start - b.start);
  const report: ChainReport = {
    runs: runs.length,
    rampsCompleted: [],
    rampsScheduled: 0,
    activityTimeouts: {},
    workflowTaskTimeouts: 0,
    taskFailures: [],
    summary: [],
  };
  for (const [i, run] of runs.entries()) {
    const history = await client.workflow.getHandle(workflowId, run.runId).fetchHistory();
    const events = history.events ?? [];
    const ramps = new Map<string, number>();
    const activityTypes = new Map<string, string>();
    for (const e of events) {
      const id = String(e.eventId);
      const scheduled = e.activityTaskScheduledEventAttributes;
      if (scheduled?.activityType?.name) activityTypes.set(id, scheduled.activityType.name);
      const timedOut = e.activityTaskTimedOutEventAttributes;
      if (timedOut) {
        const type = activityTypes.get(String(timedOut.scheduledEventId)) ?? '?';
        report.activityTimeouts[type] = (report.activityTimeouts[type] ?? 0) + 1;
      }
      if (e.workflowTaskTimedOutEventAttributes) report.workflowTaskTimeouts++;
      if (scheduled?.activityType?.name === 'setRamping') {
        const args = scheduled.input?.payloads ?? [];
        if (decode(args[1]) === buildId) {
          ramps.set(id, Number(decode(args[2])));
          report.rampsScheduled++;
          report.summary.push(`run ${i} event ${id}: setRamping ${decode(args[2])}% scheduled`);
        }
      }
      // A local ramp's arguments are not in the history: its summary says them ("ramp <build> to <n>%").
      const made = localActivityType(e) === 'setRamping' && !e.markerRecordedEventAttributes?.failure;
      const local = made ? /^ramp (\S+) to (\d+)%$/.exec(String(decode(e.userMetadata?.summary))) : null;
      if (local?.[1] === buildId) {
        report.rampsCompleted.push(Number(local[2]));
        report.rampsScheduled++;
        report.summary.push(`run ${i} event ${id}: setRamping ${local[2]}% completed inside its workflow task`);
      }
      const completed = e.activityTaskCompletedEventAttributes;
      if (completed) {
        const percentage = ramps.get(String(completed.scheduledEventId));
        if (percentage !== undefined) {
          report.rampsCompleted.push(percentage);
          report.summary.push(`run ${i} event ${id}: setRamping ${percentage}% completed`);
        }
      }
      const failed = e.activityTaskFailedEventAttributes ?? e.activityTaskTimedOutEventAttributes;
      if (failed && ramps.has(String(failed.scheduledEventId)))
        report.summary.push(
          `run ${i} event ${id}: setRamping ${ramps.get(String(failed.scheduledEventId))}% failed or timed out`,
        );
      const taskFailed = e.workflowTaskFailedEventAttributes;
      if (taskFailed)
        report.taskFailures.push(
          `run ${i} event ${id}: cause ${proto.temporal.api.enums.v1.WorkflowTaskFailedCause[taskFailed.cause ?? 0]}: ${taskFailed.failure?.message ?? ''}`,
        );
    }
    const last = events.at(-1);
    const continued = last?.workflowExecutionContinuedAsNewEventAttributes;
    if (i < runs.length - 1 && continued?.newExecutionRunId !== runs[i + 1]!.runId) {
      throw new Error(
        `the chain of ${workflowId} is not complete yet: run ${run.runId} did not continue into ${runs[i + 1]!.runId}`,
      );
    }
  }
  return report;
}

/** A server process started again with the command line it ran with (read from /proc before it is stopped). */
export interface Relaunchable {
  proc: ServerProcess;
  argv: string[];
}

/** The command line of a running server process, so it can be relaunched the same way after it is stopped. */
export function commandLineOf(proc: ServerProcess): Relaunchable {
  const argv = readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8')
    .split('\0')
    .filter((a, i, all) => a !== '' || i < all.length - 1);
  return { proc, argv };
}

/** Starts the same binary with the same arguments, its output appended to the same log; returns the new process. */
export function relaunch(r: Relaunchable): ServerProcess {
  const out = openSync(r.proc.logFile, 'a');
  const [bin, ...args] = r.argv;
  const child = spawn(bin!, args, { stdio: ['ignore', out, out] });
  return { name: r.proc.name, pid: child.pid!, logFile: r.proc.logFile };
}

/** Waits until nothing listens on the port any more. */
export async function portClosed(port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (await portOpen(port)) {
    if (Date.now() > deadline) throw new Error(`port ${port} still open after ${timeoutMs / 1000}s`);
    await sleep(100);
  }
}
