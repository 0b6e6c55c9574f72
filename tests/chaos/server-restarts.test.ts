/**
 * The servers Glidepath depends on go away in the middle of a Progressive step and come back:
 * (a) the Temporal dev server, stopped and started again on the same port and database file;
 * (b) kube-apiserver, stopped for 60 s (etcd keeps running) and started again with the same command line.
 * Each test has servers of its own, so the faults do not reach the other tests. After each fault the rollout
 * completes (steps in order, each ramp completed once), the status is right and v1 is sunset; no Deployment
 * lost its pods while its version was not drained. The time from each fault's end to the rollout's
 * completion is printed as a `chaos figure:` line.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { group, version } from '../../api/common.js';
import { rolloutWorkflowId, workerDeploymentName } from '../../api/names.js';
import { startKube } from '../../scripts/servers/kube-server.js';
import { freePort, stopProcesses, type ServerProcess } from '../../scripts/servers/processes.js';
import { startTemporal } from '../../scripts/servers/temporal-server.js';
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
  type RolloutEnv,
} from '../harness/rollout-env.js';
import {
  chainReport,
  chaosDir,
  commandLineOf,
  DeploymentWatch,
  killController,
  portClosed,
  relaunch,
  sleep,
  startControllerProcess,
  type ControllerProcess,
} from './chaos-harness.js';

const waitMs = 5 * 60_000;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A fresh folder for a test's own servers. */
function freshDir(name: string): string {
  const dir = chaosDir(`${name}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  return chaosDir(`${name}-${process.pid}`);
}

/** Sets env variables for the duration of `work` (startRolloutEnv reads KUBECONFIG and TEMPORAL_ADDRESS). */
async function withEnv<T>(vars: Record<string, string>, work: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await work();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

interface World {
  env: RolloutEnv;
  watch: DeploymentWatch;
  controller?: ControllerProcess;
  logFile: string;
  controllerEnv: Record<string, string>;
}

async function startWorld(label: string, controllerEnv: Record<string, string>): Promise<World> {
  const env = await startRolloutEnv(label, { inProcessController: false });
  const watch = new DeploymentWatch(env.kc, env.namespace);
  await watch.start();
  const logFile = `${chaosDir(env.namespace)}/controller.log`;
  const controller = await startControllerProcess({ namespace: env.namespace, logFile, env: controllerEnv });
  return { env, watch, controller, logFile, controllerEnv };
}

async function stopWorld(w: World | undefined): Promise<void> {
  if (!w) return;
  await killController(w.controller);
  await w.watch.stop();
  await w.env.stop();
}

/** v1 rolled out and Ready, then v2 applied and ramping at the first step; returns v1's build ID. */
async function rollToFirstStep(
  w: World,
  name: string,
  steps: { rampPercentage: number; pauseDuration: string }[],
): Promise<string> {
  const spec = (v: string) =>
    resource(w.env, name, {
      strategy: 'Progressive',
      steps,
      env: { VERSION: v },
      sunset: { scaledownDelay: '0s', deleteDelay: '1s' },
    });
  await apply(w.env, spec('v1'));
  const v1 = await eventually(
    'v1 current and Ready',
    async () => {
      const s = await twdStatus(w.env, name);
      return s?.phase === 'Ready' ? s.currentVersion?.buildID : undefined;
    },
    waitMs,
    200,
  );
  await apply(w.env, spec('v2'));
  // In the step: ramped in Temporal, and the status Ramping (written in the task that ramps; its timer is recorded as
  // that task completes, a moment later).
  const first = steps[0]!.rampPercentage;
  await eventually(
    `the first step (${first}%) in Temporal and in the status`,
    async () => {
      const r = await routing(w.env, name);
      const s = await twdStatus(w.env, name);
      return r.ramping && r.percentage === first && s?.phase === 'Ramping' && s.targetVersion?.rampPercentage === first;
    },
    waitMs,
    100,
  );
  return v1;
}

/** Waits until the resource's status says v2 is current and Ready with nothing in flight; returns v2 and when. */
async function rolledOut(w: World, name: string, v1: string): Promise<{ v2: string; at: number }> {
  const v2 = await eventually(
    'v2 current and Ready in the status',
    async () => {
      const s = await twdStatus(w.env, name);
      const current = s?.currentVersion?.buildID;
      return s?.phase === 'Ready' && current && current !== v1 && !s.targetVersion ? current : undefined;
    },
    waitMs,
    100,
  );
  return { v2, at: Date.now() };
}

/** Waits until v1 is gone everywhere: status, Deployment, version in Temporal. */
async function v1Sunset(w: World, name: string, v1: string): Promise<number> {
  await eventually(
    'v1 drained, scaled down and deleted',
    async () => {
      const s = await twdStatus(w.env, name);
      if ((s?.deprecatedVersions ?? []).length > 0) return false;
      if ((await deployments(w.env, name)).has(v1)) return false;
      return (
        (await versionStatus(
          w.env.connection,
          process.env.TEMPORAL_NAMESPACE ?? 'default',
          workerDeploymentName(w.env.namespace, name),
          v1,
        )) === 'NOT_FOUND'
      );
    },
    waitMs,
    200,
  );
  return Date.now();
}

/** What must hold at the end: the status in full, the ramps of the whole chain, one Deployment per build, no violation. */
async function expectAllWell(w: World, name: string, v1: string, v2: string, steps: { rampPercentage: number }[]) {
  const obj = (await w.env.custom.getNamespacedCustomObject({
    group,
    version,
    namespace: w.env.namespace,
    plural,
    name,
  })) as {
    metadata: { generation: number };
    status: {
      observedGeneration?: number;
      phase?: string;
      currentVersion?: { buildID: string };
      targetVersion?: unknown;
      deprecatedVersions?: unknown[];
      conditions?: { type: string; status: string }[];
    };
  };
  expect({
    observedGeneration: obj.status.observedGeneration,
    phase: obj.status.phase,
    current: obj.status.currentVersion?.buildID,
    target: obj.status.targetVersion,
    deprecated: obj.status.deprecatedVersions ?? [],
    ready: obj.status.conditions?.find((c) => c.type === 'Ready')?.status,
    progressing: obj.status.conditions?.find((c) => c.type === 'Progressing')?.status,
  }).toEqual({
    observedGeneration: obj.metadata.generation,
    phase: 'Ready',
    current: v2,
    target: undefined,
    deprecated: [],
    ready: 'True',
    progressing: 'False',
  });
  expect(await routing(w.env, name)).toEqual({ current: v2, ramping: undefined, percentage: 0 });

  const report = await eventually(
    'the workflow chain',
    () => chainReport(w.env.client, rolloutWorkflowId(w.env.installation, w.env.namespace, name), v2),
    60_000,
    1000,
  );
  console.log(
    `chaos: ${name}: ${report.runs} run(s); ramps completed [${report.rampsCompleted.join(', ')}]; setRamping scheduled ${report.rampsScheduled}×\n  ${report.summary.join('\n  ')}`,
  );
  expect(report.rampsCompleted).toEqual(steps.map((s) => s.rampPercentage));
  expect(report.taskFailures.filter((f) => !f.includes('UNHANDLED_COMMAND'))).toEqual([]);

  for (const b of [v1, v2])
    expect({ build: b, uids: w.watch.uids.get(`${name}/${b}`)?.size }).toEqual({ build: b, uids: 1 });
  expect([...w.watch.uids.keys()].sort()).toEqual([`${name}/${v1}`, `${name}/${v2}`].sort());
  expect(w.env.violations).toEqual([]);
}

test(
  'the Temporal dev server restarted mid-step (same database file): the rollout completes, nothing lost',
  async () => {
    const dir = freshDir('temporal');
    const dbFile = join(dir, 'temporal.db');
    const port = await freePort();
    let server: ServerProcess | undefined = (await startTemporal({ dir, port, dbFile })).process;
    const address = `127.0.0.1:${port}`;
    let w: World | undefined;
    let passed = false;
    try {
      w = await withEnv({ TEMPORAL_ADDRESS: address }, () =>
        startWorld('chaos-temporal', { TEMPORAL_ADDRESS: address }),
      );
      const steps = [
        { rampPercentage: 20, pauseDuration: '15s' },
        { rampPercentage: 60, pauseDuration: '3s' },
      ];
      const v1 = await rollToFirstStep(w, 'svc', steps);
      const stepSeen = Date.now();

      // The fault: SIGTERM (SIGKILL after 5 s), down for 15 s, then the same port and database file again.
      const faultAt = Date.now();
      await stopProcesses([server]);
      server = undefined;
      await portClosed(port);
      await sleep(15_000);
      server = (await startTemporal({ dir, port, dbFile })).process;
      const back = Date.now();
      console.log(`chaos: Temporal dev server down ${seconds(back - faultAt)} (log ${dir})`);

      const { v2, at } = await rolledOut(w, 'svc', v1);
      const sunset = await v1Sunset(w, 'svc', v1);
      const pausesLeft = Math.max(0, stepSeen + 15_000 - back) + 3_000;
      console.log(
        `chaos figure: Temporal dev server restarted mid-step (down ${seconds(back - faultAt)}): rollout complete (v2 current, Ready) ${seconds(at - back)} after it was back (of which ≈ ${seconds(pausesLeft)} the steps' own remaining pauses); v1 sunset ${seconds(sunset - back)} after`,
      );
      await expectAllWell(w, 'svc', v1, v2, steps);
      passed = true;
    } finally {
      await stopWorld(w);
      if (server) await stopProcesses([server]);
      if (passed) rmSync(dir, { recursive: true, force: true }); // a failed run keeps its database and log
    }
  },
  15 * 60_000,
);

test(
  'kube-apiserver stopped for 60 s mid-step (etcd kept): the rollout completes and the status is right',
  async () => {
    const dir = freshDir('kube');
    const kube = await startKube({ dir, crds: true });
    const [controllerManager, apiserver, etcd] = kube.processes as [ServerProcess, ServerProcess, ServerProcess];
    const apiPort = Number(new URL(kube.url).port);
    let api: ServerProcess | undefined = apiserver;
    let w: World | undefined;
    let passed = false;
    try {
      w = await withEnv({ KUBECONFIG: kube.kubeconfig }, () =>
        startWorld('chaos-kube', { KUBECONFIG: kube.kubeconfig }),
      );
      const world = w;
      const steps = [
        { rampPercentage: 30, pauseDuration: '10s' },
        { rampPercentage: 70, pauseDuration: '5s' },
      ];
      const v1 = await rollToFirstStep(world, 'svc', steps);
      const stepSeen = Date.now();

      // The fault: kube-apiserver stopped (SIGTERM, SIGKILL after 5 s), 60 s without it, then the same command line.
      const command = commandLineOf(apiserver);
      const faultAt = Date.now();
      await stopProcesses([apiserver]);
      api = undefined;
      await portClosed(apiPort);
      // Temporal goes on meanwhile: when does it route everything to v2?
      let routedAt: number | undefined;
      let watching = true;
      const routingWatch = (async () => {
        while (watching && routedAt === undefined) {
          const r = await routing(world.env, 'svc').catch(() => undefined);
          if (r?.current && r.current !== v1) routedAt = Date.now();
          await sleep(200);
        }
      })();
      await sleep(60_000 - (Date.now() - faultAt));
      api = relaunch(command);
      const relaunched = Date.now();
      await eventually(
        'kube-apiserver answering again',
        async () => {
          await world.env.apps.listNamespacedDeployment({ namespace: world.env.namespace });
          return true;
        },
        120_000,
        100,
      );
      const back = Date.now();
      console.log(
        `chaos: kube-apiserver down ${seconds(relaunched - faultAt)}, answering ${seconds(back - relaunched)} after its relaunch (log ${api.logFile})`,
      );

      const { v2, at } = await rolledOut(world, 'svc', v1);
      watching = false;
      await routingWatch;
      const sunset = await v1Sunset(world, 'svc', v1);
      const routed = routedAt === undefined ? 'after' : `${seconds(routedAt - faultAt)} into the outage`;
      console.log(
        `chaos figure: kube-apiserver stopped 60 s mid-step: Temporal routed all to v2 ${routed} (the steps' pauses ended ≈ ${seconds(stepSeen + 15_000 - faultAt)} into it); status Ready with v2 current ${seconds(at - back)} after the apiserver answered again; v1 sunset ${seconds(sunset - back)} after`,
      );
      await expectAllWell(world, 'svc', v1, v2, steps);
      passed = true;
    } finally {
      await stopWorld(w);
      await stopProcesses([controllerManager, ...(api ? [api] : []), etcd]);
      if (passed) rmSync(dir, { recursive: true, force: true }); // a failed run keeps etcd's data and the logs
    }
  },
  15 * 60_000,
);
