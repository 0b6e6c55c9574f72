/**
 * The scale benchmark's run: the servers and the controller processes started, phase 1 (create), phase 2 (patch
 * to a Progressive rollout) and, with --idle, the idle window; with when the benchmark saw each resource get there.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { GrpcStatus } from '../../temporal/errors.js';
import { group, version } from '../../api/common.js';
import { benchResource } from '../resource.js';
import { createRolloutNamespace } from '../../scripts/servers/rollout-namespace.js';
import { controllerEnvironment, controllerNodeOptions } from '../../worker/process-settings.js';
import { searchAttributeKeys } from '../../workflows/search-attributes.js';
import { freePort, startKube, startTemporal } from '../../scripts/servers/servers.js';
import {
  baselineNamespace,
  controllerCount,
  controllerNamespace,
  goneTimeoutMs,
  idleSeconds,
  k8sNamespace,
  phaseTimeoutMs,
  podNamespace,
  resources,
  root,
  steps,
  values,
  writeConcurrency,
  writeRate,
} from './options.js';
import { dir, inBatches, memoryProbeFile, servers, sleep, spawnNode, until } from './processes.js';
import {
  controllerMetricsPorts,
  controllerPids,
  isQuiet,
  lastFullTick,
  sampler,
  scrapePersistence,
  startSampler,
  stopSampler,
  ticks,
  type Tick,
} from './sampling.js';

const { temporal: temporalProto } = proto; // a CommonJS module: no named exports under ESM

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** When things happened (epoch ms), for the report. */
export interface Run {
  t0: number;
  phase1: number;
  phase1Created: number;
  phase1End: number;
  phase2: number;
  phase2Patched: number;
  phase2End: number;
  goneEnd: number;
  /** When each resource was created, patched, seen Ready with v1 current, with v2 current, and with v1 gone. */
  created: Map<string, number>;
  patched: Map<string, number>;
  ready: Map<string, number>;
  current2: Map<string, number>;
  gone: Map<string, number>;
  persistenceBefore: Awaited<ReturnType<typeof scrapePersistence>>;
  persistenceAfter: Awaited<ReturnType<typeof scrapePersistence>>;
  idle?: { window: [Tick, Tick]; quietAfterMs: number };
}

export async function run(): Promise<Run> {
  const t0 = Date.now();
  console.log(
    `Glidepath scale benchmark: ${resources} resources, ${controllerCount} controller process(es) with ${values['controller-flag']?.length ? `the flags ${values['controller-flag'].join(' ')}` : 'default settings'}${values['server-flag']?.length ? `, the dev server with ${values['server-flag'].join(' ')}` : ''}${values['node-option'] ? `, Node options ${values['node-option'].join(' ') || '(none)'}` : ''}${values['controller-env']?.length ? `, environment ${values['controller-env'].join(' ')}` : ''}${writeRate ? `, writes at ${writeRate}/s` : ''}; logs in ${dir}`,
  );
  const temporal = await startTemporal({
    dir,
    dynamicConfig: [
      // A namespace holds 100 worker deployments by default; each resource is one.
      `matching.maxDeployments=${resources + 100}`,
      // Concurrent long polls per namespace and API (1200 by default): during phase 2 every resource has two pods.
      `frontend.namespaceCount=${Math.max(1200, 2 * resources + 500)}`,
      // Without these the metrics page grows by per-task-queue series to megabytes, too much to scrape every second.
      'metrics.breakdownByTaskQueue=false',
      'metrics.breakdownByBuildID=false',
      'metrics.breakdownByPartition=false',
      // One partition per task queue instead of four: each resource's task queue serves a pod or two, and a thousand
      // queues' partitions kept the dev server busy persisting them (UpdateTaskQueue 626 per resource at 1,000, 131 with one).
      'matching.numTaskqueueReadPartitions=1',
      'matching.numTaskqueueWritePartitions=1',
      // --server-flag: the dev server's dynamic config, e.g. system.enableActivityEagerExecution=true.
      ...(values['server-flag'] ?? []),
    ],
  });
  servers.push(temporal.process);
  const kube = await startKube({ dir, crds: true });
  servers.unshift(...kube.processes);
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(kube.kubeconfig);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  await createRolloutNamespace(kc, k8sNamespace, temporal.address);

  // The controllers' namespace, with Glidepath's search attributes (without them rollouts run without), and the baseline.
  const connection = await Connection.connect({ address: temporal.address });
  try {
    for (const namespace of [controllerNamespace, baselineNamespace]) {
      // The dev server may have created it already (servers:up's own namespaces).
      await connection.workflowService
        .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') })
        .catch((err: unknown) => {
          if ((err as { code?: number }).code !== GrpcStatus.ALREADY_EXISTS) throw err;
        });
    }
    const keyword = temporalProto.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
    await until(
      'the search attributes registered',
      async () => {
        await connection.operatorService.addSearchAttributes({
          namespace: controllerNamespace,
          searchAttributes: Object.fromEntries(searchAttributeKeys.map((k) => [k.name, keyword])),
        });
        const registered =
          (await connection.operatorService.listSearchAttributes({ namespace: controllerNamespace }))
            .customAttributes ?? {};
        return searchAttributeKeys.every((k) => k.name in registered) ? true : undefined;
      },
      60_000,
      1000,
    );
    // The frontend knows a new namespace after its namespace cache refreshes: until then every call in it fails.
    await until(
      'the new namespaces usable',
      async () => {
        for (const namespace of [controllerNamespace, baselineNamespace])
          await new Client({ connection, namespace }).workflow.count();
        return true;
      },
      60_000,
      1000,
    );
  } finally {
    await connection.close();
  }

  // Sampling starts before the controllers do: their start-up requests count.
  sampler.serverPid = temporal.process.pid;
  startSampler(temporal.metricsUrl, kc);
  await until('the first sample', () => (ticks.some((t) => t.temporal && t.kube) ? true : undefined), 30_000, 200);

  const pods = spawnNode('pods', 'simulator/main.ts', ['--light'], { KUBECONFIG: kube.kubeconfig });
  for (let i = 0; i < controllerCount; i++) controllerMetricsPorts.push(await freePort());
  const controllers = Array.from({ length: controllerCount }, (_, i) =>
    spawnNode(
      `controller-${i}`,
      values.compiled ? 'dist/worker/main.js' : 'worker/main.ts',
      [
        '--temporal-namespace',
        controllerNamespace,
        '--namespace',
        k8sNamespace,
        `--metrics-bind-address=127.0.0.1:${controllerMetricsPorts[i]}`,
        '--health-probe-bind-address=0',
        ...(values['controller-flag'] ?? []),
      ],
      {
        KUBECONFIG: kube.kubeconfig,
        TEMPORAL_ADDRESS: temporal.address,
        ...controllerEnvironment,
        ...Object.fromEntries(
          (values['controller-env'] ?? []).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
        ),
        GLIDEPATH_MEMORY_PROBE: memoryProbeFile(i),
      },
      [
        ...(values['node-option']?.filter(Boolean) ?? controllerNodeOptions),
        '--import',
        join(root, 'bench/memory-probe.mjs'),
      ],
    ),
  );
  controllerPids.push(...controllers.map((c) => c.pid!));
  sampler.podsPid = pods.pid!;
  for (const [i, c] of controllers.entries()) {
    await until(
      `controller ${i} running`,
      () => {
        if (c.exitCode !== null)
          throw new Error(`controller ${i} exited (${c.exitCode}); read ${join(dir, `controller-${i}.log`)}`);
        return readFileSync(join(dir, `controller-${i}.log`), 'utf8').includes('glidepath controller running')
          ? true
          : undefined;
      },
      120_000,
    );
  }
  console.log(`servers and ${controllerCount} controller(s) up in ${secs(Date.now() - t0)}\n`);

  // Each resource's status, as a watch delivers it: the times are when the benchmark saw each state.
  const names = Array.from({ length: resources }, (_, i) => `r${i}`);
  const created = new Map<string, number>();
  const patched = new Map<string, number>();
  const ready = new Map<string, number>(); // phase 1: Ready with a current version
  const v1 = new Map<string, string>();
  const current2 = new Map<string, number>(); // phase 2: a build other than v1 is current
  const gone = new Map<string, number>(); // phase 2: v2 current and no deprecated version left
  type Status = { phase?: string; currentVersion?: { buildID?: string }; deprecatedVersions?: unknown[] };
  const observe = (obj: k8s.KubernetesObject & { status?: Status }) => {
    const name = obj.metadata?.name ?? '';
    const s = obj.status;
    const now = Date.now();
    const build = s?.currentVersion?.buildID;
    if (!patched.has(name)) {
      if (s?.phase === 'Ready' && build && created.has(name) && !ready.has(name)) {
        ready.set(name, now);
        v1.set(name, build);
      }
      return;
    }
    if (build && v1.has(name) && build !== v1.get(name)) {
      if (!current2.has(name)) current2.set(name, now);
      if (!(s?.deprecatedVersions ?? []).length && !gone.has(name)) gone.set(name, now);
    }
  };
  const informer = k8s.makeInformer(
    kc,
    `/apis/${group}/${version}/namespaces/${k8sNamespace}/temporalworkerdeployments`,
    () =>
      custom.listNamespacedCustomObject({
        group,
        version,
        namespace: k8sNamespace,
        plural: 'temporalworkerdeployments',
      }) as Promise<k8s.KubernetesListObject<k8s.KubernetesObject>>,
  );
  let informerStopped = false;
  informer.on('add', observe);
  informer.on('update', observe);
  informer.on('error', () => {
    if (!informerStopped) setTimeout(() => void informer.start().catch(() => {}), 1000);
  });
  await informer.start();

  const twd = (name: string, marker: 'v1' | 'v2') =>
    benchResource({
      name,
      namespace: k8sNamespace,
      marker,
      rollout: marker === 'v1' ? { strategy: 'AllAtOnce' } : { strategy: 'Progressive', steps },
      temporalNamespace: podNamespace,
      taskQueuePrefix: 'scale',
    });
  const settle = (what: string, done: Map<string, number>, timeoutMs: number) =>
    until(what, () => (done.size >= resources ? true : undefined), timeoutMs, 250).catch((err: Error) =>
      console.log(`  ${err.message}: ${done.size}/${resources}`),
    );

  // Phase 1: create all, v1 AllAtOnce.
  const phase1 = Date.now();
  await inBatches(names, writeConcurrency, async (name) => {
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace: k8sNamespace,
      plural: 'temporalworkerdeployments',
      body: twd(name, 'v1'),
    });
    sampler.benchWrites++;
    created.set(name, Date.now());
  });
  const phase1Created = Date.now();
  await settle('every resource Ready with a current version', ready, phaseTimeoutMs);
  const phase1End = Date.now();

  // Phase 2: patch all to v2 Progressive.
  const phase2 = Date.now();
  const persistenceBefore = await scrapePersistence(temporal.metricsUrl);
  await inBatches(
    names.filter((n) => ready.has(n)),
    writeConcurrency,
    async (name) => {
      await custom.patchNamespacedCustomObject(
        {
          group,
          version,
          namespace: k8sNamespace,
          plural: 'temporalworkerdeployments',
          name,
          body: { spec: twd(name, 'v2').spec },
        },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      );
      sampler.benchWrites++;
      patched.set(name, Date.now());
    },
  );
  const phase2Patched = Date.now();
  await settle('v2 current everywhere', current2, phaseTimeoutMs);
  const phase2End = Date.now();
  await settle('old versions gone everywhere', gone, goneTimeoutMs);
  const goneEnd = Date.now();
  const persistenceAfter = await scrapePersistence(temporal.metricsUrl);

  // Idle: once nothing moves, count over the window.
  let idle: { window: [Tick, Tick]; quietAfterMs: number } | undefined;
  if (idleSeconds > 0) {
    const quietFrom = Date.now();
    const quiet = await until(
      'quiet (10 s without workflow progress or controller writes)',
      () => (isQuiet(10_000) ? true : undefined),
      300_000,
      1000,
    ).catch((err: Error) => {
      console.log(`  ${err.message}: measuring anyway`);
      return false;
    });
    const start = lastFullTick()!;
    const idleStart = Date.now();
    console.log(
      `idle window: ${idleSeconds} s from ${quiet ? 'quiet' : 'not quiet'} (${secs(idleStart - quietFrom)} after the rollouts)`,
    );
    await sleep(idleSeconds * 1000);
    await until(
      'a sample after the idle window',
      () => (lastFullTick() && lastFullTick()!.at >= start.at + idleSeconds * 1000 ? true : undefined),
      30_000,
      200,
    );
    idle = { window: [start, lastFullTick()!], quietAfterMs: idleStart - quietFrom };
  }
  informerStopped = true;
  await informer.stop();
  await stopSampler();
  return {
    t0,
    phase1,
    phase1Created,
    phase1End,
    phase2,
    phase2Patched,
    phase2End,
    goneEnd,
    created,
    patched,
    ready,
    current2,
    gone,
    persistenceBefore,
    persistenceAfter,
    idle,
  };
}
