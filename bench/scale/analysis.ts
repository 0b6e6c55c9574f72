/**
 * The scale benchmark's arithmetic over its samples (./sampling.ts): rates, totals and peaks over a phase, by the
 * dev server's count or by the controllers' own.
 */
import { baselineNamespace, controllerCount, controllerNamespace } from './options.js';
import { probePeak } from './processes.js';
import { byServer, controllersTotal, isControllers, kubeDelta, ownTotal, ticks, type Tick } from './sampling.js';

export const pct = (xs: number[], p: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]! : NaN;
export const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Each resource's time from `start` to `end`, of those with both. */
export const perResource = (start: Map<string, number>, end: Map<string, number>) =>
  [...end].filter(([n]) => start.has(n)).map(([n, t]) => t - start.get(n)!);
/** The ticks with both servers' counts between `from` and `to`. */
export const fullTicks = (from: number, to: number) =>
  ticks.filter((t) => t.at >= from && t.at <= to && t.temporal && t.kube);
export const rates = (from: number, to: number) => {
  const ts = fullTicks(from - 1000, to + 1000);
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
export const totals = (from: number, to: number) => {
  const ts = fullTicks(from - 1000, to + 1000);
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
export const peakOver = (
  from: number,
  to: number,
  seconds: number,
  count: (t: Tick) => { at: number; n: number } | undefined = byServer,
) => busiestOver(from, to, seconds, count)?.rate ?? NaN;
/** The busiest `seconds` in a row by `count`: its rate and the ticks at both ends. */
export const busiestOver = (
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
export const ownTotals = (from: number, to: number) => {
  const ts = ticks.filter((t) => t.at >= from - 1000 && t.at <= to + 1000 && t.own !== undefined);
  const [a, b] = [ts[0]?.own, ts.at(-1)?.own];
  return a && b && a !== b ? { calls: ownTotal(b) - ownTotal(a), seconds: (b.at - a.at) / 1000 } : undefined;
};
/** The controller's Temporal calls between two samples, by "namespace\toperation". */
export const controllerCallsBetween = (a: Tick, b: Tick) =>
  [...b.temporal!]
    .map(([k, v]) => [k, v - (a.temporal!.get(k) ?? 0)] as const)
    .filter(([k, v]) => v > 0 && isControllers({ namespace: k.split('\t')[0]!, operation: k.split('\t')[1]! }));
export const peak = (xs: number[]) => (xs.length ? Math.max(...xs) : NaN);
export const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
export const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');

/** The controllers' RSS at its peak and at the start, and their CPU time, from `from` (phase 1) to `to`. */
export function memoryAndCpu(from: number, to: number) {
  const runTicks = ticks.filter((t) => t.at >= from && t.at <= to + 1000);
  // One controller: its probe samples every 2 s and may catch a peak between the benchmark's samples.
  const peakRss = Math.max(
    peak(runTicks.map((t) => t.rssKb)),
    controllerCount === 1 ? (probePeak(from, to + 1000)?.rssKb ?? 0) : 0,
  );
  const startRss = ticks.filter((t) => t.at < from).at(-1)?.rssKb ?? NaN;
  const lastTick = ticks.at(-1);
  const firstTick = ticks.find((t) => t.at >= from);
  const cpuMs = lastTick && firstTick ? lastTick.cpuMs - firstTick.cpuMs : NaN;
  return { runTicks, peakRss, startRss, cpuMs };
}

/** Requests for `operation` in the controllers' namespace between `from` and `to` (RespondWorkflowTaskFailed …). */
export function callsOf(from: number, to: number, operation: string): number {
  const all = totals(from, to);
  const key = `${controllerNamespace}\t${operation}`;
  return all ? (all.b.temporal!.get(key) ?? 0) - (all.a.temporal!.get(key) ?? 0) : NaN;
}

/**
 * What the controllers cost over the idle window: their Temporal requests by namespace and operation (count, and
 * less the server's own background in their namespace), and Kubernetes requests.
 */
export function idleCost([a, b]: [Tick, Tick]) {
  const hours = (b.at - a.at) / 3_600_000;
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
  const unattributed = [...temporalDelta].filter(([k, v]) => v > 0 && k.startsWith('_unknown_'));
  const kd = new Map([...b.kube!].map(([k, v]) => [k, v - (a.kube!.get(k) ?? 0)]));
  const writes = [...kd].filter(([k, v]) => v > 0 && k.split('\t')[1] === 'w');
  const controllerWrites = writes.filter(([k]) => k.split('\t')[2] !== 'other').reduce((s, [, v]) => s + v, 0);
  const reads = [...kd].filter(([k, v]) => v > 0 && k.split('\t')[1] === 'r').reduce((s, [, v]) => s + v, 0);
  return { hours, rows, total, unattributed, writes, controllerWrites, reads };
}
