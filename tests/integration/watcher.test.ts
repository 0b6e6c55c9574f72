/**
 * The watcher's side of the contract, against real servers: specs that got past admission but cannot be
 * rolled out, connection changes, several controllers at once, progress deadlines, signals lost while Temporal
 * was unreachable, and resources deleted behind the finalizer's back.
 */
import * as k8s from '@kubernetes/client-node';
import { createTemporalConnection } from '../../scripts/servers/rollout-namespace.js';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { group, version } from '../../api/common.js';
import { installationAnnotation, rolloutWorkflowId } from '../../api/names.js';
import { asMergePatch } from '../../kube/client.js';
import { createKubernetesActivities } from '../../activities/kubernetes.js';
import { finalizer } from '../../api/names.js';
import { ForeignLabels } from '../../kube/foreign-deployments.js';
import { Labels } from '../../kube/versioned-deployment.js';
import { computeBuildId } from '../../api/build-id.js';
import { parseConnection, parseWorkerResource } from '../../api/kinds.js';
import { holdsProblemStatus } from '../../starter/condition-ownership.js';
import type { SpecChangedHint } from '../../workflows/messages.js';
import { schemaAt, withLooserCrd } from '../harness/looser-crd.js';
import { Watcher, watcherManager, type WatcherOptions } from '../../starter/watcher.js';
import { startController } from '../../worker/controller.js';
import {
  apply,
  deployments,
  eventually,
  plural,
  resource,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
} from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('watcher');
});
afterAll(async () => {
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

const envOf = (d: k8s.V1Deployment) =>
  Object.fromEntries((d.spec?.template?.spec?.containers?.[0]?.env ?? []).map((e) => [e.name, e.value]));

const getTwd = async (name: string, namespace = env.namespace) =>
  (await env.custom.getNamespacedCustomObject({ group, version, namespace, plural, name })) as k8s.KubernetesObject & {
    status?: Record<string, unknown>;
  };
/**
 * Runs `fn` while the CRD admits any unsafeCustomBuildID, as it did when custom build IDs were sanitised: the
 * spec it stores then is one admission refuses now, but kube-apiserver keeps it, so the watcher must refuse it.
 */
const admittingOldBuildIds = <T>(fn: () => Promise<T>) =>
  withLooserCrd(
    env.kc,
    (schema) => delete schemaAt(schema, ['spec', 'workerOptions', 'unsafeCustomBuildID']).pattern,
    async () => {
      const probe = resource(env, 'probe', { env: { VERSION: 'v1' } });
      Object.assign(probe.spec.workerOptions, { unsafeCustomBuildID: '---' });
      return env.custom
        .createNamespacedCustomObject({ group, version, namespace: env.namespace, plural, body: probe, dryRun: 'All' })
        .then(
          () => true,
          () => false,
        );
    },
    fn,
  );
const warningEvents = async (name: string, reason: string) =>
  (
    await env.kc
      .makeApiClient(k8s.CoreV1Api)
      .listNamespacedEvent({ namespace: env.namespace, fieldSelector: `involvedObject.name=${name}` })
  ).items.filter((e) => e.type === 'Warning' && e.reason === reason);

test('a spec that got past admission but cannot be rolled out: InvalidSpec condition, a Warning Event, no workflow, nothing touched', async () => {
  const obj = resource(env, 'bad', { env: { VERSION: 'v1' } });
  (obj.spec.workerOptions as Record<string, unknown>).unsafeCustomBuildID = '---'; // not a label value: refused, never rewritten
  await admittingOldBuildIds(() => apply(env, obj));
  const status = await eventually('InvalidSpec', async () => {
    const s = await twdStatus(env, 'bad');
    return s?.phase === 'InvalidSpec' ? s : undefined;
  });
  expect(status.conditions?.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
  expect(JSON.stringify(status)).toContain('spec.workerOptions.unsafeCustomBuildID');
  // The Event is written just after the status.
  await eventually(
    'a Warning Event InvalidSpec',
    async () => {
      const events = await env.kc
        .makeApiClient(k8s.CoreV1Api)
        .listNamespacedEvent({ namespace: env.namespace, fieldSelector: 'involvedObject.name=bad' });
      return events.items.some((e) => e.type === 'Warning' && e.reason === 'InvalidSpec');
    },
    10_000,
  );
  await expect(workflowHandle(env, 'bad').describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
  expect((await deployments(env, 'bad')).size).toBe(0);
});

test('a resource whose TemporalConnection does not exist yet waits (ConnectionNotFound) and rolls out once it appears', async () => {
  const obj = resource(env, 'early', { env: { VERSION: 'v1' } });
  obj.spec.workerOptions.connectionRef.name = 'later';
  await apply(env, obj);
  const waiting = await eventually('ConnectionNotFound', async () => {
    const s = await twdStatus(env, 'early');
    return s?.conditions?.some((c) => c.reason === 'ConnectionNotFound') ? s : undefined;
  });
  expect(waiting.phase).toBe('Pending');
  expect((await deployments(env, 'early')).size).toBe(0);
  await eventually(
    'a Warning Event ConnectionNotFound',
    async () => (await warningEvents('early', 'ConnectionNotFound')).length > 0,
    10_000,
  );
  // Said once: the watcher's own status write must not set off another one.
  const rv = async () =>
    (
      (await env.custom.getNamespacedCustomObject({
        group,
        version,
        namespace: env.namespace,
        plural: 'temporalworkerdeployments',
        name: 'early',
      })) as k8s.KubernetesObject
    ).metadata?.resourceVersion;
  const before = await rv();
  await new Promise((r) => setTimeout(r, 2000));
  expect(await rv()).toBe(before);
  await env.custom.createNamespacedCustomObject({
    group,
    version,
    namespace: env.namespace,
    plural: 'temporalconnections',
    body: {
      apiVersion: `${group}/${version}`,
      kind: 'TemporalConnection',
      metadata: { name: 'later' },
      spec: { hostPort: process.env.TEMPORAL_ADDRESS },
    },
  });
  await eventually('rolled out', async () => (await twdStatus(env, 'early'))?.phase === 'Ready');
  expect((await twdStatus(env, 'early'))?.conditions?.filter((c) => c.reason === 'ConnectionNotFound')).toEqual([]);
  expect(holdsProblemStatus((await getTwd('early')).metadata?.managedFields, watcherManager)).toBe(false);
  expect(await warningEvents('early', 'ConnectionNotFound')).toHaveLength(1);
});

test('a TemporalConnection change reaches the live Deployments of every resource that uses it', async () => {
  await apply(env, resource(env, 'conn-a', { env: { VERSION: 'v1' } }));
  await apply(env, resource(env, 'conn-b', { env: { VERSION: 'v1' } }));
  for (const name of ['conn-a', 'conn-b'])
    await eventually(`${name} ready`, async () => (await twdStatus(env, name))?.phase === 'Ready');
  await env.custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace: env.namespace,
      plural: 'temporalconnections',
      name: 'local',
      body: { spec: { tls: { serverName: 'frontend.glidepath.test' } } },
    },
    asMergePatch,
  );
  for (const name of ['conn-a', 'conn-b']) {
    await eventually(`${name}'s Deployment re-rendered`, async () => {
      const [d] = [...(await deployments(env, name)).values()];
      return d && envOf(d).TEMPORAL_TLS_SERVER_NAME === 'frontend.glidepath.test';
    });
  }
  await env.custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace: env.namespace,
      plural: 'temporalconnections',
      name: 'local',
      body: { spec: { tls: null } },
    },
    asMergePatch,
  );
});

test('two controllers at once are harmless: one workflow, one Deployment per build', async () => {
  const second = await startController({
    kubeConfig: env.kc,
    temporal: { address: process.env.TEMPORAL_ADDRESS!, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' },
    taskQueue: `glidepath-${env.namespace}`,
    namespaces: [env.namespace],
    timings: { drainPollMaxMs: 1000 },
  });
  try {
    await apply(env, resource(env, 'twice', { env: { VERSION: 'v1' } }));
    const v1 = await eventually('v1 current', async () => (await twdStatus(env, 'twice'))?.currentVersion?.buildID);
    await apply(env, resource(env, 'twice', { env: { VERSION: 'v2' } }));
    await eventually('v2 current and v1 gone', async () => {
      const s = await twdStatus(env, 'twice');
      const ds = await deployments(env, 'twice');
      return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1 && ds.size === 1;
    });
    const runs = [];
    for await (const wf of env.client.workflow.list({
      query: `WorkflowId = '${rolloutWorkflowId(env.installation, env.namespace, 'twice')}'`,
    }))
      runs.push(wf);
    expect(runs).toHaveLength(1);
  } finally {
    await second.stop();
  }
});

test('a version whose pods never become ready fails its progress deadline; a fixed template supersedes it', async () => {
  const broken = resource(env, 'deadline', { env: { VERSION: 'v1', EXAMPLE_NEVER_READY: 'true' } });
  (broken.spec as Record<string, unknown>).progressDeadlineSeconds = 2;
  await apply(env, broken);
  const failed = await eventually('progress deadline exceeded', async () => {
    const s = await twdStatus(env, 'deadline');
    return s?.phase === 'Failed' ? s : undefined;
  });
  expect(failed.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
    status: 'False',
    reason: 'ProgressDeadlineExceeded',
  });

  const fixed = resource(env, 'deadline', { env: { VERSION: 'v1' } });
  (fixed.spec as Record<string, unknown>).progressDeadlineSeconds = 2;
  await apply(env, fixed);
  await eventually('the fixed build current', async () => (await twdStatus(env, 'deadline'))?.phase === 'Ready');
  await eventually('the broken build sunset', async () => (await deployments(env, 'deadline')).size === 1);
});

test("InvalidSpec does not outlive the spec: fixed, the workflow takes over and the watcher's condition is gone", async () => {
  const invalid = { spec: { workerOptions: { unsafeCustomBuildID: '---' } } };
  const valid = { spec: { workerOptions: { unsafeCustomBuildID: null } } };
  const patch = (body: object) =>
    env.custom.patchNamespacedCustomObject(
      { group, version, namespace: env.namespace, plural, name: 'mended', body },
      asMergePatch,
    );
  const invalidSpecShown = () =>
    eventually('InvalidSpec', async () =>
      (await twdStatus(env, 'mended'))?.conditions?.some((c) => c.reason === 'InvalidSpec'),
    );
  /** The watcher holds no phase, message or conditions any more, and none says InvalidSpec. */
  const cleared = (what: string, phase?: string) =>
    eventually(what, async () => {
      const obj = await getTwd('mended');
      const s = obj.status as
        { phase?: string; observedGeneration?: number; conditions?: { reason: string }[] } | undefined;
      return (
        !holdsProblemStatus(obj.metadata?.managedFields, watcherManager) &&
        s?.observedGeneration === obj.metadata?.generation &&
        s?.phase !== 'InvalidSpec' &&
        !s?.conditions?.some((c) => c.reason === 'InvalidSpec') &&
        (!phase || s?.phase === phase)
      );
    });

  // Invalid from the start: no workflow, then a fixed spec starts one.
  const obj = resource(env, 'mended', { env: { VERSION: 'v1' } });
  Object.assign(obj.spec.workerOptions, invalid.spec.workerOptions);
  await admittingOldBuildIds(() => apply(env, obj));
  await invalidSpecShown();
  await patch(valid);
  await cleared('the first valid spec rolled out, InvalidSpec gone', 'Ready');

  // Invalid while a version is current, then fixed back to that same version: nothing to roll out, so the
  // workflow may not write its status at all; the watcher's condition must go all the same.
  await admittingOldBuildIds(() => patch(invalid));
  await invalidSpecShown();
  await patch(valid);
  await cleared('back to the current version, InvalidSpec gone');
});

test('a resource deleted after its finalizer was removed by hand: the workflow cleans up and ends, nothing is recreated', async () => {
  await apply(env, resource(env, 'orphan', { env: { VERSION: 'v1' } }));
  await eventually('ready', async () => (await twdStatus(env, 'orphan'))?.phase === 'Ready');
  expect((await deployments(env, 'orphan')).size).toBe(1);
  env.deleting.add('orphan');
  await env.custom.patchNamespacedCustomObject(
    { group, version, namespace: env.namespace, plural, name: 'orphan', body: { metadata: { finalizers: [] } } },
    asMergePatch,
  );
  await env.custom.deleteNamespacedCustomObject({ group, version, namespace: env.namespace, plural, name: 'orphan' });
  await eventually(
    'the workflow completed',
    async () => (await workflowHandle(env, 'orphan').describe()).status.name === 'COMPLETED',
  );
  // Once the workflow has ended nothing can bring a Deployment back: none may be left.
  expect((await deployments(env, 'orphan')).size).toBe(0);
});

describe('signals lost while Temporal was unreachable', () => {
  /** A client whose calls fail while `down`, as they would with the Temporal frontend unreachable. */
  function unreliable(real: Client) {
    const temporal = { down: true };
    const refuse = () => Promise.reject(new Error('14 UNAVAILABLE: connection refused (test)'));
    const call =
      <A extends unknown[]>(fn: (...args: A) => Promise<unknown>) =>
      (...args: A) =>
        temporal.down ? refuse() : fn(...args);
    const client = {
      workflow: {
        signalWithStart: call((...args: Parameters<Client['workflow']['signalWithStart']>) =>
          real.workflow.signalWithStart(...args),
        ),
        getHandle: (id: string) => {
          const handle = real.workflow.getHandle(id);
          return { signal: call((...args: Parameters<typeof handle.signal>) => handle.signal(...args)) };
        },
      },
    } as unknown as Client;
    return { client, temporal };
  }

  /**
   * A watcher of a namespace of its own, with no worker on its task queue: the signals stay in the workflow's
   * history to be read, and nothing writes to the resource but the watcher.
   */
  async function bareWatcher(
    label: string,
    options: Partial<WatcherOptions>,
    before?: (namespace: string) => Promise<unknown>,
  ) {
    const namespace = `${env.namespace}-${label}`;
    await env.kc.makeApiClient(k8s.CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    await before?.(namespace);
    const connection = await createTemporalConnection(env.custom, namespace, process.env.TEMPORAL_ADDRESS!);
    const connectionVersion = connection.metadata!.resourceVersion!;
    const { client, temporal } = unreliable(env.client);
    const lines: string[] = [];
    const watcher = new Watcher({
      kubeConfig: env.kc,
      client,
      taskQueue: `unpolled-${namespace}`,
      installation: 'bare',
      namespaces: [namespace],
      log: (m) => lines.push(m),
      ...options,
    });
    await watcher.start();
    /** A resource; with `finalizers`, one handed over before (so claimed by this installation too). */
    const create = async (name: string, finalizers: string[] = []) => {
      const obj = resource(env, name, { env: { VERSION: 'v1' } });
      const claim = finalizers.length ? { annotations: { [installationAnnotation]: 'bare' } } : {};
      await env.custom.createNamespacedCustomObject({
        group,
        version,
        namespace,
        plural,
        body: { ...obj, metadata: { name, namespace, finalizers, ...claim } },
      });
      return (await getTwd(name, namespace)).metadata!.uid!;
    };
    /** The specChanged payloads (wake-up hints) in the workflow's history. */
    const specsReceived = async (name: string) => {
      const history = await env.client.workflow.getHandle(rolloutWorkflowId('bare', namespace, name)).fetchHistory();
      return (history.events ?? [])
        .filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'specChanged')
        .map((e) =>
          defaultPayloadConverter.fromPayload<SpecChangedHint>(
            e.workflowExecutionSignaledEventAttributes!.input!.payloads![0]!,
          ),
        );
    };
    const cleanUp = async (name: string) => {
      await watcher.stop();
      await env.client.workflow
        .getHandle(rolloutWorkflowId('bare', namespace, name))
        .terminate('test over')
        .catch(() => {});
    };
    return { watcher, namespace, temporal, lines, create, specsReceived, cleanUp, connectionVersion };
  }

  test('an informer whose first list failed is not synced: nothing is judged or written from its empty cache until it lists', async () => {
    /** Lists of TemporalConnections fail (404: the kind unserved) while `failing`; watches go through. */
    class FailingConnectionLists extends k8s.KubeConfig {
      failing = true;
      failures = 0;
      override async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
        await super.applySecurityAuthentication(context);
        const url = context.getUrl();
        if (this.failing && /\/temporalconnections(\?|$)/.test(url) && !url.includes('watch=')) {
          this.failures++;
          context.setUrl(url.replace('/temporalconnections', '/temporalconnectionsunserved'));
        }
      }
    }
    const kc = new FailingConnectionLists();
    kc.loadFromFile(process.env.KUBECONFIG!);
    const w = await bareWatcher('unlisted', {
      kubeConfig: kc,
      retryBackoff: { initialMs: 100, maxMs: 400, jitter: 0.2 },
    });
    try {
      expect(w.watcher.problems()).toBeDefined(); // not ready: a watch failing, not every informer listed
      await w.create('early');
      const failed = kc.failures;
      // Listed again and refused again since the resource exists (the first sight of it came and went).
      await eventually('the list refused again', () => kc.failures > failed);
      expect((await getTwd('early', w.namespace)).status).toBeUndefined();
      kc.failing = false;
      w.temporal.down = false;
      await eventually(
        'specChanged once the connections listed',
        async () => (await w.specsReceived('early')).length > 0,
      );
      expect(w.watcher.problems()).toBeUndefined();
      const events = await env.kc
        .makeApiClient(k8s.CoreV1Api)
        .listNamespacedEvent({ namespace: w.namespace, fieldSelector: 'involvedObject.name=early' });
      expect(events.items.filter((e) => e.reason === 'ConnectionNotFound')).toEqual([]);
    } finally {
      await w.cleanUp('early');
    }
  });

  test('a failed signal is retried with backoff until it gets through, without another Kubernetes event', async () => {
    const w = await bareWatcher('retry', { retryBackoff: { initialMs: 100, maxMs: 400, jitter: 0.2 } });
    try {
      const uid = await w.create('lost');
      // The watcher adds its finalizer (the last Kubernetes event) while its signal keeps failing.
      const rv = await eventually('finalizer added', async () => {
        const obj = await getTwd('lost', w.namespace);
        return obj.metadata?.finalizers?.includes(finalizer) && obj.metadata.resourceVersion;
      });
      const failures = () => w.lines.filter((l) => l.includes('lost') && l.includes('retrying')).length;
      const before = failures();
      await eventually('two more failed attempts after the last event', () => failures() >= before + 2);
      w.temporal.down = false;
      const [spec] = await eventually('specChanged in the history', async () => {
        const specs = await w.specsReceived('lost');
        return specs.length > 0 && specs;
      });
      // A hint, not the spec: the object it is of, as last seen (with the finalizer: the retry reads the cache).
      expect(spec).toEqual({
        uid,
        kind: 'TemporalWorkerDeployment',
        generation: 1,
        resourceVersion: rv,
        connectionVersion: w.connectionVersion,
      });
      expect((await getTwd('lost', w.namespace)).metadata?.resourceVersion).toBe(rv);
    } finally {
      await w.cleanUp('lost');
    }
  });

  test('a periodic resync from the informer cache repairs a signal whose retries were given up', async () => {
    // Retries an hour apart: only the resync can deliver it within the test.
    const w = await bareWatcher('resync', {
      retryBackoff: { initialMs: 3_600_000, maxMs: 3_600_000, jitter: 0 },
      resyncIntervalMs: 1000,
    });
    try {
      // With the finalizer already on, the watcher writes nothing: the creation is the only Kubernetes event.
      const uid = await w.create('lost', [finalizer]);
      const rv = (await getTwd('lost', w.namespace)).metadata?.resourceVersion;
      await eventually('the signal failed', () => w.lines.some((l) => l.includes('lost') && l.includes('retrying')));
      w.temporal.down = false;
      const [spec] = await eventually('specChanged in the history', async () => {
        const specs = await w.specsReceived('lost');
        return specs.length > 0 && specs;
      });
      expect(spec).toEqual({
        uid,
        kind: 'TemporalWorkerDeployment',
        generation: 1,
        resourceVersion: rv,
        connectionVersion: w.connectionVersion,
      });
      expect((await getTwd('lost', w.namespace)).metadata?.resourceVersion).toBe(rv);
    } finally {
      await w.cleanUp('lost');
    }
  });

  test("a new resource's first Deployment is applied at first sight, with Temporal unreachable: the very one the workflow's apply leaves unchanged", async () => {
    // A Deployment of temporal-worker-controller's for the name `legacy`, there before the watcher starts.
    const legacy = {
      metadata: {
        name: 'legacy-abc',
        labels: { [ForeignLabels.deploymentName]: 'legacy', [ForeignLabels.buildId]: 'abc' },
      },
      spec: {
        replicas: 0,
        selector: { matchLabels: { app: 'legacy' } },
        template: { metadata: { labels: { app: 'legacy' } }, spec: { containers: [{ name: 'w', image: 'w:1' }] } },
      },
    };
    const w = await bareWatcher('first', { retryBackoff: { initialMs: 100, maxMs: 400, jitter: 0.2 } }, (namespace) =>
      env.apps.createNamespacedDeployment({ namespace, body: legacy }),
    );
    const ours = async (name: string) =>
      (
        await env.apps.listNamespacedDeployment({
          namespace: w.namespace,
          labelSelector: `${Labels.workerDeployment}=${name}`,
        })
      ).items;
    /** The watcher has handled the resource's first sight (its signal failed after the apply settled). */
    const handled = (name: string) =>
      eventually(`${name} handled`, () => w.lines.some((l) => l.includes(`/${name} (`) && l.includes('retrying')));
    try {
      const uid = await w.create('fresh');
      const [d] = await eventually('the Deployment', async () => {
        const items = await ours('fresh');
        return items.length > 0 && items;
      });
      expect(d!.metadata!.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'TemporalWorkerDeployment', name: 'fresh', uid, controller: true }),
      ]);
      // The Deployment can be listed before the watcher has read the apply's answer and logged it.
      await eventually('the watcher logged its apply', () => w.lines.includes('applied the first Deployment'));

      // What the workflow's first activity applies, from the spec and connection the watcher hands it: a no-op.
      const stored = await getTwd('fresh', w.namespace);
      const parsed = parseWorkerResource(stored, 'TemporalWorkerDeployment');
      if (!parsed.ok) throw new Error(parsed.problem);
      const connectionObj = await env.custom.getNamespacedCustomObject({
        group,
        version,
        namespace: w.namespace,
        plural: 'temporalconnections',
        name: 'local',
      });
      const connection = parseConnection(connectionObj, 'TemporalConnection');
      if (!connection.ok) throw new Error(connection.problem);
      const { spec } = parsed.resource;
      const buildId = computeBuildId(spec.template);
      expect(d!.metadata!.labels?.[Labels.buildId]).toBe(buildId);
      const owner = { namespace: w.namespace, name: 'fresh', uid, kind: 'TemporalWorkerDeployment' as const };
      const desired = {
        generation: 1,
        spec,
        kind: 'TemporalWorkerDeployment' as const,
        buildId,
        connection: connection.spec,
        connectionVersion: '',
        uid,
      };
      const again = await createKubernetesActivities(env.kc).ensureVersionedDeployment({
        owner,
        desired,
        buildId,
        template: spec.template,
      });
      expect(again.exists).toBe(true);
      const [after] = await ours('fresh');
      expect(after!.metadata!.resourceVersion).toBe(d!.metadata!.resourceVersion);

      // A name with a Deployment of temporal-worker-controller's: adopting it is the workflow's call, so no apply.
      await w.create('legacy');
      // Handed over before (our finalizer on it already): the workflow has it, whatever is there.
      await w.create('known', [finalizer]);
      await handled('legacy');
      await handled('known');
      expect(await ours('legacy')).toEqual([]);
      expect(await ours('known')).toEqual([]);
    } finally {
      await w.cleanUp('fresh');
    }
  });
});
