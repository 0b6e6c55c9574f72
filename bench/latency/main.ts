/**
 * `npm run bench [-- --no-record]`: the latencies and idle cost of rollouts, measured end to end against real
 * servers (started on free ports like the tests), the in-process controller and simulated pods. Prints figures;
 * asserts nothing. A run that completes writes its figures to bench/results/latency.json (not with --no-record),
 * which docs/performance.md's table is generated from.
 *
 *   apply → versioned Deployment exists      time from the create call until a watch sees the Deployment, each
 *                                             resource applied once the one before is Ready (the first after
 *                                             the controller's start printed on its own)
 *   available → routing changed               from the workflow's deploymentObserved(available) signal (and the
 *                                             version's registration) to its first ramp done
 *   step transition beyond its pause          from a step's timer firing to the next routing write done (recorded:
 *                                             an activity's completion, a local one's marker); for ten resources
 *                                             at once, then for five each rolled out alone
 *   idle cost                                 workflow history events and Kubernetes writes over an idle window
 *   rollback                                  the `rollback` update sent → answered (routing changed)
 *   the floor                                 the same routing calls made raw (describe + change) on the same
 *                                             server, in a rollout's order and spacing, one at a time and as many
 *                                             at once as the resources; Glidepath's figures beside the floor at
 *                                             the same concurrency (ten at once, or alone)
 *   history events per Progressive step       from a step's ramp call to the next routing call
 *
 * Each phase that fails is reported and the run goes on: the figures that need it are `-` with the reason.
 */
import { installRuntime } from '../../worker/controller.js';
import { commandLine, forServer, printFigures, recordResults, runFacts } from '../record.js';
import { runFloor, v2AfterV1Ms } from './floor.js';
import { historyEvents, merged, rolloutFigures } from './history.js';
import { latencyFigures, printReport, type Outcome, type Outcomes } from './report.js';
import { applyAll, createReady, idleWindow, rollbacks, rollOutV2 } from './rollouts.js';
import { sleep, startWorld, status } from './world.js';

const record = !process.argv.includes('--no-record');
const facts = runFacts();
installRuntime('ERROR');
const resources = Number(process.env.BENCH_RESOURCES ?? 10);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const verbose = !!process.env.BENCH_VERBOSE;
// Five resources each rolled out alone, five rollbacks, and the floor one at a time over as many.
const alone = Math.min(resources, 5);

// A failure nobody waits for (a worker's, a watch's) is reported; it ends no run.
process.on('unhandledRejection', (err) => console.error('unhandled failure (the run goes on):', err));

/** Runs a phase; its failure is printed and kept as the reason of the figures that need it. */
async function phase<T>(what: string, needs: Outcome<unknown>[], run: () => Promise<T>): Promise<Outcome<T>> {
  const missing = needs.find((n) => !n.ok);
  if (missing && !missing.ok) return { ok: false, reason: missing.reason };
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    const reason = `${what} failed: ${err instanceof Error ? err.message : String(err)}`;
    console.log(`  ${reason}`);
    return { ok: false, reason };
  }
}

const world = await startWorld();
try {
  const names = Array.from({ length: resources }, (_, i) => `r${i}`);
  const applies = await phase('applying', [], () => applyAll(world, resources, verbose));
  // v2 for every resource at once.
  const atOnce = await phase('the rollouts at once', [applies], async () => {
    const v1 = await Promise.all(names.map(async (name) => (await status(world, name))!.currentVersion!.buildID));
    await sleep(v2AfterV1Ms);
    const registered = await Promise.all(names.map((name, i) => rollOutV2(world, name, v1[i]!)));
    const figures = await Promise.all(
      names.map((name, i) =>
        rolloutFigures(world, name, v1[i]!, registered[i], applies.ok ? applies.value.appliedAt.get(name) : undefined, {
          apply: verbose && i < 3,
          ramp: verbose && i < 3,
          steps: verbose && i < 2,
        }),
      ),
    );
    return merged(figures);
  });
  const idle = await phase('the idle window', [applies], () => idleWindow(world, names, idleSeconds));
  // One at a time: each resource's v1 → v2 alone, as the floor's first figures are made (nothing else in flight).
  const aloneFigures = await phase('the rollouts alone', [], async () => {
    const figures = [];
    for (let i = 0; i < alone; i++) {
      const name = `s${i}`;
      const v1 = await createReady(world, name);
      await sleep(v2AfterV1Ms);
      figures.push(
        await rolloutFigures(world, name, v1, await rollOutV2(world, name, v1), undefined, {
          ramp: verbose && i < 2,
          steps: verbose && i < 2,
        }),
      );
    }
    return merged(figures);
  });
  const outcomes: Outcomes = {
    applies,
    atOnce,
    idle,
    alone: aloneFigures,
    rollbacks: await phase('the rollbacks', [], () => rollbacks(world, alone, verbose)),
    floor: await phase('the floor one at a time', [], () => runFloor(world, 'floor', alone, false)),
    floorAtOnce: await phase('the floor at once', [], () => runFloor(world, 'floor-at-once', resources, true)),
    historyEvents: await phase('reading the histories', [atOnce], () => historyEvents(world, names)),
  };
  printReport(outcomes, resources, idleSeconds);
  const figures = latencyFigures(outcomes, resources, idleSeconds);
  printFigures(figures);
  if (record) {
    const on = forServer('latency', figures);
    console.log(
      `written to ${recordResults(on.name, { ...facts, command: commandLine('bench'), figures: on.figures })}`,
    );
  }
} finally {
  await world.stop();
}
process.exit(0);
