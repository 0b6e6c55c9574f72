/**
 * `npm run bench`: the latencies and idle cost of rollouts, measured end to end against real servers (started
 * on free ports like the tests), the in-process controller and simulated pods. Prints figures; asserts nothing.
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
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { group, version } from '../api/common.js';
import { computeBuildId } from '../api/build-id.js';
import { rolloutWorkflowId } from '../api/names.js';
import { updates } from '../workflows/messages.js';
import { Labels } from '../kube/versioned-deployment.js';
import { installRuntime, startController } from '../worker/controller.js';
import { createExampleWorker } from '../examples/worker/worker.js';
import {
  completedActivities,
  eventTime,
  isDeferred,
  localActivityScheduledAt,
  localActivityType,
  scheduledActivityType,
} from '../scripts/history.js';
import { installCrds } from '../scripts/servers/install-crds.js';
import { startKube, startTemporal, stopProcesses } from '../scripts/servers/servers.js';

installRuntime('ERROR');
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const resources = Number(process.env.BENCH_RESOURCES ?? 10);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const dir = mkdtempSync(join(tmpdir(), 'glidepath-bench-'));
const server = await startTemporal({ dir });
const kube = await startKube({ dir });
installCrds(kube.kubeconfig, kube.kubectl);
const kc = new k8s.KubeConfig();
kc.loadFromFile(kube.kubeconfig);
const namespace = 'bench';
await kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
const custom = kc.makeApiClient(k8s.CustomObjectsApi);
const apps = kc.makeApiClient(k8s.AppsV1Api);
await custom.createNamespacedCustomObject({
  group,
  version,
  namespace,
  plural: 'temporalconnections',
  body: {
    apiVersion: `${group}/${version}`,
    kind: 'TemporalConnection',
    metadata: { name: 'local' },
    spec: { hostPort: server.address },
  },
});
// The pods run in their own process, as real pods would: their workers must not share the controller's CPU time slice.
const pods = spawn(process.execPath, ['--import', 'tsx', join(root, 'simulator/main.ts')], {
  env: { ...process.env, KUBECONFIG: kube.kubeconfig, NODE_OPTIONS: '' },
  stdio: 'ignore',
});
// What the watcher did and when (BENCH_VERBOSE prints a new resource's, beside its apply).
const watcherLines: { at: number; message: string; fields?: Record<string, unknown> }[] = [];
const controller = await startController({
  kubeConfig: kc,
  temporal: { address: server.address, namespace: 'default' },
  namespaces: [namespace],
  timings: { drainPollMaxMs: 1000 },
  log: (message, fields) => void watcherLines.push({ at: performance.now(), message, fields }),
  ...(process.env.BENCH_TEMPORAL_QPS ? { temporalQps: Number(process.env.BENCH_TEMPORAL_QPS) } : {}),
  ...(process.env.BENCH_TEMPORAL_BURST ? { temporalBurst: Number(process.env.BENCH_TEMPORAL_BURST) } : {}),
});
const connection = await Connection.connect({ address: server.address });
const client = new Client({ connection });

const twd = (name: string, marker: string) => ({
  apiVersion: `${group}/${version}`,
  kind: 'TemporalWorkerDeployment',
  metadata: { name, namespace },
  spec: {
    replicas: 1,
    rollout: {
      strategy: 'Progressive',
      steps: [
        { rampPercentage: 20, pauseDuration: '1s' },
        { rampPercentage: 60, pauseDuration: '1s' },
      ],
    },
    sunset: { scaledownDelay: '0s', deleteDelay: '0s' },
    workerOptions: { connectionRef: { name: 'local' }, temporalNamespace: 'default' },
    template: {
      spec: {
        containers: [
          {
            name: 'w',
            image: 'bench:1',
            env: [
              { name: 'EXAMPLE_TASK_QUEUE', value: `bench-${name}` },
              { name: 'MARKER', value: marker },
            ],
          },
        ],
      },
    },
  },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(probe: () => Promise<T | undefined>, everyMs = 2, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(everyMs);
  }
}
const status = async (name: string) =>
  (
    (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'temporalworkerdeployments',
      name,
    })) as { status?: { phase?: string; currentVersion?: { buildID: string }; deprecatedVersions?: unknown[] } }
  ).status;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const ms = (x: number) => `${x.toFixed(0)} ms`;

const applyToDeployment: number[] = [];
const appliedAt = new Map<string, number>();
// Each resource's first Deployment, seen by a watch: polling for it would load the apiserver and this process
// (the controller's) while it is being measured.
const deploymentSeen = new Map<string, (at: number) => void>();
const deploymentWatch = await new k8s.Watch(kc).watch(
  `/apis/apps/v1/namespaces/${namespace}/deployments`,
  {},
  (type, d: k8s.V1Deployment) => {
    const owner = d.metadata?.labels?.[Labels.workerDeployment];
    if (type === 'ADDED' && owner) deploymentSeen.get(owner)?.(performance.now());
  },
  () => undefined,
);
/**
 * Creates `name` and waits for its first Deployment (seen by the watch) and then for it to be Ready: the next apply
 * is measured on a controller with nothing else in flight, as a user's `kubectl apply` usually is. Returns
 * create → Deployment seen.
 */
async function applyAndSettle(name: string, verbose: boolean): Promise<number> {
  const seen = new Promise<number>((resolve) => deploymentSeen.set(name, resolve));
  const t0 = performance.now();
  await custom.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'temporalworkerdeployments',
    body: twd(name, 'v1'),
  });
  const createdMs = performance.now() - t0;
  let timer: NodeJS.Timeout | undefined;
  const at = await Promise.race([
    seen,
    new Promise<never>(
      (_, reject) => (timer = setTimeout(() => reject(new Error(`no Deployment of ${name} within 120 s`)), 120_000)),
    ),
  ]);
  clearTimeout(timer);
  deploymentSeen.delete(name);
  appliedAt.set(name, Date.now() - (performance.now() - t0));
  if (verbose) {
    const mine = watcherLines.filter((l) => l.at >= t0 && JSON.stringify(l).includes(`${namespace}/${name}`));
    for (const l of mine)
      console.log(
        `  ${name} watcher +${(l.at - t0).toFixed(0)} ms: ${l.message}${l.fields?.ms !== undefined ? ` (the apply took ${String(l.fields.ms)} ms)` : ''}`,
      );
    console.log(
      `  ${name} created +${createdMs.toFixed(0)} ms (the create call's answer); Deployment seen +${(at - t0).toFixed(0)} ms`,
    );
  }
  await until(async () => ((await status(name))?.phase === 'Ready' ? true : undefined), 50);
  return at - t0;
}
// The controller's first resource pays its start-up (connections, compiled code paths): printed on its own.
const firstAfterStart = await applyAndSettle('first', !!process.env.BENCH_VERBOSE);
for (let i = 0; i < resources; i++)
  applyToDeployment.push(await applyAndSettle(`r${i}`, !!process.env.BENCH_VERBOSE && i < 3));
deploymentWatch.abort();

/** When `name`'s v2 is registered with both its task queues (workflow and activity), seen by polling every 10 ms. */
async function registeredAt(name: string): Promise<number> {
  const buildId = computeBuildId(twd(name, 'v2').spec.template);
  return until(async () => {
    const res = await connection.workflowService.describeWorkerDeploymentVersion({
      namespace: 'default',
      deploymentVersion: { deploymentName: `${namespace}/${name}`, buildId },
    });
    return (res.versionTaskQueues ?? []).length >= 2 ? Date.now() : undefined;
  }, 10);
}
/** v2 for `name`: a Progressive rollout with two 1 s steps; resolves when v2 is current alone, with when it registered. */
async function rollOutV2(name: string, v1Build: string): Promise<number> {
  await custom.patchNamespacedCustomObject(
    { group, version, namespace, plural: 'temporalworkerdeployments', name, body: { spec: twd(name, 'v2').spec } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  const registered = await registeredAt(name);
  await until(async () => {
    const s = await status(name);
    return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1Build && !(s.deprecatedVersions ?? []).length
      ? true
      : undefined;
  }, 100);
  return registered;
}

/** A v1 → v2 rollout's figures, from its workflow history (server timestamps). */
interface RolloutFigures {
  /** The v2 Deployment available → its first ramp done. */
  availableToRouting: number[];
  /** The same from when v2 was also registered (seen by the bench). */
  readyToRouting: number[];
  /** Each step's transition beyond its pause: timer fired → the next ramp done (the last step's: set current done). */
  steps: number[];
  lastSteps: number[];
  /** Ours alone: a step's timer fired → its routing call started (the workflow task, and an activity's dispatch). */
  dispatch: number[];
}
const at = eventTime;
async function rolloutFigures(
  name: string,
  v1Build: string,
  registered: number | undefined,
  verbose: { apply?: boolean; ramp?: boolean; steps?: boolean },
): Promise<RolloutFigures> {
  const figures: RolloutFigures = {
    availableToRouting: [],
    readyToRouting: [],
    steps: [],
    lastSteps: [],
    dispatch: [],
  };
  const history = await client.workflow
    .getHandle(rolloutWorkflowId(controller.installation, namespace, name))
    .fetchHistory();
  const events = history.events ?? [];
  const activityName = new Map<string, string>();
  // Scheduled activities by their event, and local ones (markers) by theirs.
  for (const e of events) activityName.set(String(e.eventId), scheduledActivityType(e) ?? localActivityType(e) ?? '');
  const refOf = (e: (typeof events)[number]) =>
    e.activityTaskStartedEventAttributes?.scheduledEventId ??
    e.activityTaskCompletedEventAttributes?.scheduledEventId ??
    e.eventId;
  // Scheduled or local (a ramp is local), with when its result was recorded.
  const done = completedActivities(events);
  const completed = (type: string) => done.filter((a) => a.type === type && !isDeferred(a.result));
  // The last "available" signal of the v2 Deployment, then the v2 routing change.
  const v2Available = events.filter((e) => {
    const s = e.workflowExecutionSignaledEventAttributes;
    if (s?.signalName !== 'deploymentObserved') return false;
    const payload = JSON.parse(Buffer.from(s.input!.payloads![0]!.data!).toString()) as {
      buildId: string;
      availableReplicas?: number;
    };
    return payload.buildId !== v1Build && (payload.availableReplicas ?? 0) >= 1;
  })[0];
  const firstRamp = completed('setRamping')[0];
  if (verbose.apply && appliedAt.has(name)) {
    // The apply, on the server's clock from the create call: the workflow's first events until the Deployment is made.
    // A new resource's first apply: with its adoption check, else on its own (v2's comes later either way).
    const applied = completed('adoptOrApplyDeployment')[0] ?? completed('ensureVersionedDeployment')[0];
    for (const e of events.filter((e) => Number(e.eventId) <= (applied?.eventId ?? 0))) {
      // A local activity's marker is written with its task's completion; when it was scheduled is in the marker.
      const local = localActivityScheduledAt(e);
      const scheduled = local === undefined ? '' : ` (scheduled +${(local - appliedAt.get(name)!).toFixed(0)} ms)`;
      console.log(
        `  ${name} apply +${(at(e) - appliedAt.get(name)!).toFixed(0)} ms ${proto.temporal.api.enums.v1.EventType[e.eventType ?? 0]} ${activityName.get(String(refOf(e))) ?? ''}${scheduled}`,
      );
    }
  }
  if (v2Available && firstRamp) figures.availableToRouting.push(firstRamp.recordedAt - at(v2Available));
  if (verbose.ramp && v2Available && firstRamp) {
    // Where the time went, on the server's clock: every event from the v2 Deployment's availability to its first ramp.
    for (const e of events.filter(
      (e) => Number(e.eventId) >= Number(v2Available.eventId) && Number(e.eventId) <= firstRamp.eventId,
    )) {
      console.log(
        `  ${name} +${(at(e) - at(v2Available)).toFixed(0)} ms ${proto.temporal.api.enums.v1.EventType[e.eventType ?? 0]} ${activityName.get(String(refOf(e))) ?? ''}`,
      );
    }
    if (registered)
      console.log(`  ${name} registered (seen by the bench) at +${(registered - at(v2Available)).toFixed(0)} ms`);
  }
  if (v2Available && firstRamp && registered)
    figures.readyToRouting.push(firstRamp.recordedAt - Math.max(at(v2Available), registered));
  const stepTimerStarts = new Map(
    events.filter((e) => e.timerStartedEventAttributes).map((e) => [String(e.eventId), e]),
  );
  for (const fired of events.filter((e) => e.timerFiredEventAttributes)) {
    const started = stepTimerStarts.get(String(fired.timerFiredEventAttributes!.startedEventId));
    const summary = started?.userMetadata?.summary?.data
      ? Buffer.from(started.userMetadata.summary.data).toString()
      : '';
    if (!summary.includes('ramp ')) continue; // only the steps' pause timers
    const next = completed('setRamping')
      .concat(completed('setCurrent'))
      .filter((a) => a.recordedAt >= at(fired))
      .sort((a, b) => a.recordedAt - b.recordedAt)[0];
    if (!next) continue;
    const callStarted = next.scheduledAt ?? next.startedAt;
    if (callStarted !== undefined) figures.dispatch.push(callStarted - at(fired));
    (next.type === 'setCurrent' ? figures.lastSteps : figures.steps).push(next.recordedAt - at(fired));
    if (verbose.steps) {
      for (const e of events.filter(
        (e) => Number(e.eventId) >= Number(fired.eventId) && Number(e.eventId) <= next.eventId,
      )) {
        console.log(
          `  ${name} step +${(at(e) - at(fired)).toFixed(0)} ms ${proto.temporal.api.enums.v1.EventType[e.eventType ?? 0]} ${activityName.get(String(refOf(e))) ?? ''}`,
        );
      }
    }
  }
  return figures;
}
const merged = (all: RolloutFigures[]): RolloutFigures => ({
  availableToRouting: all.flatMap((f) => f.availableToRouting),
  readyToRouting: all.flatMap((f) => f.readyToRouting),
  steps: all.flatMap((f) => f.steps),
  lastSteps: all.flatMap((f) => f.lastSteps),
  dispatch: all.flatMap((f) => f.dispatch),
});

// v2 for every resource at once.
const v1 = new Map<string, string>();
for (let i = 0; i < resources; i++) v1.set(`r${i}`, (await status(`r${i}`))!.currentVersion!.buildID);
const registrationTimes = await Promise.all(
  Array.from({ length: resources }, (_, i) => rollOutV2(`r${i}`, v1.get(`r${i}`)!)),
);
const verbose = !!process.env.BENCH_VERBOSE;
const atOnce = merged(
  await Promise.all(
    Array.from({ length: resources }, (_, i) =>
      rolloutFigures(`r${i}`, v1.get(`r${i}`)!, registrationTimes[i], {
        apply: verbose && i < 3,
        ramp: verbose && i < 3,
        steps: verbose && i < 2,
      }),
    ),
  ),
);
const idleEvents: number[] = [];

// Idle: nothing changes for a while; count new history events and Kubernetes writes.
const lengths = async () =>
  Promise.all(
    Array.from(
      { length: resources },
      async (_, i) =>
        (await client.workflow.getHandle(rolloutWorkflowId(controller.installation, namespace, `r${i}`)).describe())
          .historyLength,
    ),
  );
/** resourceVersion of every object Glidepath writes (resources with their status, Deployments, Events). */
const versions = async () => {
  const twds = (await custom.listNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'temporalworkerdeployments',
  })) as { items: k8s.KubernetesObject[] };
  const objects = [
    ...twds.items,
    ...(await apps.listNamespacedDeployment({ namespace })).items,
    ...(await kc.makeApiClient(k8s.CoreV1Api).listNamespacedEvent({ namespace })).items,
  ];
  return new Map(objects.map((o) => [`${o.kind ?? ''}/${o.metadata?.name}`, o.metadata?.resourceVersion]));
};
const rvBefore = await versions();
const before = await lengths();
await sleep(idleSeconds * 1000);
const after = await lengths();
const rvAfter = await versions();
const writes = [...rvAfter].filter(([k, v]) => rvBefore.get(k) !== v).length;
after.forEach((n, i) => idleEvents.push(n - before[i]!));

console.log(
  `\nGlidepath benchmark: ${resources} resources, each v1 → v2 Progressive (2 steps of 1 s), idle window ${idleSeconds} s`,
);
console.log(
  `apply → versioned Deployment exists:   p50 ${ms(pct(applyToDeployment, 50))}, p95 ${ms(pct(applyToDeployment, 95))}  (each on a settled controller; its first resource after start ${ms(firstAfterStart)})`,
);
console.log(
  `Deployment available → first ramp set:  p50 ${ms(pct(atOnce.availableToRouting, 50))}, p95 ${ms(pct(atOnce.availableToRouting, 95))}  (includes the workers' own start-up until they poll)`,
);
console.log(
  `available and polling → routing changed: p50 ${ms(pct(atOnce.readyToRouting, 50))}, p95 ${ms(pct(atOnce.readyToRouting, 95))}  (n=${atOnce.readyToRouting.length})`,
);
console.log(
  `step transition beyond its pause:      p50 ${ms(pct(atOnce.steps, 50))}, p95 ${ms(pct(atOnce.steps, 95))}  (n=${atOnce.steps.length}); the last (set current): p50 ${ms(pct(atOnce.lastSteps, 50))}, p95 ${ms(pct(atOnce.lastSteps, 95))}`,
);
console.log(
  `idle: history events per resource:     ${Math.max(...idleEvents)} in ${idleSeconds} s (a resync round every hour: a read of the resource as an activity, its repairs as local ones)`,
);
console.log(`idle: Kubernetes writes (resources, Deployments, Events): ${writes} in ${idleSeconds} s`);
// One at a time: each resource's v1 → v2 alone, as the floor's first figures are made (nothing else in flight).
const alone: RolloutFigures[] = [];
for (let i = 0; i < Math.min(resources, 5); i++) {
  const name = `s${i}`;
  await custom.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'temporalworkerdeployments',
    body: twd(name, 'v1'),
  });
  const v1Build = await until(async () => {
    const s = await status(name);
    return s?.phase === 'Ready' ? s.currentVersion?.buildID : undefined;
  }, 50);
  alone.push(
    await rolloutFigures(name, v1Build, await rollOutV2(name, v1Build), {
      ramp: verbose && i < 2,
      steps: verbose && i < 2,
    }),
  );
}
// Rollback: v1 → v2 (v1 kept running: scaledownDelay 1h), then the `rollback` control.
const rollbacks = Math.min(resources, 5);
const rb = (i: number, marker: string) => {
  const body = twd(`rb${i}`, marker);
  return {
    ...body,
    spec: { ...body.spec, rollout: { strategy: 'AllAtOnce' }, sunset: { scaledownDelay: '1h', deleteDelay: '2h' } },
  };
};
const rbStatus = async (name: string) =>
  (await status(name)) as { phase?: string; currentVersion?: { buildID: string } } | undefined;
for (let i = 0; i < rollbacks; i++)
  await custom.createNamespacedCustomObject({
    group,
    version,
    namespace,
    plural: 'temporalworkerdeployments',
    body: rb(i, 'v1'),
  });
for (let i = 0; i < rollbacks; i++)
  await until(async () => ((await rbStatus(`rb${i}`))?.phase === 'Ready' ? true : undefined), 50);
const rbV1 = new Map<number, string>();
for (let i = 0; i < rollbacks; i++) rbV1.set(i, (await rbStatus(`rb${i}`))!.currentVersion!.buildID);
for (let i = 0; i < rollbacks; i++) {
  await custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace,
      plural: 'temporalworkerdeployments',
      name: `rb${i}`,
      body: { spec: rb(i, 'v2').spec },
    },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
}
for (let i = 0; i < rollbacks; i++)
  await until(async () => {
    const s = await rbStatus(`rb${i}`);
    return s?.phase === 'Ready' && s.currentVersion?.buildID !== rbV1.get(i) ? true : undefined;
  }, 50);
const rollbackAnswered: number[] = [];
const rollbackServer: number[] = [];
for (let i = 0; i < rollbacks; i++) {
  const handle = client.workflow.getHandle(rolloutWorkflowId(controller.installation, namespace, `rb${i}`));
  await sleep(2000); // let the server finish its post-set-current work, as a person's rollback would find it
  const t0 = performance.now();
  await handle.executeUpdate(updates.rollback, { args: [{ reason: 'bench', identity: 'bench' }] });
  rollbackAnswered.push(performance.now() - t0);
  // Server clock: the update accepted → setCurrent completed.
  const events = (await handle.fetchHistory()).events ?? [];
  const accepted = events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).at(-1);
  // A local set-current's marker is written with the task that accepted the update: from that task's start then.
  const done = completedActivities(events)
    .filter((a) => a.type === 'setCurrent' && !isDeferred(a.result))
    .at(-1);
  if (accepted && done)
    rollbackServer.push(
      done.recordedAt -
        (done.local && done.startedAt !== undefined ? Math.min(done.startedAt, at(accepted)) : at(accepted)),
    );
  if (process.env.BENCH_VERBOSE && accepted) {
    // Where the time went, on the server's clock: every event from the update's acceptance on.
    const names = new Map(events.map((e) => [String(e.eventId), scheduledActivityType(e) ?? localActivityType(e)]));
    for (const e of events.filter((e) => Number(e.eventId) >= Number(accepted.eventId))) {
      const ref =
        e.activityTaskStartedEventAttributes?.scheduledEventId ??
        e.activityTaskCompletedEventAttributes?.scheduledEventId ??
        e.eventId;
      console.log(
        `  rb${i} +${(at(e) - at(accepted)).toFixed(0)} ms ${proto.temporal.api.enums.v1.EventType[e.eventType ?? 0]} ${names.get(String(ref)) ?? ''}`,
      );
    }
  }
}
// The floor: the same routing calls made raw, as Glidepath makes them (a describe for the conflict token, then the
// change), on worker deployments of their own on the same server, in the order and spacing of a rollout: v1
// current and the manager claimed, then v2's workers start, and the moment v2 is registered its first ramp, a
// step change a second later, set current a second later, and a rollback to v1 two seconds after that. Once one
// deployment at a time, then as many at once as Glidepath rolled out (the server answers ten at once slower).
type Floor = Record<'describe' | 'firstRamp' | 'stepRamp' | 'setCurrent' | 'rollback', number[]>;
const newFloor = (): Floor => ({ describe: [], firstRamp: [], stepRamp: [], setCurrent: [], rollback: [] });
const timed = async (into: number[], call: () => Promise<unknown>) => {
  const t0 = performance.now();
  await call();
  into.push(performance.now() - t0);
};
async function floorRollout(deploymentName: string, taskQueue: string, floor: Floor): Promise<void> {
  const svc = connection.workflowService;
  const env = (buildId: string) => ({
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: 'default',
    TEMPORAL_DEPLOYMENT_NAME: deploymentName,
    TEMPORAL_WORKER_BUILD_ID: buildId,
    EXAMPLE_TASK_QUEUE: taskQueue,
  });
  const token = async () =>
    (await svc.describeWorkerDeployment({ namespace: 'default', deploymentName })).conflictToken;
  const registered = (buildId: string) =>
    until(
      async () =>
        ((
          await svc.describeWorkerDeploymentVersion({
            namespace: 'default',
            deploymentVersion: { deploymentName, buildId },
          })
        ).versionTaskQueues?.length ?? 0) >= 2 || undefined,
      2,
    );
  const setCurrent = (buildId: string) => async () =>
    svc.setWorkerDeploymentCurrentVersion({
      namespace: 'default',
      deploymentName,
      buildId,
      conflictToken: await token(),
      identity: 'glidepath',
    });
  const ramp = (percentage: number) => async () =>
    svc.setWorkerDeploymentRampingVersion({
      namespace: 'default',
      deploymentName,
      buildId: 'v2',
      percentage,
      conflictToken: await token(),
      identity: 'glidepath',
    });
  const workers = [await createExampleWorker(env('v1'))];
  const running = [workers[0]!.run()];
  await registered('v1');
  await setCurrent('v1')();
  await sleep(2000);
  await svc.setWorkerDeploymentManager({
    namespace: 'default',
    deploymentName,
    self: true,
    conflictToken: await token(),
    identity: 'glidepath',
  });
  await sleep(2000);
  workers.push(await createExampleWorker(env('v2')));
  running.push(workers[1]!.run());
  await registered('v2');
  await timed(floor.firstRamp, ramp(20));
  await sleep(1000);
  await timed(floor.stepRamp, ramp(60));
  await sleep(1000);
  await timed(floor.setCurrent, setCurrent('v2'));
  await sleep(2000);
  await timed(floor.describe, () => svc.describeWorkerDeployment({ namespace: 'default', deploymentName }));
  await timed(floor.rollback, setCurrent('v1'));
  for (const w of workers) w.shutdown();
  await Promise.all(running);
}
const floor = newFloor();
for (let i = 0; i < rollbacks; i++) await floorRollout(`floor/f${i}`, `floor-${i}`, floor);
const floorAtOnce = newFloor();
await Promise.all(
  Array.from({ length: resources }, (_, i) => floorRollout(`floor-at-once/f${i}`, `floor-at-once-${i}`, floorAtOnce)),
);

// History events per Progressive step: from one step's setRamping to the next routing call, per resource. Apart:
// a new version's bring-up, from the routing call before its first ramp (v1 made current) to that ramp.
const eventsPerStep: number[] = [];
const eventsPerBringUp: number[] = [];
for (let i = 0; i < resources; i++) {
  const events =
    (await client.workflow.getHandle(rolloutWorkflowId(controller.installation, namespace, `r${i}`)).fetchHistory())
      .events ?? [];
  // Scheduled, by their scheduling; local, by their marker (written with the task that made the call).
  const deferred = new Set(
    completedActivities(events)
      .filter((a) => a.local && isDeferred(a.result))
      .map((a) => a.eventId),
  );
  const routing = events
    .map((e) => ({ id: Number(e.eventId), type: scheduledActivityType(e) ?? localActivityType(e) ?? '' }))
    .filter((e) => (e.type === 'setRamping' || e.type === 'setCurrent') && !deferred.has(e.id));
  for (let k = 1; k < routing.length; k++) {
    const [from, to] = [routing[k - 1]!, routing[k]!];
    if (from.type === 'setRamping') eventsPerStep.push(to.id - from.id);
    else if (to.type === 'setRamping') eventsPerBringUp.push(to.id - from.id);
  }
}

const stats = (xs: number[]) => `p50 ${ms(pct(xs, 50))}, p95 ${ms(pct(xs, 95))}, max ${ms(Math.max(...xs))}`;
const over = (xs: number[], base: number[], p: number) =>
  `${pct(xs, p) - pct(base, p) >= 0 ? '+' : ''}${ms(pct(xs, p) - pct(base, p))} (×${(pct(xs, p) / pct(base, p)).toFixed(2)})`;
console.log(
  `rollback control → answered, routing changed: p50 ${ms(pct(rollbackAnswered, 50))}, max ${ms(Math.max(...rollbackAnswered))}  (server clock, update accepted → set-current done: p50 ${ms(pct(rollbackServer, 50))}; n=${rollbackAnswered.length})`,
);
const floorLines = (f: Floor) => [
  `  describe:                                   ${stats(f.describe)}`,
  `  describe + first ramp, v2 just registered:  ${stats(f.firstRamp)}`,
  `  describe + ramp step change (1 s later):    ${stats(f.stepRamp)}`,
  `  describe + set current (1 s later):         ${stats(f.setCurrent)}`,
  `  describe + set current back to v1 (2 s later): ${stats(f.rollback)}`,
];
const besideFloor = (g: RolloutFigures, f: Floor) => [
  `  a step's transition (to the next ramp) beyond its pause vs a ramp step change: ${over(g.steps, f.stepRamp, 50)} p50, ${over(g.steps, f.stepRamp, 95)} p95  (target ≤ +50 ms p50, ≤ +150 ms p95)`,
  `  the last step's transition (set current) beyond its pause vs set current:     ${over(g.lastSteps, f.setCurrent, 50)} p50, ${over(g.lastSteps, f.setCurrent, 95)} p95`,
  `  available and polling → routing changed vs a first ramp just registered:     ${over(g.readyToRouting, f.firstRamp, 50)} p50  (target ≤ +100 ms)`,
  `    of which Glidepath's own in a step (timer fired → routing call started, the rest is the call): p50 ${ms(pct(g.dispatch, 50))}, p95 ${ms(pct(g.dispatch, 95))}`,
];
console.log(
  `\nThe server's floor: raw calls on worker deployments of their own, in a rollout's order and spacing, one at a time (n=${floor.describe.length}):`,
);
for (const line of floorLines(floor)) console.log(line);
console.log(
  `The same, ${resources} worker deployments at once, as Glidepath rolled out ${resources} resources at once (rollbacks excepted: those ran one at a time):`,
);
for (const line of floorLines(floorAtOnce)) console.log(line);
console.log(`Glidepath beside its floor, ${resources} at once (target):`);
for (const line of besideFloor(atOnce, floorAtOnce)) console.log(line);
console.log(
  `Glidepath beside its floor one at a time, ${alone.length} resources each rolled out v1 → v2 alone (target):`,
);
for (const line of besideFloor(merged(alone), floor)) console.log(line);
console.log(
  `  rollback (server clock: update accepted → set current done) vs set current back: ${over(rollbackServer, floor.rollback, 50)} p50  (target ≤ +100 ms)`,
);
console.log(
  `  apply → versioned Deployment exists: ${stats(applyToDeployment)}  (target p50 ≤ 50 ms, p95 ≤ 150 ms; each applied once the one before was Ready)`,
);
console.log(
  `  history events per Progressive step: p50 ${pct(eventsPerStep, 50)}, max ${Math.max(...eventsPerStep)}  (target ≤ 40; n=${eventsPerStep.length}: a ramp's call to the next routing call)`,
);
if (eventsPerBringUp.length)
  console.log(
    `  history events of a new version's bring-up (v1 current → v2's first ramp: apply, Deployment available, registration): p50 ${pct(eventsPerBringUp, 50)}, max ${Math.max(...eventsPerBringUp)}`,
  );

await controller.stop();
pods.kill('SIGTERM');
await connection.close();
await stopProcesses([...kube.processes, server.process]);
rmSync(dir, { recursive: true, force: true });
process.exit(0);
