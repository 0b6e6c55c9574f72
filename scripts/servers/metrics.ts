/**
 * The servers' own request counters, scraped from their Prometheus endpoints (text format), for benchmarks that
 * count what a client costs the servers:
 *
 *   Temporal dev server (`--metrics-port`, TemporalServer.metricsUrl):
 *     service_requests{service_name="frontend", namespace, operation}   one per RPC received by the frontend
 *     (also counted per internal hop with service_name="history"/"matching": only "frontend" is what clients send)
 *   kube-apiserver (`<server>/metrics`, needs a token allowed to GET /metrics: the admin kubeconfig's):
 *     apiserver_request_total{verb, group, version, resource, subresource, scope, component, code, dry_run}
 *
 * Only the series asked for are kept: the dev server's page grows to megabytes with per-task-queue series.
 */
import { request } from 'node:https';
import type * as k8s from '@kubernetes/client-node';

export const temporalRequestsMetric = 'service_requests';
export const kubeRequestsMetric = 'apiserver_request_total';
/** kube-apiserver verbs that change something (`apply` is a PATCH). */
export const kubeWriteVerbs = ['POST', 'PUT', 'PATCH', 'DELETE', 'DELETECOLLECTION'];

export type Labels = Record<string, string>;
export interface Sample {
  name: string;
  labels: Labels;
  value: number;
}

const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
/**
 * A label value of its own: a regexp match is a slice of the whole page (megabytes), and a slice kept in a map
 * key would keep the page alive with it, one page per scrape.
 */
const unescape = (v: string) => Buffer.from(v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))).toString();

/** Parses the Prometheus text format, keeping only samples of the named metrics. */
export function parsePrometheus(text: string, names: string[]): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!names.some((n) => line.startsWith(n))) continue;
    const brace = line.indexOf('{');
    const end = brace >= 0 ? line.lastIndexOf('}') : line.indexOf(' ');
    const name = brace >= 0 ? line.slice(0, brace) : line.slice(0, end);
    if (!names.includes(name)) continue; // a longer name with the same prefix (service_requests_total…)
    const labels: Labels = {};
    if (brace >= 0) for (const m of line.slice(brace + 1, end).matchAll(labelPattern)) labels[m[1]!] = unescape(m[2]!);
    const value = Number(
      line
        .slice(end + 1)
        .trim()
        .split(/\s+/)[0],
    );
    if (Number.isFinite(value)) samples.push({ name, labels, value });
  }
  return samples;
}

/** Sums the samples of `name` whose labels pass `filter`, grouped by `key` (one group '' without it). */
export function sumBy(
  samples: Sample[],
  name: string,
  filter: (labels: Labels) => boolean = () => true,
  key: (labels: Labels) => string = () => '',
): Map<string, number> {
  const sums = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== name || !filter(s.labels)) continue;
    const k = key(s.labels);
    sums.set(k, (sums.get(k) ?? 0) + s.value);
  }
  return sums;
}

/** The sum of the samples of `name` whose labels pass `filter`. */
export function sum(samples: Sample[], name: string, filter?: (labels: Labels) => boolean): number {
  return sumBy(samples, name, filter).get('') ?? 0;
}

/** `after - before` per key (counters: a key missing before counted from 0). */
export function delta(after: Map<string, number>, before: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]));
}

/** The samples of the named metrics from a Temporal Prometheus page: the dev server's, or a controller's (the SDK's exporter). */
export async function scrapeTemporalMetrics(
  metricsUrl: string,
  names: string[],
  timeoutMs = 10_000,
): Promise<Sample[]> {
  const res = await fetch(metricsUrl, { signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new Error(`GET ${metricsUrl}: HTTP ${res.status}`);
  return parsePrometheus(await res.text(), names);
}

/** The Temporal dev server's request counters (frontend only). */
export async function scrapeTemporal(metricsUrl: string): Promise<Sample[]> {
  return (await scrapeTemporalMetrics(metricsUrl, [temporalRequestsMetric])).filter(
    (s) => s.labels.service_name === 'frontend',
  );
}

type RequestOptions = NonNullable<Parameters<typeof request>[1]>;
const optionsByConfig = new WeakMap<k8s.KubeConfig, Promise<RequestOptions>>();
/**
 * The kubeconfig's credentials and TLS settings, made once: each applyToHTTPSOptions makes a new agent with its
 * own TLS context, a few megabytes that a scrape a second would pile up.
 */
function httpsOptions(kc: k8s.KubeConfig): Promise<RequestOptions> {
  let options = optionsByConfig.get(kc);
  if (!options) {
    const o: RequestOptions = { method: 'GET', timeout: 10_000 };
    options = kc.applyToHTTPSOptions(o).then(() => o);
    optionsByConfig.set(kc, options);
  }
  return options;
}

/** kube-apiserver's request counters, read with the kubeconfig's credentials and TLS settings. */
export async function scrapeKube(kc: k8s.KubeConfig): Promise<Sample[]> {
  const url = new URL('/metrics', kc.getCurrentCluster()!.server);
  const options = { ...(await httpsOptions(kc)) };
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(url, options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${url}: HTTP ${res.statusCode}`)),
      );
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
    req.end();
  });
  return parsePrometheus(text, [kubeRequestsMetric]);
}
