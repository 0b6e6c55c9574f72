/**
 * `npm run bench:scale -- N [--controllers K] [--idle SECONDS]`: N resources rolled out at once by K controller
 * processes with their default settings, against real servers started on free loopback ports. Prints figures;
 * asserts nothing (targets are shown beside them).
 *
 *   phase 1   N TemporalWorkerDeployments created (replicas 1, v1 AllAtOnce) → each Ready with a current version
 *   phase 2   all patched to v2 Progressive (10% 5s, 50% 5s) → each has v2 current; then until its old version is gone
 *   idle      with --idle S: once nothing moves, what the controllers cost over S seconds, per resource-hour
 *
 * The pods are light (simulator --light: one bare versioned poller per pod), in a process of their own; each
 * controller is a process of its own (`worker/main.ts`), so its RSS and CPU are its own. Requests are counted by
 * the servers themselves (scripts/servers/metrics.ts): the dev server's `service_requests` and kube-apiserver's
 * `apiserver_request_total`, scraped every second.
 *
 * Options: --timeout S (each phase; default 600 + N), --gone-timeout S (old versions gone; default 180),
 * --keep (keep the servers' and processes' logs), --controller-flag=FLAG (repeatable: passed to every controller,
 * e.g. --controller-flag=--max-cached-workflows=20; the default settings are what the figures are about),
 * --server-flag=KEY=VALUE (repeatable: the dev server's dynamic config, e.g. system.enableActivityEagerExecution=true),
 * --compiled (run the controllers as the image does: `node dist/worker/main.js` after `npm run build`). Either way
 * the controllers start with worker/process-settings.ts, as the image and `npm start` do; --node-option=OPTION
 * (repeatable) replaces its Node options, e.g. --node-option=--max-old-space-size=128 (--node-option= for none);
 * --controller-env=KEY=VALUE (repeatable) adds to or replaces its environment.
 * --write-rate R: the benchmark's creates (phase 1) and patches (phase 2) at most R a second, as a large
 * installation's own pipeline would apply them (default: all at once, 20 writes in flight). --without-own-count:
 * the controllers' /metrics are not read each second (no "by the controller's own count" figures), to see what
 * those reads cost the controller.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, stripVTControlCharacters } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { GrpcStatus } from '../activities/errors.js';
import { group, version } from '../api/common.js';
import { controllerEnvironment, controllerNodeOptions } from '../worker/process-settings.js';
import { searchAttributeKeys } from '../workflows/search-attributes.js';
import {
  delta,
  kubeRequestsMetric,
  kubeWriteVerbs,
  scrapeKube,
  scrapeTemporal,
  scrapeTemporalMetrics,
  sumBy,
  temporalRequestsMetric,
  type Labels,
  type Sample,
} from '../scripts/servers/metrics.js';
import { freePort, startKube, startTemporal, stopProcesses, type ServerProcess } from '../scripts/servers/servers.js';

const { temporal: temporalProto } = proto; // a CommonJS module: no named exports under ESM

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    controllers: { type: 'string' },
    idle: { type: 'string' },
    timeout: { type: 'string' },
    'gone-timeout': { type: 'string' },
    keep: { type: 'boolean' },
    'controller-flag': { type: 'string', multiple: true },
    'server-flag': { type: 'string', multiple: true },
    compiled: { type: 'boolean' },
    'node-option': { type: 'string', multiple: true },
    'controller-env': { type: 'string', multiple: true },
    'write-rate': { type: 'string' },
    'without-own-count': { type: 'boolean' },
  },
});
const resources = Number(positionals[0] ?? 100);
const controllerCount = Number(values.controllers ?? 1);
const idleSeconds = Number(values.idle ?? 0);
const phaseTimeoutMs = Number(values.timeout ?? 600 + resources) * 1000;
const goneTimeoutMs = Number(values['gone-timeout'] ?? 180) * 1000;
const writeRate = values['write-rate'] === undefined ? undefined : Number(values['write-rate']);
if (writeRate !== undefined && !(writeRate > 0)) {
  console.error(`--write-rate: a number of writes a second above 0, not ${values['write-rate']}`);
  process.exit(2);
}
if (
  ![resources, controllerCount, idleSeconds, phaseTimeoutMs, goneTimeoutMs].every(
    (x) => Number.isInteger(x) && x >= 0,
  ) ||
  resources < 1 ||
  controllerCount < 1
) {
  console.error(
    'usage: npm run bench:scale -- N [--controllers K] [--idle SECONDS] [--timeout SECONDS] [--gone-timeout SECONDS] [--keep] [--controller-flag=FLAG]... [--server-flag=KEY=VALUE]... [--compiled] [--node-option=OPTION]... [--controller-env=KEY=VALUE]... [--write-rate R]',
  );
  process.exit(2);
}

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (values.compiled && !existsSync(join(root, 'dist/worker/main.js'))) {
  console.error('--compiled: dist/worker/main.js is missing; run `npm run build` first');
  process.exit(2);
}
const k8sNamespace = 'bench';
/** The controllers' own Temporal namespace: every request in it is theirs (less the server's own background). */
const controllerNamespace = 'glidepath';
/** An empty namespace: the server's own per-namespace background requests, subtracted from `controllerNamespace`'s. */
const baselineNamespace = 'glidepath-baseline';
/** Where the pods' worker deployments live. */
const podNamespace = 'default';
const steps = [
  { rampPercentage: 10, pauseDuration: '5s' },
  { rampPercentage: 50, pauseDuration: '5s' },
];
const writeConcurrency = 20;

// ---- processes: everything started here is stopped on every way out ----------------------------------------

const dir = mkdtempSync(join(tmpdir(), 'glidepath-bench-scale-'));
const children: ChildProcess[] = [];
let servers: ServerProcess[] = [];
let cleaning: Promise<void> | undefined;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function cleanup(keepLogs: boolean): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all(children.map((c) => stopChild(c)));
    await stopProcesses(servers);
    if (keepLogs) console.log(`logs kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  })();
  return cleaning;
}

async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  if (await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])) return;
  child.kill('SIGKILL');
  await exited;
}

// Last resort when the process ends without cleanup (an uncaught error): no child outlives it.
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const s of servers) {
    try {
      process.kill(s.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping`);
    void cleanup(true).finally(() => process.exit(130));
  });
}

function spawnNode(
  name: string,
  script: string,
  args: string[],
  env: Record<string, string>,
  nodeOptions: string[] = [],
): ChildProcess {
  const log = openSync(join(dir, `${name}.log`), 'a');
  // A compiled script (dist/…/*.js) runs as it is; TypeScript through tsx.
  const command = [
    ...nodeOptions,
    ...(script.endsWith('.js') ? [join(root, script), ...args] : ['--import', 'tsx', join(root, script), ...args]),
  ];
  const child = spawn(process.execPath, command, {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '', ...env },
    stdio: ['ignore', log, log],
  });
  children.push(child);
  return child;
}

// ---- helpers --------------------------------------------------------------------------------------------------

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? ` (${String(last)})` : ''}`);
    await sleep(everyMs);
  }
}

/** Runs `fn` over `items`, `limit` at a time, and with --write-rate starting at most that many a second. */
async function inBatches<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const start = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        if (writeRate) await sleep(start + (i * 1000) / writeRate - Date.now());
        await fn(items[i]!);
      }
    }),
  );
}

const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]! : NaN;
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

/** Where controller `i`'s memory probe (bench/memory-probe.mjs) writes its samples. */
const memoryProbeFile = (i: number) => join(dir, `controller-${i}.memory.jsonl`);

interface MemorySample {
  at: number;
  rssKb: number;
  main: { heapUsedKb: number; heapTotalKb: number; externalKb: number };
  workers: { title: string; heapUsedKb: number; heapTotalKb: number; externalKb: number }[];
}

/** Controller 0's memory probe sample with the highest RSS between `from` and `to` (see bench/memory-probe.mjs). */
function probePeak(from: number, to: number): MemorySample | undefined {
  let samples: MemorySample[];
  try {
    samples = readFileSync(memoryProbeFile(0), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as MemorySample);
  } catch {
    return undefined;
  }
  return samples
    .filter((s) => s.at >= from && s.at <= to)
    .reduce<MemorySample | undefined>((a, s) => (!a || s.rssKb > a.rssKb ? s : a), undefined);
}

/** Controller 0's memory at its peak RSS, by where it is. */
function memoryAtPeak(from: number, to: number): string {
  const top = probePeak(from, to);
  if (!top) return 'no samples of the memory probe in the run';
  // The SDK's workflow thread holds the most of the worker threads (the others are small helpers).
  const [workflows, ...others] = [...top.workers].sort((a, b) => b.heapTotalKb - a.heapTotalKb);
  const heaps = top.main.heapTotalKb + top.workers.reduce((s, w) => s + w.heapTotalKb, 0);
  const external = top.main.externalKb + top.workers.reduce((s, w) => s + w.externalKb, 0);
  return (
    `RSS ${mb(top.rssKb)} = main thread's V8 heap ${mb(top.main.heapTotalKb)} (${mb(top.main.heapUsedKb)} used), ` +
    `workflow thread's ${mb(workflows?.heapTotalKb ?? 0)} (${mb(workflows?.heapUsedKb ?? 0)} used), ${others.length} other thread(s)' ${mb(others.reduce((s, w) => s + w.heapTotalKb, 0))}, ` +
    `buffers outside the heaps ${mb(external)}, the rest ${mb(top.rssKb - heaps - external)} (the Temporal core, gRPC, code, the allocator's free space)`
  );
}

/** VmRSS (kB) and CPU time (ms) of a process, from /proc. */
function procStats(pid: number): { rssKb: number; cpuMs: number } | undefined {
  try {
    const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 (state) on
    const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100 Hz on Linux)
    return { rssKb: Number(rss?.[1] ?? 0), cpuMs: ticks * 10 };
  } catch {
    return undefined;
  }
}

// ---- attribution of requests ---------------------------------------------------------------------------------

/** Worker-side task operations: in the pods' namespace they are the pods' (and the server's own system workers'). */
const isWorkerTaskOperation = (operation: string) =>
  /^(Poll\w+TaskQueue|Respond\w+Task\w*|RecordActivityTaskHeartbeat\w*)$/.test(operation);
/** Whether a frontend request is the controllers': see `attributionNote`. */
const isControllers = (l: Labels) =>
  l.namespace === controllerNamespace || (l.namespace === podNamespace && !isWorkerTaskOperation(l.operation ?? ''));
const attributionNote =
  `Temporal RPCs from the controller are counted by the dev server (${temporalRequestsMetric}{service_name="frontend", namespace, operation}): ` +
  `every operation in namespace \`${controllerNamespace}\` (the controllers' RolloutWorkflows), plus in namespace \`${podNamespace}\` (the pods' ` +
  `worker deployments) every operation except the worker task operations (Poll*TaskQueue, Respond*Task*, RecordActivityTaskHeartbeat), ` +
  `which there are the pods' PollWorkflowTaskQueue/RespondWorkflowTaskCompleted and the server's own system workers'. ` +
  `Idle figures subtract the server's own background in \`${controllerNamespace}\`, measured in the empty namespace \`${baselineNamespace}\`.`;

/** A write that changes something (a dry run, the resync's drift check, writes nothing). */
const isWrite = (l: Labels) => kubeWriteVerbs.includes(l.verb ?? '') && !l.dry_run;
/** Kubernetes requests on resources (not /metrics, /healthz …). */
const isResourceRequest = (l: Labels) => !!l.resource;
/**
 * What the controllers write: Glidepath's own resources, the versioned Deployments (not their status: the pod
 * simulator writes that) and Events. Everything else written is the simulator's or the servers' own (leases, the
 * apiserver's `kubernetes` endpoints every 10 s).
 */
const isControllersWrite = (l: Labels) =>
  l.group === group ||
  (l.group === 'apps' && l.resource === 'deployments' && l.subresource !== 'status') ||
  l.resource === 'events';
const kubeKey = (l: Labels) =>
  `${l.verb} ${l.group ? `${l.group}/` : ''}${l.resource}${l.subresource ? `/${l.subresource}` : ''} (${l.code})`;

// ---- sampling -------------------------------------------------------------------------------------------------

interface Tick {
  at: number;
  /** Controllers' Temporal requests so far (cumulative), per namespace/operation. */
  temporal?: Map<string, number>;
  /** Kubernetes requests so far (cumulative), per verb and resource. */
  kube?: Map<string, number>;
  /** Writes the benchmark itself made so far. */
  benchWrites: number;
  rssKb: number;
  cpuMs: number;
  podsRssKb: number;
  /** CPU the dev server and the pods' process used so far: who holds the machine's two cores. */
  serverCpuMs: number;
  podsCpuMs: number;
  /** How long both scrapes took (the sampling's own cost on the servers). */
  scrapeMs: number;
  /**
   * The controllers' Temporal requests so far (cumulative) by their own count, where they are sent
   * (`ownRequestMetrics`), per operation, and when they were read: the middle of their scrape (the tick's `at` waits
   * for the slower dev server, and a scrape's own 0.1–0.3 s would read a second's rate up to 30 % off).
   */
  own?: { at: number; byOperation: Map<string, number>; budget: BudgetCount };
}

/**
 * The controllers' Temporal budgets' own count (worker/metrics.ts `budgetMetrics`), summed over them: the calls
 * counted by whether they waited for room, and the most counted within 1 s and 5 s in the 10 s before the read
 * (exact, each call counted as it goes out; summed over several controllers, an upper bound of their sum's peak).
 */
interface BudgetCount {
  paid: number;
  unheld: number;
  peak1s: number;
  peak5s: number;
}

/**
 * What a controller counts itself (its /metrics): the Temporal core's requests (the workers' polls, completions and
 * heartbeats; long polls apart) and Glidepath's clients' (worker/metrics.ts `temporalRequestCounter`).
 */
const ownRequestMetrics = ['temporal_request', 'temporal_long_request', 'glidepath_temporal_requests_total'];
const budgetMetricNames = ['glidepath_temporal_budget_calls_total', 'glidepath_temporal_budget_peak_calls'];

/** The controllers' own count of their Temporal requests by operation (summed over them), and when the last answered. */
async function scrapeOwnRequests(ports: number[]): Promise<Tick['own']> {
  const sent = Date.now();
  const pages = await Promise.all(
    ports.map((port) =>
      scrapeTemporalMetrics(`http://127.0.0.1:${port}/metrics`, [...ownRequestMetrics, ...budgetMetricNames], 5_000),
    ),
  );
  const byOperation = new Map<string, number>();
  const budget: BudgetCount = { paid: 0, unheld: 0, peak1s: 0, peak5s: 0 };
  for (const x of pages.flat()) {
    if (x.name === 'glidepath_temporal_budget_calls_total')
      budget[x.labels.how === 'unheld' ? 'unheld' : 'paid'] += x.value;
    else if (x.name === 'glidepath_temporal_budget_peak_calls')
      budget[x.labels.window === '5s' ? 'peak5s' : 'peak1s'] += x.value;
    else byOperation.set(x.labels.operation ?? '?', (byOperation.get(x.labels.operation ?? '?') ?? 0) + x.value);
  }
  return { at: (sent + Date.now()) / 2, byOperation, budget };
}
const ownTotal = (own: NonNullable<Tick['own']>) => [...own.byOperation.values()].reduce((a, b) => a + b, 0);

/** Every frontend request by namespace/operation (cumulative). */
const byNamespaceOperation = (samples: Sample[]) =>
  sumBy(
    samples,
    temporalRequestsMetric,
    () => true,
    (l) => `${l.namespace}\t${l.operation}`,
  );
const controllersTotal = (m: Map<string, number>) => {
  let n = 0;
  for (const [k, v] of m) {
    const [namespace, operation] = k.split('\t');
    if (isControllers({ namespace: namespace!, operation: operation! })) n += v;
  }
  return n;
};
/** The controllers' Temporal requests so far at a tick, and when they were counted: by the dev server's count and by their own. */
const byServer = (t: Tick) => (t.temporal ? { at: t.at, n: controllersTotal(t.temporal) } : undefined);
const byOwn = (t: Tick) => (t.own ? { at: t.own.at, n: ownTotal(t.own) } : undefined);
const kubeByKey = (samples: Sample[]) =>
  sumBy(
    samples,
    kubeRequestsMetric,
    isResourceRequest,
    (l) => `${kubeKey(l)}\t${isWrite(l) ? 'w' : 'r'}\t${isControllersWrite(l) ? '' : 'other'}`,
  );

let benchWrites = 0;
const ticks: Tick[] = [];
let samplerErrors = 0;
let sampling = false;
let samplerLoop: Promise<void> | undefined;

// ---- the run --------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const t0 = Date.now();
  console.log(
    `Glidepath scale benchmark: ${resources} resources, ${controllerCount} controller process(es) with ${values['controller-flag']?.length ? `the flags ${values['controller-flag'].join(' ')}` : 'default settings'}${values['server-flag']?.length ? `, the dev server with ${values['server-flag'].join(' ')}` : ''}${values['node-option'] ? `, Node options ${values['node-option'].join(' ') || '(none)'}` : ''}${values['controller-env']?.length ? `, environment ${values['controller-env'].join(' ')}` : ''}${writeRate ? `, writes at ${writeRate}/s` : ''}; logs in ${dir}`,
  );
  const temporal = await startTemporal({
    dir,
    dynamicConfig: [
      // A namespace holds 100 worker deployments by default; each resource is one.
      `matching.maxDeployments=${resources + 100}`,
      // Concurrent long polls per namespace and API (1200 by default): during phase 2 every resource has two pods.
      `frontend.namespaceCount=${Math.max(1200, 2 * resources + 500)}`,
      // Without these the metrics page grows by per-task-queue series to megabytes, too much to scrape every second.
      'metrics.breakdownByTaskQueue=false',
      'metrics.breakdownByBuildID=false',
      'metrics.breakdownByPartition=false',
      // One partition per task queue instead of four: each resource's task queue serves a pod or two, and a thousand
      // queues' partitions kept the dev server busy persisting them (UpdateTaskQueue 626 per resource at 1,000, 131 with one).
      'matching.numTaskqueueReadPartitions=1',
      'matching.numTaskqueueWritePartitions=1',
      // --server-flag: the dev server's dynamic config, e.g. system.enableActivityEagerExecution=true.
      ...(values['server-flag'] ?? []),
    ],
  });
  servers = [temporal.process];
  const kube = await startKube({ dir, crds: true });
  servers = [...kube.processes, temporal.process]; // stop order: kube-controller-manager, apiserver, etcd, Temporal
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kube.kubeconfig);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: k8sNamespace } } });
  await custom.createNamespacedCustomObject({
    group,
    version,
    namespace: k8sNamespace,
    plural: 'temporalconnections',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'TemporalConnection',
      metadata: { name: 'local' },
      spec: { hostPort: temporal.address },
    },
  });

  // The controllers' namespace, with Glidepath's search attributes (without them rollouts run without), and the baseline.
  const connection = await Connection.connect({ address: temporal.address });
  try {
    for (const namespace of [controllerNamespace, baselineNamespace]) {
      // The dev server may have created it already (servers:up's own namespaces).
      await connection.workflowService
        .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') })
        .catch((err: unknown) => {
          if ((err as { code?: number }).code !== GrpcStatus.ALREADY_EXISTS) throw err;
        });
    }
    const keyword = temporalProto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    await until(
      'the search attributes registered',
      async () => {
        await connection.operatorService.addSearchAttributes({
          namespace: controllerNamespace,
          searchAttributes: Object.fromEntries(searchAttributeKeys.map((k) => [k.name, keyword])),
        });
        const registered =
          (await connection.operatorService.listSearchAttributes({ namespace: controllerNamespace }))
            .customAttributes ?? {};
        return searchAttributeKeys.every((k) => k.name in registered) ? true : undefined;
      },
      60_000,
      1000,
    );
    // The frontend knows a new namespace after its namespace cache refreshes: until then every call in it fails.
    await until(
      'the new namespaces usable',
      async () => {
        for (const namespace of [controllerNamespace, baselineNamespace])
          await new Client({ connection, namespace }).workflow.count();
        return true;
      },
      60_000,
      1000,
    );
  } finally {
    await connection.close();
  }

  // Sampling starts before the controllers do: their start-up requests count.
  sampling = true;
  serverPid = temporal.process.pid;
  samplerLoop = sampler(temporal.metricsUrl, kc);
  await until('the first sample', () => (ticks.some((t) => t.temporal && t.kube) ? true : undefined), 30_000, 200);

  const pods = spawnNode('pods', 'simulator/main.ts', ['--light'], { KUBECONFIG: kube.kubeconfig });
  for (let i = 0; i < controllerCount; i++) controllerMetricsPorts.push(await freePort());
  const controllers = Array.from({ length: controllerCount }, (_, i) =>
    spawnNode(
      `controller-${i}`,
      values.compiled ? 'dist/worker/main.js' : 'worker/main.ts',
      [
        '--temporal-namespace',
        controllerNamespace,
        '--namespace',
        k8sNamespace,
        `--metrics-bind-address=127.0.0.1:${controllerMetricsPorts[i]}`,
        '--health-probe-bind-address=0',
        ...(values['controller-flag'] ?? []),
      ],
      {
        KUBECONFIG: kube.kubeconfig,
        TEMPORAL_ADDRESS: temporal.address,
        ...controllerEnvironment,
        ...Object.fromEntries(
          (values['controller-env'] ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
        ),
        GLIDEPATH_MEMORY_PROBE: memoryProbeFile(i),
      },
      [
        ...(values['node-option']?.filter(Boolean) ?? controllerNodeOptions),
        '--import',
        join(root, 'bench/memory-probe.mjs'),
      ],
    ),
  );
  controllerPids.push(...controllers.map((c) => c.pid!));
  podsPid = pods.pid!;
  for (const [i, c] of controllers.entries()) {
    await until(
      `controller ${i} running`,
      () => {
        if (c.exitCode !== null)
          throw new Error(`controller ${i} exited (${c.exitCode}); read ${join(dir, `controller-${i}.log`)}`);
        return readFileSync(join(dir, `controller-${i}.log`), 'utf8').includes('glidepath controller running')
          ? true
          : undefined;
      },
      120_000,
    );
  }
  console.log(`servers and ${controllerCount} controller(s) up in ${secs(Date.now() - t0)}\n`);

  // Each resource's status, as a watch delivers it: the times are when the benchmark saw each state.
  const names = Array.from({ length: resources }, (_, i) => `r${i}`);
  const created = new Map<string, number>();
  const patched = new Map<string, number>();
  const ready = new Map<string, number>(); // phase 1: Ready with a current version
  const v1 = new Map<string, string>();
  const current2 = new Map<string, number>(); // phase 2: a build other than v1 is current
  const gone = new Map<string, number>(); // phase 2: v2 current and no deprecated version left
  type Status = { phase?: string; currentVersion?: { buildID?: string }; deprecatedVersions?: unknown[] };
  const observe = (obj: k8s.KubernetesObject & { status?: Status }) => {
    const name = obj.metadata?.name ?? '';
    const s = obj.status;
    const now = Date.now();
    const build = s?.currentVersion?.buildID;
    if (!patched.has(name)) {
      if (s?.phase === 'Ready' && build && created.has(name) && !ready.has(name)) {
        ready.set(name, now);
        v1.set(name, build);
      }
      return;
    }
    if (build && v1.has(name) && build !== v1.get(name)) {
      if (!current2.has(name)) current2.set(name, now);
      if (!(s?.deprecatedVersions ?? []).length && !gone.has(name)) gone.set(name, now);
    }
  };
  const informer = k8s.makeInformer(
    kc,
    `/apis/${group}/${version}/namespaces/${k8sNamespace}/temporalworkerdeployments`,
    () =>
      custom.listNamespacedCustomObject({
        group,
        version,
        namespace: k8sNamespace,
        plural: 'temporalworkerdeployments',
      }) as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
  );
  let informerStopped = false;
  informer.on('add', observe);
  informer.on('update', observe);
  informer.on('error', () => {
    if (!informerStopped) setTimeout(() => void informer.start().catch(() => {}), 1000);
  });
  await informer.start();

  const twd = (name: string, marker: 'v1' | 'v2') => ({
    apiVersion: `${group}/${version}`,
    kind: 'TemporalWorkerDeployment',
    metadata: { name, namespace: k8sNamespace },
    spec: {
      replicas: 1,
      rollout: marker === 'v1' ? { strategy: 'AllAtOnce' } : { strategy: 'Progressive', steps },
      sunset: { scaledownDelay: '0s', deleteDelay: '0s' },
      workerOptions: { connectionRef: { name: 'local' }, temporalNamespace: podNamespace },
      template: {
        spec: {
          containers: [
            {
              name: 'w',
              image: 'bench:1',
              env: [
                { name: 'EXAMPLE_TASK_QUEUE', value: `scale-${name}` },
                { name: 'MARKER', value: marker },
              ],
            },
          ],
        },
      },
    },
  });
  const settle = (what: string, done: Map<string, number>, timeoutMs: number) =>
    until(what, () => (done.size >= resources ? true : undefined), timeoutMs, 250).catch((err: Error) =>
      console.log(`  ${err.message}: ${done.size}/${resources}`),
    );

  // Phase 1: create all, v1 AllAtOnce.
  const phase1 = Date.now();
  await inBatches(names, writeConcurrency, async (name) => {
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace: k8sNamespace,
      plural: 'temporalworkerdeployments',
      body: twd(name, 'v1'),
    });
    benchWrites++;
    created.set(name, Date.now());
  });
  const phase1Created = Date.now();
  await settle('every resource Ready with a current version', ready, phaseTimeoutMs);
  const phase1End = Date.now();

  // Phase 2: patch all to v2 Progressive.
  const phase2 = Date.now();
  const persistenceBefore = await scrapePersistence(temporal.metricsUrl);
  await inBatches(
    names.filter((n) => ready.has(n)),
    writeConcurrency,
    async (name) => {
      await custom.patchNamespacedCustomObject(
        {
          group,
          version,
          namespace: k8sNamespace,
          plural: 'temporalworkerdeployments',
          name,
          body: { spec: twd(name, 'v2').spec },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      benchWrites++;
      patched.set(name, Date.now());
    },
  );
  const phase2Patched = Date.now();
  await settle('v2 current everywhere', current2, phaseTimeoutMs);
  const phase2End = Date.now();
  await settle('old versions gone everywhere', gone, goneTimeoutMs);
  const goneEnd = Date.now();
  const persistenceAfter = await scrapePersistence(temporal.metricsUrl);

  // Idle: once nothing moves, count over the window.
  let idle: { window: [Tick, Tick]; quietAfterMs: number } | undefined;
  if (idleSeconds > 0) {
    const quietFrom = Date.now();
    const quiet = await until(
      'quiet (10 s without workflow progress or controller writes)',
      () => (isQuiet(10_000) ? true : undefined),
      300_000,
      1000,
    ).catch((err: Error) => {
      console.log(`  ${err.message}: measuring anyway`);
      return false;
    });
    const start = lastFullTick()!;
    const idleStart = Date.now();
    console.log(
      `idle window: ${idleSeconds} s from ${quiet ? 'quiet' : 'not quiet'} (${secs(idleStart - quietFrom)} after the rollouts)`,
    );
    await sleep(idleSeconds * 1000);
    await until(
      'a sample after the idle window',
      () => (lastFullTick() && lastFullTick()!.at >= start.at + idleSeconds * 1000 ? true : undefined),
      30_000,
      200,
    );
    idle = { window: [start, lastFullTick()!], quietAfterMs: idleStart - quietFrom };
  }
  informerStopped = true;
  await informer.stop();
  sampling = false;
  await samplerLoop;

  // ---- report ---------------------------------------------------------------------------------------------------
  const perResource = (start: Map<string, number>, end: Map<string, number>) =>
    [...end].filter(([n]) => start.has(n)).map(([n, t]) => t - start.get(n)!);
  const phase1Times = perResource(created, ready);
  const phase2Times = perResource(patched, current2);
  const goneTimes = perResource(patched, gone);
  const window = (from: number, to: number) => ticks.filter((t) => t.at >= from && t.at <= to && t.temporal && t.kube);
  const rates = (from: number, to: number) => {
    const ts = window(from - 1000, to + 1000);
    const out: { temporal: number; kube: number; kubeWrites: number; controllerWrites: number }[] = [];
    for (let i = 1; i < ts.length; i++) {
      const [a, b] = [ts[i - 1]!, ts[i]!];
      const dt = (b.at - a.at) / 1000;
      const k = kubeDelta(b.kube!, a.kube!);
      const bench = b.benchWrites - a.benchWrites;
      out.push({
        temporal: (controllersTotal(b.temporal!) - controllersTotal(a.temporal!)) / dt,
        kube: (k.all - bench) / dt,
        kubeWrites: (k.writes - bench) / dt,
        controllerWrites: (k.controllerWrites - bench) / dt,
      });
    }
    return out;
  };
  const totals = (from: number, to: number) => {
    const ts = window(from - 1000, to + 1000);
    const [a, b] = [ts[0], ts.at(-1)];
    if (!a || !b || a === b) return undefined;
    return {
      a,
      b,
      temporal: controllersTotal(b.temporal!) - controllersTotal(a.temporal!),
      seconds: (b.at - a.at) / 1000,
    };
  };
  /**
   * The highest rate over any `seconds` in a row (each from the closest two samples at least that far apart): two
   * samples closer than a second (a slow scrape, then the next at once) make a rate of a fraction of a second.
   */
  const peakOver = (
    from: number,
    to: number,
    seconds: number,
    count: (t: Tick) => { at: number; n: number } | undefined = byServer,
  ) => busiestOver(from, to, seconds, count)?.rate ?? NaN;
  /** The busiest `seconds` in a row by `count`: its rate and the ticks at both ends. */
  const busiestOver = (
    from: number,
    to: number,
    seconds: number,
    count: (t: Tick) => { at: number; n: number } | undefined,
  ) => {
    const ts = ticks
      .filter((t) => t.at >= from - 1000 && t.at <= to + 1000)
      .flatMap((t) => (count(t) ? [{ t, ...count(t)! }] : []));
    let best: { rate: number; a: Tick; b: Tick } | undefined;
    for (let i = 0, j = 1; j < ts.length; j++) {
      while (i + 1 < j && ts[j]!.at - ts[i + 1]!.at >= seconds * 1000) i++;
      const dt = ts[j]!.at - ts[i]!.at;
      const rate = (ts[j]!.n - ts[i]!.n) / (dt / 1000);
      if (dt >= seconds * 1000 && (!best || rate > best.rate)) best = { rate, a: ts[i]!.t, b: ts[j]!.t };
    }
    return best;
  };
  /** The controllers' own count over a phase: calls in all and their mean rate. */
  const ownTotals = (from: number, to: number) => {
    const ts = ticks.filter((t) => t.at >= from - 1000 && t.at <= to + 1000 && t.own !== undefined);
    const [a, b] = [ts[0]?.own, ts.at(-1)?.own];
    return a && b && a !== b ? { calls: ownTotal(b) - ownTotal(a), seconds: (b.at - a.at) / 1000 } : undefined;
  };
  /** The controller's Temporal calls between two samples, by "namespace\toperation". */
  const controllerCallsBetween = (a: Tick, b: Tick) =>
    [...b.temporal!]
      .map(([k, v]) => [k, v - (a.temporal!.get(k) ?? 0)] as const)
      .filter(([k, v]) => v > 0 && isControllers({ namespace: k.split('\t')[0]!, operation: k.split('\t')[1]! }));
  const peak = (xs: number[]) => (xs.length ? Math.max(...xs) : NaN);
  const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
  const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');

  const runTicks = ticks.filter((t) => t.at >= phase1 && t.at <= goneEnd + 1000);
  // One controller: its probe samples every 2 s and may catch a peak between the benchmark's samples.
  const peakRss = Math.max(
    peak(runTicks.map((t) => t.rssKb)),
    controllerCount === 1 ? (probePeak(phase1, goneEnd + 1000)?.rssKb ?? 0) : 0,
  );
  const startRss = ticks.filter((t) => t.at < phase1).at(-1)?.rssKb ?? NaN;
  const lastTick = ticks.at(-1);
  const firstTick = ticks.find((t) => t.at >= phase1);
  const cpuMs = lastTick && firstTick ? lastTick.cpuMs - firstTick.cpuMs : NaN;

  console.log(`\n${attributionNote}`);
  console.log(
    `Kubernetes requests are counted by kube-apiserver (${kubeRequestsMetric}), all clients but the benchmark's own writes; "controller writes" are those to glidepath.dev resources, Deployments (not their status, which the pod simulator writes) and Events.\n`,
  );
  console.log(
    `Results: ${resources} resources, ${controllerCount} controller process(es), light pods; v1 AllAtOnce, then v2 Progressive (${steps.map((s) => `${s.rampPercentage}% ${s.pauseDuration}`).join(', ')})`,
  );
  const phaseLine = (label: string, start: number, created: number, end: number, times: number[]) =>
    console.log(
      `  ${label}: wall ${secs(end - start)} (writes took ${secs(created - start)}); per resource p50 ${secs(pct(times, 50))}, p95 ${secs(pct(times, 95))}, max ${secs(peak(times))}; ${times.length}/${resources} complete`,
    );
  phaseLine('phase 1, create → Ready with v1 current', phase1, phase1Created, phase1End, phase1Times);
  phaseLine('phase 2, patch → v2 current          ', phase2, phase2Patched, phase2End, phase2Times);
  console.log(
    `  phase 2, patch → old version gone:      wall ${secs(goneEnd - phase2)}; per resource p50 ${secs(pct(goneTimes, 50))}, p95 ${secs(pct(goneTimes, 95))}; ${goneTimes.length}/${resources} within ${secs(goneTimeoutMs)} more`,
  );
  console.log(
    `  controller RSS peak: ${mb(peakRss)} (${controllerCount === 1 ? "the higher of the benchmark's samples and its memory probe's" : `sum over ${controllerCount} processes`}; target ≤ 300 MB; ${mb(startRss)} started, before any resource); CPU ${secs(cpuMs)} over ${secs(goneEnd - phase1)} (${f1(cpuMs / (goneEnd - phase1))} cores); pods process peak RSS ${mb(peak(runTicks.map((t) => t.podsRssKb)))}`,
  );
  console.log(`  controller 0 at its peak: ${memoryAtPeak(phase1, goneEnd + 1000)}`);
  for (const [label, from, to] of [
    ['phase 1', phase1, phase1End],
    ['phase 2', phase2, goneEnd],
  ] as const) {
    const r = rates(from, to);
    const tot = totals(from, to);
    console.log(
      `  ${label}: Temporal RPS from the controller peak ${f0(peak(r.map((x) => x.temporal)))} (target ≤ 50; over any 1 s at most ${f0(peakOver(from, to, 1))}, over 5 s ${f0(peakOver(from, to, 5))}), mean ${f1(tot ? tot.temporal / tot.seconds : NaN)}, ` +
        `${f0(tot?.temporal ?? NaN)} in all (${f1((tot?.temporal ?? NaN) / resources)} per resource); ` +
        `Kubernetes requests/s peak ${f0(peak(r.map((x) => x.kube)))}, writes/s peak ${f0(peak(r.map((x) => x.kubeWrites)))}, controller writes/s peak ${f0(peak(r.map((x) => x.controllerWrites)))}`,
    );
    const own = ownTotals(from, to);
    console.log(
      `    by the controller's own count where it sends them (${ownRequestMetrics.join(' + ')}): over any 1 s at most ${f0(peakOver(from, to, 1, byOwn))}, over 5 s ${f0(peakOver(from, to, 5, byOwn))}, ` +
        `mean ${f1(own ? own.calls / own.seconds : NaN)}, ${f0(own?.calls ?? NaN)} in all (${f1((own?.calls ?? NaN) / resources)} per resource)`,
    );
    const budgets = ticks.filter((t) => t.at >= from && t.at <= to + 1000 && t.own).map((t) => t.own!.budget);
    if (budgets.length) {
      const [a, b] = [budgets[0]!, budgets.at(-1)!];
      const [paid, unheld] = [b.paid - a.paid, b.unheld - a.unheld];
      console.log(
        `    by the controller's budget as each call goes out (exact; a read covers the 10 s before it): within any 1 s at most ${f0(peak(budgets.map((x) => x.peak1s)))}, within 5 s ${f1(peak(budgets.map((x) => x.peak5s)) / 5)}/s; ` +
          `${f0(paid + unheld)} counted, ${f0(unheld)} of them unheld (heartbeats, history fetches, completions past their wait)`,
      );
    }
    for (const seconds of process.env.BENCH_VERBOSE ? [5, 1] : []) {
      const busiest = busiestOver(from, to, seconds, byOwn);
      if (!busiest?.a.own || !busiest.b.own) continue;
      const ops = [...delta(busiest.b.own.byOperation, busiest.a.own.byOperation)]
        .filter(([, v]) => v > 0)
        .sort((x, y) => y[1] - x[1]);
      const span = ((busiest.b.own.at - busiest.a.own.at) / 1000).toFixed(2);
      console.log(
        `      in its busiest ${seconds} s (${f0(busiest.rate)}/s over ${span} s): ${ops.map(([k, v]) => `${k} ${v}`).join(', ')}`,
      );
    }
    if (tot) {
      const cores = (key: 'cpuMs' | 'serverCpuMs' | 'podsCpuMs') =>
        f1((tot.b[key] - tot.a[key]) / (tot.b.at - tot.a.at));
      console.log(
        `    CPU in cores: the dev server ${cores('serverCpuMs')}, the pods' process ${cores('podsCpuMs')}, the controller ${cores('cpuMs')} (of ${availableParallelism()})`,
      );
    }
    if (process.env.BENCH_VERBOSE) {
      console.log(`    Temporal RPS from the controller, each second: ${r.map((x) => f0(x.temporal)).join(' ')}`);
      const ts = window(from - 1000, to + 1000);
      const top = r.reduce((best, x, i) => (x.temporal > r[best]!.temporal ? i : best), 0);
      const [a, b] = [ts[top], ts[top + 1]];
      if (a && b) {
        const ops = controllerCallsBetween(a, b);
        console.log(`    in its busiest second: ${ops.map(([k, v]) => `${k.replace('\t', ' ')} ${v}`).join(', ')}`);
      }
    }
  }
  // What the controller called in phase 2, per resource: where its Temporal requests go.
  const p2 = totals(phase2, goneEnd);
  if (p2) {
    const ops = controllerCallsBetween(p2.a, p2.b);
    console.log('  phase 2 controller RPCs per resource, by namespace and operation:');
    for (const [k, v] of ops.sort((x, y) => y[1] - x[1]))
      console.log(`    ${k.replace('\t', '  ').padEnd(60)} ${(v / resources).toFixed(2)}`);
  }

  // What the server did for phase 2, all namespaces: its own database operations and the requests it got.
  if (persistenceBefore && persistenceAfter) {
    const ops = [...delta(persistenceAfter.byOperation, persistenceBefore.byOperation)]
      .filter(([, v]) => v > 0)
      .sort((x, y) => y[1] - x[1]);
    console.log(
      `  phase 2 dev server database operations per resource (persistence_requests), ${ops.reduce((n, [, v]) => n + v, 0)} in all:`,
    );
    console.log(
      `    ${ops
        .slice(0, 12)
        .map(([k, v]) => `${k} ${(v / resources).toFixed(1)}`)
        .join(', ')}`,
    );
    const byNamespace = [...delta(persistenceAfter.requestsByNamespace, persistenceBefore.requestsByNamespace)]
      .filter(([, v]) => v > 0)
      .sort((x, y) => y[1] - x[1]);
    console.log(
      `  phase 2 requests the dev server's frontend got per resource, by namespace: ${byNamespace.map(([k, v]) => `${k} ${(v / resources).toFixed(1)}`).join(', ')}`,
    );
  }

  // Errors.
  const runAll = totals(phase1, goneEnd);
  const failed = (op: string) =>
    runAll
      ? (runAll.b.temporal!.get(`${controllerNamespace}\t${op}`) ?? 0) -
        (runAll.a.temporal!.get(`${controllerNamespace}\t${op}`) ?? 0)
      : NaN;
  const logLines = (file: string) => {
    try {
      return readFileSync(join(dir, file), 'utf8').split('\n');
    } catch {
      return [];
    }
  };
  const controllerLines = Array.from({ length: controllerCount }, (_, i) => logLines(`controller-${i}.log`)).flat();
  const controllerErrors = controllerLines.filter((l) => /error/i.test(l));
  // A light pod's failed poll or answer, and the simulator's failed reconciles and hooks (not its scale lines).
  const podErrors = logLines('pods.log').filter(
    (l) => /light pod \S+: |pod simulator: \S+: /.test(l) && !/ pods \d+ → \d+$/.test(l),
  );
  console.log(
    `  errors: ${resources - phase1Times.length} not Ready in phase 1, ${resources - phase2Times.length} without v2 current in phase 2; ` +
      `workflow task failures ${f0(failed('RespondWorkflowTaskFailed'))}, activity attempts failed ${f0(failed('RespondActivityTaskFailed'))} (namespace ${controllerNamespace}); ` +
      `controller log lines with 'error' ${controllerErrors.length}; pod simulator errors ${podErrors.length}; ` +
      `failed scrapes ${samplerErrors} (of ${ticks.length}, p50 ${f0(
        pct(
          ticks.map((t) => t.scrapeMs),
          50,
        ),
      )} ms each)`,
  );
  const distinct = (lines: string[]) =>
    [
      ...new Set(
        lines.map((l) =>
          l
            .replace(/^\S+Z /, '')
            .replace(/\d+/g, 'N')
            .slice(0, 160),
        ),
      ),
    ].slice(0, 5);
  for (const l of distinct(controllerErrors)) console.log(`    controller: ${l}`);
  // A failed workflow task's cause, whole: the logs go with the run (without --keep), and the count alone says nothing.
  for (const l of controllerLines
    .map(stripVTControlCharacters)
    .filter((l) => /Failing workflow task/.test(l))
    .slice(0, 5))
    console.log(`    failed workflow task: ${l.slice(0, 1000)}`);
  for (const l of distinct(podErrors)) console.log(`    pods: ${l}`);

  if (idle) {
    const [a, b] = idle.window;
    const hours = (b.at - a.at) / 3_600_000;
    const perResourceHour = (n: number) => (n / resources / hours).toFixed(2);
    console.log(
      `\nIdle: ${secs(b.at - a.at)} with ${resources} resources (after ${secs(idle.quietAfterMs)} to settle), per resource-hour (count / ${resources} / ${hours.toFixed(4)} h):`,
    );
    const temporalDelta = new Map([...b.temporal!].map(([k, v]) => [k, v - (a.temporal!.get(k) ?? 0)]));
    const baseline = (op: string) => temporalDelta.get(`${baselineNamespace}\t${op}`) ?? 0;
    let total = 0;
    const rows: [string, number, number][] = [];
    for (const [k, v] of temporalDelta) {
      const [namespace, operation] = k.split('\t') as [string, string];
      if (!isControllers({ namespace, operation })) continue;
      const own = namespace === controllerNamespace ? Math.max(0, v - baseline(operation)) : v;
      if (v > 0) rows.push([`${namespace}  ${operation}`, v, own]);
      total += own;
    }
    console.log(`  Temporal RPCs from the controller: ${perResourceHour(total)} per resource-hour (target ≤ 12)`);
    console.log(
      `    ${'namespace  operation'.padEnd(60)} ${'count'.padStart(7)} ${'less server bg'.padStart(15)} ${'per res-hour'.padStart(13)}`,
    );
    for (const [k, v, own] of rows.sort((x, y) => y[2] - x[2]))
      console.log(
        `    ${k.padEnd(60)} ${String(v).padStart(7)} ${String(own).padStart(15)} ${perResourceHour(own).padStart(13)}`,
      );
    const unattributed = [...temporalDelta].filter(([k, v]) => v > 0 && k.startsWith('_unknown_'));
    if (unattributed.length)
      console.log(
        `    not attributable (no namespace): ${unattributed.map(([k, v]) => `${k.split('\t')[1]} ${v}`).join(', ')}`,
      );
    const kd = new Map([...b.kube!].map(([k, v]) => [k, v - (a.kube!.get(k) ?? 0)]));
    const writes = [...kd].filter(([k, v]) => v > 0 && k.split('\t')[1] === 'w');
    const controllerWrites = writes.filter(([k]) => k.split('\t')[2] !== 'other').reduce((s, [, v]) => s + v, 0);
    const reads = [...kd].filter(([k, v]) => v > 0 && k.split('\t')[1] === 'r').reduce((s, [, v]) => s + v, 0);
    console.log(
      `  Kubernetes writes by the controller: ${perResourceHour(controllerWrites)} per resource-hour (target 0); all reads ${perResourceHour(reads)} per resource-hour`,
    );
    for (const [k, v] of writes.sort((x, y) => y[1] - x[1])) {
      const [what, , owner] = k.split('\t');
      console.log(
        `    ${what!.padEnd(60)} ${String(v).padStart(7)} ${perResourceHour(v).padStart(13)}${owner === 'other' ? '  (not the controller: simulator or servers)' : ''}`,
      );
    }
  }
  console.log(`\ntotal ${secs(Date.now() - t0)}`);
}

interface KubeDelta {
  all: number;
  writes: number;
  controllerWrites: number;
}
function kubeDelta(after: Map<string, number>, before: Map<string, number>): KubeDelta {
  const d: KubeDelta = { all: 0, writes: 0, controllerWrites: 0 };
  for (const [k, v] of after) {
    const n = v - (before.get(k) ?? 0);
    const [, kind, owner] = k.split('\t');
    d.all += n;
    if (kind === 'w') {
      d.writes += n;
      if (owner !== 'other') d.controllerWrites += n;
    }
  }
  return d;
}

const controllerPids: number[] = [];
/** Where each controller serves /metrics. */
const controllerMetricsPorts: number[] = [];
let podsPid: number | undefined;
let serverPid: number | undefined;

/** One sample a second until `sampling` ends; a failed scrape leaves a gap (and is counted). */
async function sampler(metricsUrl: string, kc: k8s.KubeConfig): Promise<void> {
  while (sampling) {
    const started = Date.now();
    const [temporal, kube, own] = await Promise.all([
      scrapeTemporal(metricsUrl)
        .then(byNamespaceOperation)
        .catch(() => (samplerErrors++, undefined)),
      scrapeKube(kc)
        .then(kubeByKey)
        .catch(() => (samplerErrors++, undefined)),
      // Before the controllers are up (and if one does not answer) there is no own count.
      // --without-own-count: not at all, to see what a scrape a second of the Temporal core's metrics costs the controller.
      controllerPids.length && !values['without-own-count']
        ? scrapeOwnRequests(controllerMetricsPorts).catch(() => undefined)
        : Promise.resolve(undefined),
    ]);
    const procs = controllerPids.map(procStats);
    ticks.push({
      at: Date.now(),
      temporal,
      kube,
      benchWrites,
      rssKb: procs.reduce((s, p) => s + (p?.rssKb ?? 0), 0),
      cpuMs: procs.reduce((s, p) => s + (p?.cpuMs ?? 0), 0),
      podsRssKb: (podsPid && procStats(podsPid)?.rssKb) || 0,
      serverCpuMs: (serverPid && procStats(serverPid)?.cpuMs) || 0,
      podsCpuMs: (podsPid && procStats(podsPid)?.cpuMs) || 0,
      scrapeMs: Date.now() - started,
      own,
    });
    await sleep(Math.max(0, 1000 - (Date.now() - started)));
  }
}

/** The dev server's database operations by operation, and its frontend's requests by namespace (one scrape: the page is large). */
async function scrapePersistence(
  metricsUrl: string,
): Promise<{ byOperation: Map<string, number>; requestsByNamespace: Map<string, number> } | undefined> {
  try {
    const samples = await scrapeTemporalMetrics(metricsUrl, ['persistence_requests', temporalRequestsMetric], 30_000);
    return {
      byOperation: sumBy(
        samples,
        'persistence_requests',
        () => true,
        (l) => l.operation ?? '?',
      ),
      requestsByNamespace: sumBy(
        samples,
        temporalRequestsMetric,
        (l) => l.service_name === 'frontend',
        (l) => l.namespace ?? '?',
      ),
    };
  } catch (err) {
    console.log(`  the dev server's metrics could not be read: ${err instanceof Error ? err.message : String(err)}`);
    return undefined;
  }
}

function lastFullTick(): Tick | undefined {
  for (let i = ticks.length - 1; i >= 0; i--) if (ticks[i]!.temporal && ticks[i]!.kube) return ticks[i];
  return undefined;
}

/** No workflow progress in the controllers' namespace (no task completed, no signal) and no controller writes for `ms`. */
function isQuiet(ms: number): boolean {
  const b = lastFullTick();
  const a = ticks.find((t) => t.temporal && t.kube && t.at >= (b?.at ?? 0) - ms);
  if (!a || !b || b.at - a.at < ms * 0.9) return false;
  for (const [k, v] of b.temporal!) {
    const [namespace, operation] = k.split('\t');
    if (namespace === controllerNamespace && !operation!.startsWith('Poll') && v - (a.temporal!.get(k) ?? 0) > 0)
      return false;
  }
  return kubeDelta(b.kube!, a.kube!).controllerWrites - (b.benchWrites - a.benchWrites) === 0;
}

// The whole run is bounded: phases, settling and idle, plus start-up and slack.
const hardLimitMs = 3 * phaseTimeoutMs + goneTimeoutMs + (idleSeconds + 300) * 1000 + 600_000;
const hardLimit = setTimeout(() => {
  console.error(`\nthe benchmark ran over its limit (${secs(hardLimitMs)}): stopping`);
  void cleanup(true).finally(() => process.exit(3));
}, hardLimitMs);
hardLimit.unref();

try {
  await main();
  await cleanup(values.keep ?? false);
  process.exit(0);
} catch (err) {
  console.error(`\nbenchmark failed: ${(err as Error).stack ?? String(err)}`);
  sampling = false;
  await cleanup(true);
  process.exit(1);
}
