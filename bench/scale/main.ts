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
 * A run that completes writes its figures to bench/results/scale-<N>.json (scale-<N>-idle.json with --idle), which
 * docs/performance.md's table is generated from; --no-record: not.
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
import { commandLine, forServer, printFigures, recordResults, runFacts } from '../record.js';
import { scaleFigures } from './figures.js';
import { goneTimeoutMs, idleSeconds, phaseTimeoutMs, resources, values } from './options.js';
import { cleanup } from './processes.js';
import { printReport } from './report.js';
import { run } from './run.js';
import { sampler } from './sampling.js';

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const facts = runFacts();

// The whole run is bounded: phases, settling and idle, plus start-up and slack.
const hardLimitMs = 3 * phaseTimeoutMs + goneTimeoutMs + (idleSeconds + 300) * 1000 + 600_000;
const hardLimit = setTimeout(() => {
  console.error(`\nthe benchmark ran over its limit (${secs(hardLimitMs)}): stopping`);
  void cleanup(true).finally(() => process.exit(3));
}, hardLimitMs);
hardLimit.unref();

try {
  const done = await run();
  printReport(done);
  const figures = scaleFigures(done);
  printFigures(figures);
  if (!values['no-record']) {
    const on = forServer(`scale-${resources}${idleSeconds ? '-idle' : ''}`, figures);
    console.log(
      `written to ${recordResults(on.name, { ...facts, command: commandLine('bench:scale'), figures: on.figures })}`,
    );
  }
  await cleanup(values.keep ?? false);
  process.exit(0);
} catch (err) {
  console.error(`\nbenchmark failed: ${(err as Error).stack ?? String(err)}`);
  sampler.running = false;
  await cleanup(true);
  process.exit(1);
}
