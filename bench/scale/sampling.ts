/**
 * What the scale benchmark samples once a second: the controllers' Temporal requests counted by the dev server
 * and by the controllers themselves, Kubernetes requests counted by kube-apiserver, and the processes' RSS and CPU.
 * And which requests are the controllers'.
 */
import * as k8s from '@kubernetes/client-node';
import { group } from '../../api/common.js';
import {
  kubeRequestsMetric,
  kubeWriteVerbs,
  scrapeKube,
  scrapeTemporal,
  scrapeTemporalMetrics,
  sumBy,
  temporalRequestsMetric,
  type Labels,
  type Sample,
} from '../../scripts/servers/metrics.js';
import { baselineNamespace, controllerNamespace, podNamespace, values } from './options.js';
import { procStats, sleep } from './processes.js';

/** Worker-side task operations: in the pods' namespace they are the pods' (and the server's own system workers'). */
const isWorkerTaskOperation = (operation: string) =>
  /^(Poll\w+TaskQueue|Respond\w+Task\w*|RecordActivityTaskHeartbeat\w*)$/.test(operation);
/** Whether a frontend request is the controllers': see `attributionNote`. */
export const isControllers = (l: Labels) =>
  l.namespace === controllerNamespace || (l.namespace === podNamespace && !isWorkerTaskOperation(l.operation ?? ''));
export const attributionNote =
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

export interface Tick {
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
  own?: { at: number; byOperation: Map<string, number> };
}

/**
 * What a controller counts itself (its /metrics): the Temporal core's requests (the workers' polls, completions and
 * heartbeats; long polls apart) and Glidepath's clients' (worker/metrics.ts `temporalRequestCounter`).
 */
export const ownRequestMetrics = ['temporal_request', 'temporal_long_request', 'glidepath_temporal_requests_total'];

/** The controllers' own count of their Temporal requests by operation (summed over them), and when the last answered. */
async function scrapeOwnRequests(ports: number[]): Promise<Tick['own']> {
  const sent = Date.now();
  const pages = await Promise.all(
    ports.map((port) => scrapeTemporalMetrics(`http://127.0.0.1:${port}/metrics`, ownRequestMetrics, 5_000)),
  );
  const byOperation = new Map<string, number>();
  for (const x of pages.flat())
    byOperation.set(x.labels.operation ?? '?', (byOperation.get(x.labels.operation ?? '?') ?? 0) + x.value);
  return { at: (sent + Date.now()) / 2, byOperation };
}
export const ownTotal = (own: NonNullable<Tick['own']>) => [...own.byOperation.values()].reduce((a, b) => a + b, 0);

/** Every frontend request by namespace/operation (cumulative). */
const byNamespaceOperation = (samples: Sample[]) =>
  sumBy(
    samples,
    temporalRequestsMetric,
    () => true,
    (l) => `${l.namespace}\t${l.operation}`,
  );
export const controllersTotal = (m: Map<string, number>) => {
  let n = 0;
  for (const [k, v] of m) {
    const [namespace, operation] = k.split('\t');
    if (isControllers({ namespace: namespace!, operation: operation! })) n += v;
  }
  return n;
};
/** The controllers' Temporal requests so far at a tick, and when they were counted: by the dev server's count and by their own. */
export const byServer = (t: Tick) => (t.temporal ? { at: t.at, n: controllersTotal(t.temporal) } : undefined);
export const byOwn = (t: Tick) => (t.own ? { at: t.own.at, n: ownTotal(t.own) } : undefined);
const kubeByKey = (samples: Sample[]) =>
  sumBy(
    samples,
    kubeRequestsMetric,
    isResourceRequest,
    (l) => `${kubeKey(l)}\t${isWrite(l) ? 'w' : 'r'}\t${isControllersWrite(l) ? '' : 'other'}`,
  );

export const ticks: Tick[] = [];
/** Where the controllers run and serve /metrics, the pods' and the server's processes: what the sampler reads. */
export const controllerPids: number[] = [];
export const controllerMetricsPorts: number[] = [];
export const sampler = {
  /** Writes the benchmark itself made so far (not the controllers'). */
  benchWrites: 0,
  /** Failed scrapes: gaps between the ticks. */
  errors: 0,
  podsPid: undefined as number | undefined,
  serverPid: undefined as number | undefined,
  running: false,
  loop: undefined as Promise<void> | undefined,
};

export function startSampler(metricsUrl: string, kc: k8s.KubeConfig): void {
  sampler.running = true;
  sampler.loop = sample(metricsUrl, kc);
}

export async function stopSampler(): Promise<void> {
  sampler.running = false;
  await sampler.loop;
}

interface KubeDelta {
  all: number;
  writes: number;
  controllerWrites: number;
}
export function kubeDelta(after: Map<string, number>, before: Map<string, number>): KubeDelta {
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

/** One sample a second until the sampler stops; a failed scrape leaves a gap (and is counted). */
async function sample(metricsUrl: string, kc: k8s.KubeConfig): Promise<void> {
  while (sampler.running) {
    const started = Date.now();
    const [temporal, kube, own] = await Promise.all([
      scrapeTemporal(metricsUrl)
        .then(byNamespaceOperation)
        .catch(() => (sampler.errors++, undefined)),
      scrapeKube(kc)
        .then(kubeByKey)
        .catch(() => (sampler.errors++, undefined)),
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
      benchWrites: sampler.benchWrites,
      rssKb: procs.reduce((s, p) => s + (p?.rssKb ?? 0), 0),
      cpuMs: procs.reduce((s, p) => s + (p?.cpuMs ?? 0), 0),
      podsRssKb: (sampler.podsPid && procStats(sampler.podsPid)?.rssKb) || 0,
      serverCpuMs: (sampler.serverPid && procStats(sampler.serverPid)?.cpuMs) || 0,
      podsCpuMs: (sampler.podsPid && procStats(sampler.podsPid)?.cpuMs) || 0,
      scrapeMs: Date.now() - started,
      own,
    });
    await sleep(Math.max(0, 1000 - (Date.now() - started)));
  }
}

/** The dev server's database operations by operation, and its frontend's requests by namespace (one scrape: the page is large). */
export async function scrapePersistence(
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

export function lastFullTick(): Tick | undefined {
  for (let i = ticks.length - 1; i >= 0; i--) if (ticks[i]!.temporal && ticks[i]!.kube) return ticks[i];
  return undefined;
}

/** No workflow progress in the controllers' namespace (no task completed, no signal) and no controller writes for `ms`. */
export function isQuiet(ms: number): boolean {
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
