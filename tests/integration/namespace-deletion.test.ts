/**
 * With kube-controller-manager beside the apiserver (garbage collector, namespace controller), as in a real
 * cluster: owner references are garbage-collected, and deleting a namespace that holds a rollout finishes —
 * Glidepath cleans up Temporal and removes its finalizer, so the namespace does not hang Terminating.
 */
import * as k8s from '@kubernetes/client-node';
import { group, version } from '../../api/common.js';
import { workerDeploymentName } from '../../api/names.js';
import { asMergePatch } from '../../kube/client.js';
import { describeDeploymentSettled } from '../../temporal/describe.js';
import {
  apply,
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
  env = await startRolloutEnv('nsdel');
});
afterAll(async () => {
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

const notFound = (err: unknown) => (err as { code?: number }).code === 404;

/** Whether a read answers 404 (any other error is thrown). */
async function gone(read: () => Promise<unknown>): Promise<boolean> {
  try {
    await read();
    return false;
  } catch (err) {
    if (notFound(err)) return true;
    throw err;
  }
}

async function readyWithCurrent(name: string, timeoutMs = 30_000) {
  return eventually(
    `${name} Ready with a current version`,
    async () => {
      const s = await twdStatus(env, name);
      return s?.phase === 'Ready' && s.currentVersion?.buildID ? s : undefined;
    },
    timeoutMs,
  );
}

/** Whether Temporal still knows the resource's worker deployment (NOT_FOUND once it is deleted). */
async function workerDeploymentExists(name: string): Promise<boolean> {
  const res = await describeDeploymentSettled(
    env.connection.workflowService,
    process.env.TEMPORAL_NAMESPACE ?? 'default',
    workerDeploymentName(env.namespace, name),
  );
  return res !== undefined;
}

/** The Kubernetes Status message inside a client error's text, or its first line. */
const brief = (message: string) =>
  /\\?"message\\?":\\?"(.*?)\\?",\\?"reason/.exec(message)?.[1]?.replace(/\\+"/g, '"') ?? message.split('\n')[0]!;

/** What holds a Terminating namespace: its conditions, the resource's finalizers, the workflow's pending activities. */
async function whyNamespaceStays(name: string): Promise<string> {
  const lines: string[] = [];
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  const note = async (what: string, fn: () => Promise<string>) => {
    try {
      lines.push(`${what}: ${await fn()}`);
    } catch (err) {
      lines.push(`${what}: (${(err as Error).message})`);
    }
  };
  await note('namespace conditions', async () => {
    const ns = await core.readNamespace({ name: env.namespace });
    return (
      (ns.status?.conditions ?? [])
        .filter((c) => c.status === 'True')
        .map((c) => `${c.type}: ${c.message}`)
        .join('; ') || 'none'
    );
  });
  await note('resource', async () => {
    const obj = (await env.custom.getNamespacedCustomObject({
      group,
      version,
      namespace: env.namespace,
      plural,
      name,
    })) as {
      metadata: k8s.V1ObjectMeta;
      status?: { phase?: string; message?: string };
    };
    return `finalizers ${JSON.stringify(obj.metadata.finalizers ?? [])}, phase ${obj.status?.phase} (${obj.status?.message ?? ''})`;
  });
  await note('workflow', async () => {
    const d = await workflowHandle(env, name).describe();
    const pending = (d.raw.pendingActivities ?? []).map(
      (a) => `${a.activityType?.name} attempt ${a.attempt}: ${brief(a.lastFailure?.message ?? 'no failure yet')}`,
    );
    return `${d.status.name}; pending activities: ${pending.join(' | ') || 'none'}`;
  });
  return lines.join('\n');
}

// First: the namespace test below deletes the env's namespace.
test('an object owned by a TemporalWorkerDeployment is garbage-collected once the resource is gone', async () => {
  await apply(env, resource(env, 'owner', { env: { VERSION: 'v1' } }));
  await readyWithCurrent('owner');
  const twd = (await env.custom.getNamespacedCustomObject({
    group,
    version,
    namespace: env.namespace,
    plural,
    name: 'owner',
  })) as {
    metadata: k8s.V1ObjectMeta;
  };
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedConfigMap({
    namespace: env.namespace,
    body: {
      metadata: {
        name: 'owned',
        ownerReferences: [
          {
            apiVersion: `${group}/${version}`,
            kind: 'TemporalWorkerDeployment',
            name: 'owner',
            uid: twd.metadata.uid!,
          },
        ],
      },
      data: { purpose: 'garbage collection' },
    },
  });
  expect(await gone(() => core.readNamespacedConfigMap({ name: 'owned', namespace: env.namespace }))).toBe(false);

  // Our finalizer off first, so the resource goes at once; the deletion (and its Deployments') is not a sunset.
  env.deleting.add('owner');
  await env.custom.patchNamespacedCustomObject(
    { group, version, namespace: env.namespace, plural, name: 'owner', body: { metadata: { finalizers: null } } },
    asMergePatch,
  );
  await env.custom.deleteNamespacedCustomObject({ group, version, namespace: env.namespace, plural, name: 'owner' });
  await eventually(
    'the resource gone',
    () =>
      gone(() =>
        env.custom.getNamespacedCustomObject({ group, version, namespace: env.namespace, plural, name: 'owner' }),
      ),
    30_000,
    200,
  );
  await eventually(
    'the ConfigMap garbage-collected',
    () => gone(() => core.readNamespacedConfigMap({ name: 'owned', namespace: env.namespace })),
    60_000,
    200,
  );
}, 150_000);

test('deleting the namespace of a rollout: Glidepath cleans up and lets go, the namespace goes', async () => {
  await apply(env, resource(env, 'nsapp', { env: { VERSION: 'v1' } }));
  await readyWithCurrent('nsapp');
  expect(await workerDeploymentExists('nsapp')).toBe(true);

  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  await env.deleteNamespace();
  // The namespace controller deletes the resource (our finalizer holds it until the workflow's cleanup) and everything else.
  try {
    await eventually('the namespace gone', () => gone(() => core.readNamespace({ name: env.namespace })), 90_000, 500);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${await whyNamespaceStays('nsapp')}`);
  }
  await eventually(
    'the workflow completed',
    async () => (await workflowHandle(env, 'nsapp').describe()).status.name === 'COMPLETED',
    10_000,
  );
  expect(await workerDeploymentExists('nsapp')).toBe(false);
}, 150_000);
