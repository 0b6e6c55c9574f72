/**
 * The scale benchmark's report: how long each phase took, what the controllers cost (memory, CPU, Temporal and
 * Kubernetes requests) and what failed.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { delta, kubeRequestsMetric } from '../../scripts/servers/metrics.js';
import { controllerCount, controllerNamespace, goneTimeoutMs, resources, routingChanges, steps } from './options.js';
import {
  busiestOver,
  callsOf,
  controllerCallsBetween,
  f0,
  f1,
  fullTicks,
  idleCost,
  memoryAndCpu,
  ownTotals,
  peak,
  peakOver,
  pct,
  perResource,
  rates,
  secs,
  totals,
} from './analysis.js';
import { dir, mb, memoryAtPeak } from './processes.js';
import { attributionNote, byOwn, ownRequestMetrics, sampler, ticks } from './sampling.js';
import type { Run } from './run.js';

/** Prints the report of `run`. */
export function printReport(run: Run): void {
  const { t0, phase1, phase1Created, phase1End, phase2, phase2Patched, phase2End, goneEnd } = run;
  const { created, patched, ready, current2, gone, persistenceBefore, persistenceAfter, idle } = run;
  const phase1Times = perResource(created, ready);
  const phase2Times = perResource(patched, current2);
  const goneTimes = perResource(patched, gone);
  const { runTicks, peakRss, startRss, cpuMs } = memoryAndCpu(phase1, goneEnd);

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
      const ts = fullTicks(from - 1000, to + 1000);
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
    console.log(
      `  Temporal calls per Progressive rollout (phase 2 per resource, the workers' polls and completions included): ${f1(p2.temporal / resources)}; ` +
        `per step ${f1(p2.temporal / resources / routingChanges)} (its ${routingChanges} routing changes: ${steps.length} ramps and the set-current)`,
    );
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
  const failed = (op: string) => callsOf(phase1, goneEnd, op);
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
      `failed scrapes ${sampler.errors} (of ${ticks.length}, p50 ${f0(
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
    const { hours, rows, total, unattributed, writes, controllerWrites, reads } = idleCost(idle.window);
    const perResourceHour = (n: number) => (n / resources / hours).toFixed(2);
    console.log(
      `\nIdle: ${secs(b.at - a.at)} with ${resources} resources (after ${secs(idle.quietAfterMs)} to settle), per resource-hour (count / ${resources} / ${hours.toFixed(4)} h):`,
    );
    console.log(`  Temporal RPCs from the controller: ${perResourceHour(total)} per resource-hour (target ≤ 12)`);
    console.log(
      `    ${'namespace  operation'.padEnd(60)} ${'count'.padStart(7)} ${'less server bg'.padStart(15)} ${'per res-hour'.padStart(13)}`,
    );
    for (const [k, v, own] of rows.sort((x, y) => y[2] - x[2]))
      console.log(
        `    ${k.padEnd(60)} ${String(v).padStart(7)} ${String(own).padStart(15)} ${perResourceHour(own).padStart(13)}`,
      );
    if (unattributed.length)
      console.log(
        `    not attributable (no namespace): ${unattributed.map(([k, v]) => `${k.split('\t')[1]} ${v}`).join(', ')}`,
      );
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
