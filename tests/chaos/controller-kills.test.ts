/**
 * 20 rollouts at once (Progressive, Manual promoted by the test, AllAtOnce, some with a gate) while the
 * controller — a separate process, what `npm start` runs — is SIGKILLed and started again at 12 random moments
 * (at least 10; seeded: `CHAOS_SEED=<seed>` replays the same delays between start, kill and restart;
 * `CHAOS_KILLS=<n>` for a soak). Everything finishes as specified: v2 current and Ready everywhere, exactly one
 * Deployment per (resource, build) ever, every Progressive step's ramp completed once and in order across all
 * runs of the workflow chain, every v1 drained, scaled down and deleted, and no Deployment lost its pods while
 * its version was not drained.
 */
import proto from '@temporalio/proto';
import { group, version } from '../../api/common.js';
import { rolloutWorkflowId, workerDeploymentName } from '../../api/names.js';
import { promote } from '../../workflows/messages.js';
import {
  apply,
  deployments,
  eventually,
  plural,
  resource,
  routing,
  startRolloutEnv,
  twdStatus,
  versionStatus,
  workflowHandle,
  type RolloutEnv,
} from '../harness/rollout-env.js';
import {
  chainReport,
  chaosDir,
  chaosSeed,
  DeploymentWatch,
  killController,
  prng,
  sleep,
  startControllerProcess,
  type ControllerProcess,
} from './chaos-harness.js';

/** Kills at random moments, spread over the rollouts (and, if they finish first, over the sunsets); `CHAOS_KILLS` for a soak. */
const killCount = Number(process.env.CHAOS_KILLS ?? 12);
/** At least this many, even if all is done sooner (the last ones then hit finished rollouts, which must stay so). */
const minKills = 10;
/**
 * A bound, not a window (the waits end on their condition): each kill stalls the long waits it interrupts for their
 * 60 s heartbeat timeout, and the last kills can come four minutes in on a loaded machine.
 */
const waitMs = 10 * 60_000;
const steps = [
  { rampPercentage: 25, pauseDuration: '2s' },
  { rampPercentage: 75, pauseDuration: '2s' },
];
const gate = { workflowType: 'exampleGate', input: { checks: ['smoke'] }, timeout: '2m' };

type Kind = { strategy: 'Progressive' | 'Manual' | 'AllAtOnce'; gate?: boolean };
const kinds = new Map<string, Kind>([
  ...Array.from({ length: 8 }, (_, i) => [`prog-${i}`, { strategy: 'Progressive', gate: i >= 6 }] as const),
  ...Array.from({ length: 6 }, (_, i) => [`man-${i}`, { strategy: 'Manual' }] as const),
  ...Array.from({ length: 6 }, (_, i) => [`aao-${i}`, { strategy: 'AllAtOnce', gate: i === 5 }] as const),
]);
const names = [...kinds.keys()];

let env: RolloutEnv;
let watch: DeploymentWatch;
let controller: ControllerProcess | undefined;
let logFile: string;

function spec(name: string, v: string) {
  const kind = kinds.get(name)!;
  const obj = resource(env, name, {
    strategy: kind.strategy,
    steps: kind.strategy === 'Progressive' ? steps : undefined,
    env: { VERSION: v },
    replicas: 1,
    sunset: { scaledownDelay: '0s', deleteDelay: '1s' },
  });
  if (kind.gate) (obj.spec.rollout as Record<string, unknown>).gate = gate;
  return obj;
}

const startController = async () => {
  controller = await startControllerProcess({ namespace: env.namespace, logFile });
};

beforeAll(async () => {
  env = await startRolloutEnv('chaos-kill', { inProcessController: false });
  logFile = `${chaosDir(env.namespace)}/controller.log`;
  watch = new DeploymentWatch(env.kc, env.namespace);
  await watch.start();
  await startController();
}, 5 * 60_000);
afterAll(async () => {
  await killController(controller);
  await watch?.stop();
  await env?.stop();
}, 5 * 60_000);

/** Phases of all resources now, counted: where the rollouts were when the controller was killed. */
async function phases(): Promise<string> {
  const list = (await env.custom.listNamespacedCustomObject({ group, version, namespace: env.namespace, plural })) as {
    items: { status?: { phase?: string } }[];
  };
  const counts = new Map<string, number>();
  for (const item of list.items)
    counts.set(item.status?.phase ?? '-', (counts.get(item.status?.phase ?? '-') ?? 0) + 1);
  return [...counts].map(([p, n]) => `${p} ${n}`).join(', ');
}

/** For a failure's report: each resource's status, its workflow's pending work and its last events. */
async function whereStuck(which: string[]): Promise<string> {
  const lines: string[] = [];
  for (const n of which) {
    try {
      const s = await twdStatus(env, n);
      const handle = workflowHandle(env, n);
      const d = await handle.describe();
      const pending = (d.raw.pendingActivities ?? []).map(
        (a) =>
          `${a.activityType?.name} attempt ${a.attempt} state ${a.state}${a.lastFailure?.message ? ` last failure: ${a.lastFailure.message}` : ''}`,
      );
      const events = ((await handle.fetchHistory()).events ?? []).slice(-12).map((e) => {
        const type =
          e.activityTaskScheduledEventAttributes?.activityType?.name ??
          e.workflowExecutionSignaledEventAttributes?.signalName ??
          '';
        return `${String(e.eventId)} ${e.eventTime?.seconds ? new Date(Number(e.eventTime.seconds) * 1000).toISOString().slice(11, 19) : ''} ${proto.temporal.api.enums.v1.EventType[e.eventType ?? 0]} ${type}`;
      });
      lines.push(
        `${n}: ${s?.phase} (${(s as { message?: string } | undefined)?.message ?? ''}); workflow ${d.status.name}, pending: ${pending.join('; ') || 'none'}\n    ${events.join('\n    ')}`,
      );
    } catch (err) {
      lines.push(`${n}: could not be described: ${(err as Error).message}`);
    }
  }
  return lines.join('\n');
}

test(
  `20 concurrent rollouts survive the controller SIGKILLed at ${killCount} random moments`,
  async () => {
    const seed = chaosSeed();
    console.log(`chaos seed: ${seed} (CHAOS_SEED=${seed} replays the same kill delays); controller log ${logFile}`);
    const random = prng(seed);

    // v1 everywhere, with a live controller.
    await Promise.all(names.map((n) => apply(env, spec(n, 'v1'))));
    const v1 = new Map<string, string>();
    await eventually(
      'every v1 current and Ready',
      async () => {
        for (const n of names.filter((x) => !v1.has(x))) {
          const s = await twdStatus(env, n);
          if (s?.phase === 'Ready' && s.currentVersion?.buildID) v1.set(n, s.currentVersion.buildID);
        }
        return v1.size === names.length;
      },
      waitMs,
      500,
    );

    // v2 everywhere; the controller killed and restarted at random moments meanwhile (killCount times, or fewer but at least minKills if all is done first).
    const started = Date.now();
    await Promise.all(names.map((n) => apply(env, spec(n, 'v2'))));
    let finished = false;
    const kills: string[] = [];
    let lastRestart = started;
    const chaos = (async () => {
      while (kills.length < killCount && !(finished && kills.length >= minKills)) {
        await sleep(500 + random() * 6000);
        const where = await phases().catch((err: Error) => `phases unknown: ${err.message}`);
        await killController(controller);
        kills.push(`kill ${kills.length + 1} at +${((Date.now() - started) / 1000).toFixed(1)} s: ${where}`);
        console.log(`chaos: ${kills.at(-1)}`);
        await sleep(random() * 2000);
        await startController();
        lastRestart = Date.now();
      }
    })();

    // The test is the operator: each Manual rollout is promoted once it waits for promotion.
    const promoted = new Set<string>();
    const promoter = (async () => {
      while (!finished) {
        for (const n of names.filter((x) => kinds.get(x)!.strategy === 'Manual' && !promoted.has(x))) {
          const s = await twdStatus(env, n).catch(() => undefined);
          const target = s?.targetVersion?.buildID;
          if (s?.phase === 'AwaitingPromotion' && target && target !== v1.get(n)) {
            await workflowHandle(env, n).signal(promote, { buildId: target });
            promoted.add(n);
          }
        }
        await sleep(500);
      }
    })();

    const v2 = new Map<string, string>();
    try {
      await eventually(
        'every v2 current and Ready',
        async () => {
          for (const n of names.filter((x) => !v2.has(x))) {
            const s = await twdStatus(env, n);
            const current = s?.currentVersion?.buildID;
            if (s?.phase === 'Ready' && current && current !== v1.get(n) && !s.targetVersion) v2.set(n, current);
          }
          return v2.size === names.length;
        },
        waitMs,
        1000,
      ).catch(async (err: Error) => {
        console.log(
          `chaos: not done after ${kills.length} kills (seed ${seed}):\n${kills.join('\n')}\n${await whereStuck(names.filter((x) => !v2.has(x)))}`,
        );
        throw err;
      });
      const rolledOut = Date.now();
      console.log(
        `chaos figure: 20 rollouts v1 → v2 done ${((rolledOut - started) / 1000).toFixed(1)} s after apply, with ${kills.length} controller kills meanwhile; ${kills.length === killCount ? `${((rolledOut - lastRestart) / 1000).toFixed(1)} s after the last restart` : 'before the last kill'}`,
      );

      await eventually(
        'every v1 drained, scaled down and deleted (Deployment and version)',
        async () => {
          for (const n of names) {
            const s = await twdStatus(env, n);
            if ((s?.deprecatedVersions ?? []).length > 0) return false;
            if ((await deployments(env, n)).has(v1.get(n)!)) return false;
            if (
              (await versionStatus(
                env.connection,
                process.env.TEMPORAL_NAMESPACE ?? 'default',
                workerDeploymentName(env.namespace, n),
                v1.get(n)!,
              )) !== 'NOT_FOUND'
            )
              return false;
          }
          return true;
        },
        waitMs,
        1000,
      ).catch(async (err: Error) => {
        console.log(
          `chaos: v1 not sunset after ${kills.length} kills (seed ${seed}):\n${kills.join('\n')}\n${await whereStuck(names)}`,
        );
        throw err;
      });
      console.log(
        `chaos figure: every v1 sunset ${((Date.now() - started) / 1000).toFixed(1)} s after apply, ${kills.length} kills so far`,
      );
    } finally {
      finished = true;
      await promoter;
      await chaos;
    }
    console.log(`chaos: ${kills.length} kills, seed ${seed}:\n${kills.join('\n')}`);
    expect(kills.length).toBeGreaterThanOrEqual(minKills);
    expect(promoted.size).toBe(6);

    // Still so with the controller running again after the last kill.
    for (const n of names) {
      expect((await routing(env, n)).current).toBe(v2.get(n));
      const s = await twdStatus(env, n);
      expect({ name: n, phase: s?.phase, current: s?.currentVersion?.buildID }).toEqual({
        name: n,
        phase: 'Ready',
        current: v2.get(n),
      });
    }

    // Exactly one Deployment per (resource, build) ever existed; each v1 was seen at 0 replicas, then deleted.
    const problems: string[] = [];
    for (const n of names) {
      const keys = [...watch.uids.keys()].filter((k) => k.startsWith(`${n}/`));
      const expected = [`${n}/${v1.get(n)}`, `${n}/${v2.get(n)}`];
      if (JSON.stringify(keys.sort()) !== JSON.stringify([...expected].sort()))
        problems.push(`${n}: Deployments seen for builds ${keys.join(', ')}`);
      for (const k of expected)
        if ((watch.uids.get(k)?.size ?? 0) !== 1)
          problems.push(`${k}: ${watch.uids.get(k)?.size ?? 0} Deployment uids`);
      if (!watch.scaledToZero.has(expected[0]!))
        problems.push(`${expected[0]}: never seen scaled to 0 before its deletion`);
      if (!watch.deleted.has(expected[0]!)) problems.push(`${expected[0]}: its deletion was not seen`);
    }

    // Each Progressive step's ramp completed once, in order, across every run of the chain; no other strategy ramped.
    const ramps: string[] = [];
    for (const n of names) {
      const report = await eventually(
        `the workflow chain of ${n}`,
        () => chainReport(env.client, rolloutWorkflowId(env.installation, env.namespace, n), v2.get(n)!),
        60_000,
        1000,
      );
      const want = kinds.get(n)!.strategy === 'Progressive' ? steps.map((s) => s.rampPercentage) : [];
      const timeouts =
        Object.entries(report.activityTimeouts)
          .map(([type, count]) => `${type} ${count}`)
          .join(', ') || 'none';
      ramps.push(
        `${n}: ${report.runs} run(s), ramps completed [${report.rampsCompleted.join(', ')}], setRamping scheduled ${report.rampsScheduled}×; timed out: workflow tasks ${report.workflowTaskTimeouts}, activities: ${timeouts}`,
      );
      if (JSON.stringify(report.rampsCompleted) !== JSON.stringify(want))
        problems.push(
          `${n}: ramps completed [${report.rampsCompleted.join(', ')}], want [${want.join(', ')}]:\n  ${report.summary.join('\n  ')}`,
        );
      const bad = report.taskFailures.filter((f) => !f.includes('UNHANDLED_COMMAND'));
      if (bad.length) problems.push(`${n}: workflow task failures: ${bad.join('; ')}`);
    }
    console.log(`chaos: ramps per resource:\n${ramps.join('\n')}`);
    expect(problems).toEqual([]);
    expect(env.violations).toEqual([]);
  },
  30 * 60_000,
);
