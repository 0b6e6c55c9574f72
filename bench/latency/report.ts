/**
 * The latency benchmark's report: every figure printed, Glidepath's beside its floor with the target, and the
 * figures of docs/performance.md's table (bench/results/latency.json). A figure whose phase failed or gave no
 * samples is `-` with the reason.
 */
import { measured, type Figure } from '../record.js';
import type { Floor } from './floor.js';
import type { HistoryEvents, RolloutFigures } from './history.js';
import type { Applies, Idle, Rollbacks } from './rollouts.js';

/** A phase's result, or why it has none. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; reason: string };

export interface Outcomes {
  applies: Outcome<Applies>;
  atOnce: Outcome<RolloutFigures>;
  idle: Outcome<Idle>;
  alone: Outcome<RolloutFigures>;
  rollbacks: Outcome<Rollbacks>;
  floor: Outcome<Floor>;
  floorAtOnce: Outcome<Floor>;
  historyEvents: Outcome<HistoryEvents>;
}

/** The value of a phase that ran; else the reason it has none, thrown for the figure that needs it. */
const value = <T>(o: Outcome<T>): T => {
  if (!o.ok) throw new Error(o.reason);
  return o.value;
};

const pct = (xs: number[], p: number) => {
  if (!xs.length) throw new Error('no samples');
  return [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
};
const max = (xs: number[]) => pct(xs, 100);
const ms = (x: number) => `${x.toFixed(0)} ms`;
const stats = (xs: number[]) => `p50 ${ms(pct(xs, 50))}, p95 ${ms(pct(xs, 95))}, max ${ms(max(xs))}`;
/** How much more than the floor at percentile `p`: `+110 ms`. */
const above = (xs: number[], base: number[], p: number) => {
  const d = pct(xs, p) - pct(base, p);
  return `${d >= 0 ? '+' : ''}${ms(d)}`;
};
const over = (xs: number[], base: number[], p: number) =>
  `${above(xs, base, p)} (×${(pct(xs, p) / pct(base, p)).toFixed(2)})`;

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Prints `label` and what `compute` says, or `-` and why it could not. */
const show = (label: string, compute: () => string) => {
  try {
    console.log(`${label}${compute()}`);
  } catch (err) {
    console.log(`${label}- (${reasonOf(err)})`);
  }
};

/** The floor's rollouts that failed, when some did: the figures beside it have fewer samples. */
const floorNote = (f: Outcome<Floor>) =>
  f.ok && f.value.failures.length
    ? `the floor from ${f.value.rollouts - f.value.failures.length} of ${f.value.rollouts} rollouts (${f.value.failures[0]})`
    : undefined;

export function printReport(o: Outcomes, resources: number, idleSeconds: number): void {
  const { applies, atOnce, idle, alone, rollbacks, floor, floorAtOnce, historyEvents } = o;
  console.log(
    `\nGlidepath benchmark: ${resources} resources, each v1 → v2 Progressive (2 steps of 1 s), idle window ${idleSeconds} s`,
  );
  show('apply → versioned Deployment exists:   ', () => {
    const a = value(applies);
    return `p50 ${ms(pct(a.applyToDeployment, 50))}, p95 ${ms(pct(a.applyToDeployment, 95))}  (each on a settled controller; its first resource after start ${ms(a.firstAfterStart)})`;
  });
  show('Deployment available → first ramp set:  ', () => {
    const f = value(atOnce).availableToRouting;
    return `p50 ${ms(pct(f, 50))}, p95 ${ms(pct(f, 95))}  (includes the workers' own start-up until they poll)`;
  });
  show('available and polling → routing changed: ', () => {
    const f = value(atOnce).readyToRouting;
    return `p50 ${ms(pct(f, 50))}, p95 ${ms(pct(f, 95))}  (n=${f.length})`;
  });
  show('step transition beyond its pause:      ', () => {
    const f = value(atOnce);
    return `p50 ${ms(pct(f.steps, 50))}, p95 ${ms(pct(f.steps, 95))}  (n=${f.steps.length}); the last (set current): p50 ${ms(pct(f.lastSteps, 50))}, p95 ${ms(pct(f.lastSteps, 95))}`;
  });
  show(
    'idle: history events per resource:     ',
    () =>
      `${max(value(idle).events)} in ${idleSeconds} s (a resync round every hour: a read of the resource as an activity, its repairs as local ones)`,
  );
  show('idle: Kubernetes writes (resources, Deployments, Events): ', () => `${value(idle).writes} in ${idleSeconds} s`);
  show('rollback control → answered, routing changed: ', () => {
    const r = value(rollbacks);
    return `p50 ${ms(pct(r.answered, 50))}, max ${ms(max(r.answered))}  (server clock, update accepted → set-current done: p50 ${ms(pct(r.onServerClock, 50))}; n=${r.answered.length})`;
  });
  // A set-current's floor on 1.30+ includes the reads until the routing reached the task queues (floor.ts).
  const floorLines = (f: Outcome<Floor>) => {
    show('  describe:                                   ', () => stats(value(f).describe));
    show('  describe + first ramp, v2 just registered:  ', () => stats(value(f).firstRamp));
    show('  describe + ramp step change (1 s later):    ', () => stats(value(f).stepRamp));
    show('  describe + set current (1 s later), in force: ', () => stats(value(f).setCurrent));
    show('  describe + set current back to v1 (2 s later), in force: ', () => stats(value(f).rollback));
  };
  const besideFloor = (g: Outcome<RolloutFigures>, f: Outcome<Floor>) => {
    show(
      "  a step's transition (to the next ramp) beyond its pause vs a ramp step change: ",
      () =>
        `${over(value(g).steps, value(f).stepRamp, 50)} p50, ${over(value(g).steps, value(f).stepRamp, 95)} p95  (target ≤ +50 ms p50, ≤ +150 ms p95)`,
    );
    show(
      "  the last step's transition (set current) beyond its pause vs set current:     ",
      () =>
        `${over(value(g).lastSteps, value(f).setCurrent, 50)} p50, ${over(value(g).lastSteps, value(f).setCurrent, 95)} p95`,
    );
    show(
      '  available and polling → routing changed vs a first ramp just registered:     ',
      () => `${over(value(g).readyToRouting, value(f).firstRamp, 50)} p50  (target ≤ +100 ms)`,
    );
    show("    of which Glidepath's own in a step (timer fired → routing call started, the rest is the call): ", () => {
      const d = value(g).dispatch;
      return `p50 ${ms(pct(d, 50))}, p95 ${ms(pct(d, 95))}`;
    });
    const note = floorNote(f);
    if (note) console.log(`  (${note})`);
  };
  const floorCount = (f: Outcome<Floor>) => (f.ok ? f.value.rollouts - f.value.failures.length : 0);
  console.log(
    `\nThe server's floor: raw calls on worker deployments of their own, in a rollout's order and spacing, one at a time (n=${floorCount(floor)}):`,
  );
  floorLines(floor);
  console.log(
    `The same, ${resources} worker deployments at once, as Glidepath rolled out ${resources} resources at once (rollbacks excepted: those ran one at a time):`,
  );
  floorLines(floorAtOnce);
  console.log(`Glidepath beside its floor, ${resources} at once (target):`);
  besideFloor(atOnce, floorAtOnce);
  console.log(
    `Glidepath beside its floor one at a time, ${Math.min(resources, 5)} resources each rolled out v1 → v2 alone (target):`,
  );
  besideFloor(alone, floor);
  show(
    '  rollback (server clock: update accepted → set current done) vs set current back: ',
    () => `${over(value(rollbacks).onServerClock, value(floor).rollback, 50)} p50  (target ≤ +100 ms)`,
  );
  show(
    '  apply → versioned Deployment exists: ',
    () =>
      `${stats(value(applies).applyToDeployment)}  (target p50 ≤ 50 ms, p95 ≤ 150 ms; each applied once the one before was Ready)`,
  );
  show('  history events per Progressive step: ', () => {
    const e = value(historyEvents).perStep;
    return `p50 ${pct(e, 50)}, max ${max(e)}  (target ≤ 40; n=${e.length}: a ramp's call to the next routing call)`;
  });
  if (historyEvents.ok && historyEvents.value.perBringUp.length) {
    const e = historyEvents.value.perBringUp;
    console.log(
      `  history events of a new version's bring-up (v1 current → v2's first ramp: apply, Deployment available, registration): p50 ${pct(e, 50)}, max ${max(e)}`,
    );
  }
}

/** The figures of docs/performance.md's table, in its order. */
export function latencyFigures(o: Outcomes, resources: number, idleSeconds: number): Figure[] {
  const { applies, atOnce, idle, alone, rollbacks, floor, floorAtOnce, historyEvents } = o;
  const many = resources === 10 ? 'ten' : String(resources);
  const [alone1, atOnceN] = [floorNote(floor), floorNote(floorAtOnce)];
  return [
    measured('apply → versioned Deployment exists', 'p50 ≤ 50 ms, p95 ≤ 150 ms', () => {
      const a = value(applies).applyToDeployment;
      return `p50 ${ms(pct(a, 50))}, p95 ${ms(pct(a, 95))}`;
    }),
    measured("the same, first resource after the controller's start", undefined, () =>
      ms(value(applies).firstAfterStart),
    ),
    measured(
      'step transition beyond its pause, alone, vs floor',
      '≤ +50 ms p50, ≤ +150 ms p95',
      () =>
        `${above(value(alone).steps, value(floor).stepRamp, 50)} p50, ${above(value(alone).steps, value(floor).stepRamp, 95)} p95`,
      alone1,
    ),
    measured("Glidepath's own part of a step, alone", undefined, () => `${ms(pct(value(alone).dispatch, 50))} p50`),
    measured(
      'last step (set current), alone, vs floor',
      undefined,
      () => `${above(value(alone).lastSteps, value(floor).setCurrent, 50)} p50`,
      alone1,
    ),
    measured(
      'available and polling → routing changed, alone, vs floor',
      '≤ +100 ms',
      () => `${above(value(alone).readyToRouting, value(floor).firstRamp, 50)} p50`,
      alone1,
    ),
    measured(
      'rollback, vs floor',
      '≤ +100 ms',
      () => `${above(value(rollbacks).onServerClock, value(floor).rollback, 50)} p50`,
      alone1,
    ),
    measured('rollback control sent → answered, routing changed', undefined, () => {
      const r = value(rollbacks);
      return `p50 ${ms(pct(r.answered, 50))} (${ms(pct(r.onServerClock, 50))} on the server's clock)`;
    }),
    measured(
      `step transition, ${many} at once, vs floor at the same concurrency`,
      '≤ +50 ms p50',
      () => `${above(value(atOnce).steps, value(floorAtOnce).stepRamp, 50)} p50`,
      atOnceN,
    ),
    measured(
      `available and polling → routing changed, ${many} at once, vs floor`,
      '≤ +100 ms',
      () => `${above(value(atOnce).readyToRouting, value(floorAtOnce).firstRamp, 50)} p50`,
      atOnceN,
    ),
    measured(
      `Glidepath's own part of a step, ${many} at once`,
      undefined,
      () => `${ms(pct(value(atOnce).dispatch, 50))} p50`,
    ),
    measured('history events per Progressive step', '≤ 40', () => {
      const e = value(historyEvents).perStep;
      return `${pct(e, 50)} p50, ${max(e)} max`;
    }),
    measured('idle: history events and Kubernetes writes', '0 writes', () => {
      const i = value(idle);
      return `${max(i.events)} and ${i.writes} in ${idleSeconds} s`;
    }),
  ];
}
