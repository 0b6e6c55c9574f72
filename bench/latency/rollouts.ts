/**
 * What the latency benchmark asks of Glidepath: resources applied, rolled from v1 to v2, left idle, and rolled
 * back; with when each was seen, for the figures.
 */
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../../api/common.js';
import { computeBuildId } from '../../api/build-id.js';
import { rolloutWorkflowId } from '../../api/names.js';
import { updates } from '../../workflows/messages.js';
import { Labels } from '../../kube/versioned-deployment.js';
import { rollbackOnServerClock } from './history.js';
import { namespace, sleep, status, twd, until, type World } from './world.js';

const plural = 'temporalworkerdeployments';
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

export interface Applies {
  /** The controller's first resource pays its start-up (connections, compiled code paths): apart. */
  firstAfterStart: number;
  /** Create → versioned Deployment seen, for each of the resources. */
  applyToDeployment: number[];
  /** When each was created (epoch ms): where its apply's events start. */
  appliedAt: Map<string, number>;
}

/**
 * Creates `first`, then r0…r(n-1), each once the one before is Ready: each apply is measured on a controller
 * with nothing else in flight, as a user's `kubectl apply` usually is. A watch sees each first Deployment: polling
 * for it would load the apiserver and this process (the controller's) while it is measured.
 */
export async function applyAll(world: World, resources: number, verbose: boolean): Promise<Applies> {
  const appliedAt = new Map<string, number>();
  const deploymentSeen = new Map<string, (at: number) => void>();
  const watch = await new k8s.Watch(world.kc).watch(
    `/apis/apps/v1/namespaces/${namespace}/deployments`,
    {},
    (type, d: k8s.V1Deployment) => {
      const owner = d.metadata?.labels?.[Labels.workerDeployment];
      if (type === 'ADDED' && owner) deploymentSeen.get(owner)?.(performance.now());
    },
    () => undefined,
  );
  const applyAndSettle = async (name: string, verbose: boolean): Promise<number> => {
    const seen = new Promise<number>((resolve) => deploymentSeen.set(name, resolve));
    const t0 = performance.now();
    await world.custom.createNamespacedCustomObject({ group, version, namespace, plural, body: twd(name, 'v1') });
    const createdMs = performance.now() - t0;
    let timer: NodeJS.Timeout | undefined;
    const at = await Promise.race([
      seen,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`no Deployment of ${name} within 120 s`)), 120_000)),
      ),
    ]).finally(() => clearTimeout(timer));
    deploymentSeen.delete(name);
    appliedAt.set(name, Date.now() - (performance.now() - t0));
    if (verbose) {
      const mine = world.watcherLines.filter((l) => l.at >= t0 && JSON.stringify(l).includes(`${namespace}/${name}`));
      for (const l of mine)
        console.log(
          `  ${name} watcher +${(l.at - t0).toFixed(0)} ms: ${l.message}${l.fields?.ms !== undefined ? ` (the apply took ${String(l.fields.ms)} ms)` : ''}`,
        );
      console.log(
        `  ${name} created +${createdMs.toFixed(0)} ms (the create call's answer); Deployment seen +${(at - t0).toFixed(0)} ms`,
      );
    }
    await until(async () => ((await status(world, name))?.phase === 'Ready' ? true : undefined), 50);
    return at - t0;
  };
  try {
    const firstAfterStart = await applyAndSettle('first', verbose);
    const applyToDeployment: number[] = [];
    for (let i = 0; i < resources; i++) applyToDeployment.push(await applyAndSettle(`r${i}`, verbose && i < 3));
    return { firstAfterStart, applyToDeployment, appliedAt };
  } finally {
    watch.abort();
  }
}

/** When `name`'s v2 is registered with both its task queues (workflow and activity), seen by polling every 10 ms. */
async function registeredAt(world: World, name: string): Promise<number> {
  const buildId = computeBuildId(twd(name, 'v2').spec.template);
  // A raw describe: `until` reads again through any refusal, and this tight poll is not to cost the server more.
  return until(async () => {
    const res = await world.connection.workflowService.describeWorkerDeploymentVersion({
      namespace: 'default',
      deploymentVersion: { deploymentName: `${namespace}/${name}`, buildId },
    });
    return (res.versionTaskQueues ?? []).length >= 2 ? Date.now() : undefined;
  }, 10);
}

/** v2 for `name`; resolves when v2 is current alone, with when it registered. */
export async function rollOutV2(world: World, name: string, v1Build: string): Promise<number> {
  await world.custom.patchNamespacedCustomObject(
    { group, version, namespace, plural, name, body: { spec: twd(name, 'v2').spec } },
    mergePatch,
  );
  const registered = await registeredAt(world, name);
  await until(async () => {
    const s = await status(world, name);
    return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1Build && !(s.deprecatedVersions ?? []).length
      ? true
      : undefined;
  }, 100);
  return registered;
}

/** Creates `name` at v1 and waits for it to be Ready; its v1 build. */
export async function createReady(world: World, name: string): Promise<string> {
  await world.custom.createNamespacedCustomObject({ group, version, namespace, plural, body: twd(name, 'v1') });
  return until(async () => {
    const s = await status(world, name);
    return s?.phase === 'Ready' ? s.currentVersion?.buildID : undefined;
  }, 50);
}

export interface Idle {
  /** New history events of each resource's workflow over the window. */
  events: number[];
  /** Objects Glidepath writes (resources with their status, Deployments, Events) changed over the window. */
  writes: number;
}

/** Nothing changes for `seconds`: the new history events and Kubernetes writes. */
export async function idleWindow(world: World, names: string[], seconds: number): Promise<Idle> {
  const lengths = () =>
    Promise.all(
      names.map(
        async (name) =>
          (
            await world.client.workflow
              .getHandle(rolloutWorkflowId(world.controller.installation, namespace, name))
              .describe()
          ).historyLength,
      ),
    );
  const versions = async () => {
    const twds = (await world.custom.listNamespacedCustomObject({ group, version, namespace, plural })) as {
      items: k8s.KubernetesObject[];
    };
    const objects = [
      ...twds.items,
      ...(await world.apps.listNamespacedDeployment({ namespace })).items,
      ...(await world.core.listNamespacedEvent({ namespace })).items,
    ];
    return new Map(objects.map((o) => [`${o.kind ?? ''}/${o.metadata?.name}`, o.metadata?.resourceVersion]));
  };
  const rvBefore = await versions();
  const before = await lengths();
  await sleep(seconds * 1000);
  const after = await lengths();
  const rvAfter = await versions();
  return {
    events: after.map((n, i) => n - before[i]!),
    writes: [...rvAfter].filter(([k, v]) => rvBefore.get(k) !== v).length,
  };
}

export interface Rollbacks {
  /** The `rollback` update sent → answered, routing changed. */
  answered: number[];
  /** The same on the server's clock: update accepted → set-current done. */
  onServerClock: number[];
}

/** `count` resources rolled v1 → v2 (v1 kept running: scaledownDelay 1h), then each sent the `rollback` control. */
export async function rollbacks(world: World, count: number, verbose: boolean): Promise<Rollbacks> {
  const rb = (i: number, marker: string) => {
    const body = twd(`rb${i}`, marker);
    return {
      ...body,
      spec: { ...body.spec, rollout: { strategy: 'AllAtOnce' }, sunset: { scaledownDelay: '1h', deleteDelay: '2h' } },
    };
  };
  const indexes = Array.from({ length: count }, (_, i) => i);
  for (const i of indexes)
    await world.custom.createNamespacedCustomObject({ group, version, namespace, plural, body: rb(i, 'v1') });
  const v1 = new Map<number, string>();
  for (const i of indexes)
    v1.set(
      i,
      await until(async () => {
        const s = await status(world, `rb${i}`);
        return s?.phase === 'Ready' ? s.currentVersion?.buildID : undefined;
      }, 50),
    );
  for (const i of indexes)
    await world.custom.patchNamespacedCustomObject(
      { group, version, namespace, plural, name: `rb${i}`, body: { spec: rb(i, 'v2').spec } },
      mergePatch,
    );
  for (const i of indexes)
    await until(async () => {
      const s = await status(world, `rb${i}`);
      return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1.get(i) ? true : undefined;
    }, 50);
  const out: Rollbacks = { answered: [], onServerClock: [] };
  for (const i of indexes) {
    const handle = world.client.workflow.getHandle(
      rolloutWorkflowId(world.controller.installation, namespace, `rb${i}`),
    );
    await sleep(2000); // let the server finish its post-set-current work, as a person's rollback would find it
    const t0 = performance.now();
    await handle.executeUpdate(updates.rollback, { args: [{ reason: 'bench', identity: 'bench' }] });
    out.answered.push(performance.now() - t0);
    const server = rollbackOnServerClock(`rb${i}`, (await handle.fetchHistory()).events ?? [], verbose);
    if (server !== undefined) out.onServerClock.push(server);
  }
  return out;
}
