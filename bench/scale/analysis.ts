/**
 * The scale benchmark's arithmetic over its samples (./sampling.ts): rates, totals and peaks over a phase, by the
 * dev server's count or by the controllers' own.
 */
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
