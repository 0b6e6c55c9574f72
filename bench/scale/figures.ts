/**
 * The scale benchmark's figures in docs/performance.md's table (bench/results/scale-<N>.json). A figure the run
 * could not measure is `-` with the reason.
 */
import { measured, type Figure } from '../record.js';
import { callsOf, memoryAndCpu, idleCost, ownTotals, pct, peakOver, perResource, totals } from './analysis.js';
import { controllerCount, resources, routingChanges, values } from './options.js';
import type { Run } from './run.js';
import { byOwn } from './sampling.js';

const number = (x: number, digits = 0) => {
  if (!Number.isFinite(x)) throw new Error('no samples');
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
};
const secs = (ms: number) => `${number(ms / 1000, 1)} s`;
const mb = (kb: number) => `${number(kb / 1024)} MB`;
/** The controllers' own count of their calls (their /metrics) over a phase. */
const own = (from: number, to: number) => {
  const o = ownTotals(from, to);
  if (o) return { ...o, peak1s: peakOver(from, to, 1, byOwn), peak5s: peakOver(from, to, 5, byOwn) };
  throw new Error(
    values['without-own-count'] ? "the controllers' /metrics were not read (--without-own-count)" : 'no samples',
  );
};

export function scaleFigures(run: Run): Figure[] {
  const { phase1, phase1End, phase2, phase2End, goneEnd, created, patched, ready, current2, gone, idle } = run;
  const at = `${number(resources)} at once${controllerCount > 1 ? ` on ${controllerCount} controllers` : ''}`;
  const phase = (start: number, end: number, times: number[]) =>
    `wall ${secs(end - start)} (p50 ${secs(pct(times, 50))}), ${times.length}/${resources}`;
  const { peakRss, startRss, cpuMs } = memoryAndCpu(phase1, goneEnd);
  const perRollout = () => {
    const p2 = totals(phase2, goneEnd);
    if (!p2) throw new Error('no samples of the dev server in phase 2');
    return p2.temporal / resources;
  };
  const figures = [
    measured(`${at}, phase 1: create → all Ready with v1 current`, 'all complete', () =>
      phase(phase1, phase1End, perResource(created, ready)),
    ),
    measured(`${at}, phase 2: patch → v2 current`, 'all complete', () =>
      phase(phase2, phase2End, perResource(patched, current2)),
    ),
    measured(`${at}, phase 2: patch → old version gone`, 'all complete', () =>
      phase(phase2, goneEnd, perResource(patched, gone)),
    ),
    measured(`${at}: controller RSS peak`, '≤ 300 MB', () => `${mb(peakRss)} (${mb(startRss)} at start)`),
    measured(`${at}: most Temporal calls within any 1 s (the controller's own count)`, '≤ 50', () => {
      const [a, b] = [own(phase1, phase1End), own(phase2, goneEnd)];
      return `${number(Math.max(a.peak1s, b.peak1s))}; ${number(Math.max(a.peak5s, b.peak5s), 1)} a second over 5 s`;
    }),
    measured(`${at}: Temporal calls per Progressive rollout`, '≤ 40', () => number(perRollout(), 1)),
    measured(`${at}: Temporal calls per step of a Progressive rollout`, undefined, () =>
      number(perRollout() / routingChanges, 1),
    ),
    measured(`${at}: Temporal calls counted`, undefined, () => {
      const [a, b] = [own(phase1, phase1End), own(phase2, goneEnd)];
      return `${number(a.calls)} (phase 1), ${number(b.calls)} (phase 2)`;
    }),
    measured(
      `${at}: controller CPU`,
      undefined,
      () => `${secs(cpuMs)} over ${secs(goneEnd - phase1)} (${number(cpuMs / (goneEnd - phase1), 1)} cores)`,
    ),
    measured(
      `${at}: failures`,
      '0 workflow tasks',
      () =>
        `${number(callsOf(phase1, goneEnd, 'RespondWorkflowTaskFailed'))} workflow tasks, ${number(callsOf(phase1, goneEnd, 'RespondActivityTaskFailed'))} activity attempts`,
    ),
  ];
  if (!idle) return figures;
  const cost = idleCost(idle.window);
  const perResourceHour = (n: number) => number(n / resources / cost.hours, 1);
  const resourcesOn = `${number(resources)} resources${controllerCount > 1 ? ` on ${controllerCount} controllers` : ''}`;
  return [
    ...figures,
    measured(`idle: Temporal calls per resource-hour, ${resourcesOn}`, '≤ 12', () => perResourceHour(cost.total)),
    measured(`idle: Kubernetes writes per resource-hour, ${resourcesOn}`, '0', () =>
      perResourceHour(cost.controllerWrites),
    ),
  ];
}
