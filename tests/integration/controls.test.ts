/**
 * The controls from outside, against real servers: `kubectl annotate` (the watcher runs the annotation as an
 * update and removes it; refused: removed with a Warning Event; Temporal unreachable: kept and retried; a
 * watcher that dies before the removal: the next one's re-send is the same control) and the CLI (updates
 * answered with the status, refusals as errors), and both in the workflow's `history` with who and why.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { group, version } from '../../api/common.js';
import { asMergePatch, statusCode } from '../../kube/client.js';
import { removalPatch } from '../../starter/annotations.js';
import { main } from '../../cli/main.js';
import { Watcher } from '../../starter/watcher.js';
import { history } from '../../workflows/messages.js';
import {
  apply,
  eventually,
  plural,
  resource,
  routing,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
  type ResourceOptions,
} from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('controls');
});
afterAll(async () => {
  await env?.stop();
});
afterEach(() => {
  expect(env.violations).toEqual([]);
});

/** What `kubectl annotate twd NAME KEY=VALUE` sends: a merge patch under the field manager `kubectl-annotate`. */
async function annotate(e: RolloutEnv, name: string, key: string, value: string): Promise<void> {
  await e.custom.patchNamespacedCustomObject(
    {
      group,
      version,
      namespace: e.namespace,
      plural,
      name,
      fieldManager: 'kubectl-annotate',
      body: { metadata: { annotations: { [key]: value } } },
    },
    asMergePatch,
  );
}

async function annotations(e: RolloutEnv, name: string): Promise<Record<string, string>> {
  const obj = (await e.custom.getNamespacedCustomObject({
    group,
    version,
    namespace: e.namespace,
    plural,
    name,
  })) as k8s.KubernetesObject;
  return obj.metadata?.annotations ?? {};
}

const removed = (e: RolloutEnv, name: string, key: string) =>
  eventually(`${key} removed`, async () => !(key in (await annotations(e, name))));

async function phaseIs(e: RolloutEnv, name: string, phase: string, timeoutMs = 30_000) {
  return eventually(
    `${name} phase ${phase}`,
    async () => {
      const s = await twdStatus(e, name);
      return s?.phase === phase ? s : undefined;
    },
    timeoutMs,
  );
}

/** v1 current, then v2 applied: returns both builds once v2 is in `phase`. */
async function rollingOut(e: RolloutEnv, name: string, o: ResourceOptions, phase: string) {
  await apply(e, resource(e, name, { ...o, env: { VERSION: 'v1' } }));
  const v1 = (await phaseIs(e, name, 'Ready')).currentVersion!.buildID;
  await apply(e, resource(e, name, { ...o, env: { VERSION: 'v2' } }));
  const v2 = (await phaseIs(e, name, phase)).targetVersion!.buildID;
  return { v1, v2 };
}

async function warnings(e: RolloutEnv, name: string, reason: string): Promise<k8s.CoreV1Event[]> {
  const list = await e.kc
    .makeApiClient(k8s.CoreV1Api)
    .listNamespacedEvent({ namespace: e.namespace, fieldSelector: `involvedObject.name=${name}` });
  return list.items.filter((ev) => ev.type === 'Warning' && ev.reason === reason);
}

test('kubectl annotate glidepath.dev/promote=full: a Manual rollout goes on, v2 becomes current, the annotation is removed', async () => {
  const { v2 } = await rollingOut(env, 'ann-promote', { strategy: 'Manual' }, 'AwaitingPromotion');
  await annotate(env, 'ann-promote', 'glidepath.dev/promote', 'full');
  await eventually('v2 current in Temporal', async () => (await routing(env, 'ann-promote')).current === v2);
  await removed(env, 'ann-promote', 'glidepath.dev/promote');
  await phaseIs(env, 'ann-promote', 'Ready');
});

test('kubectl annotate glidepath.dev/abort=<reason> during a long step: Aborted with that reason, removed, in history as kubectl', async () => {
  const steps = [{ rampPercentage: 20, pauseDuration: '1h' }];
  const { v1 } = await rollingOut(env, 'ann-abort', { strategy: 'Progressive', steps }, 'Ramping');
  await annotate(env, 'ann-abort', 'glidepath.dev/abort', 'p99 latency doubled');
  const status = await phaseIs(env, 'ann-abort', 'Aborted');
  expect(status.lastAbortReason).toBe('p99 latency doubled');
  await removed(env, 'ann-abort', 'glidepath.dev/abort');
  await eventually('the ramp cleared', async () => {
    const r = await routing(env, 'ann-abort');
    return r.current === v1 && !r.ramping;
  });
  const entries = await workflowHandle(env, 'ann-abort').query(history);
  const abort = entries.find((e) => e.kind === 'control' && e.what === 'abort');
  expect(abort).toMatchObject({ who: 'kubectl annotate (kubectl-annotate)', why: 'p99 latency doubled' });
});

test('a refused annotation is removed anyway, with a Warning Event that says why', async () => {
  await apply(env, resource(env, 'ann-refused', { strategy: 'Manual', env: { VERSION: 'v1' } }));
  await phaseIs(env, 'ann-refused', 'Ready');
  await annotate(env, 'ann-refused', 'glidepath.dev/promote', ''); // nothing in flight to promote
  await removed(env, 'ann-refused', 'glidepath.dev/promote');
  const [event] = await eventually(
    'a Warning Event ControlRefused',
    async () => {
      const refused = (await warnings(env, 'ann-refused', 'ControlRefused')).filter((e) =>
        e.message?.startsWith('glidepath.dev/promote='),
      );
      return refused.length ? refused : undefined;
    },
    10_000,
  );
  expect(event!.message).toMatch(/^glidepath\.dev\/promote= refused: .*no rollout/);
  // The removal's `test` fails with 422 once the annotation is gone (or changed): the watcher counts that as done.
  const patch = env.custom.patchNamespacedCustomObject({
    group,
    version,
    plural,
    namespace: env.namespace,
    name: 'ann-refused',
    body: removalPatch('glidepath.dev/promote', ''),
  });
  expect(await patch.then(() => 200, statusCode)).toBe(422);
});

test('the CLI: promote --full answers with the status, resume when not paused is refused, history lists the control', async () => {
  const { v2 } = await rollingOut(env, 'cli', { strategy: 'Manual' }, 'AwaitingPromotion');
  const target = `${env.namespace}/cli`;
  expect(await main(['promote', target, '--full', 'looks', 'good'])).toMatch(
    new RegExp(`^promoted ${target}: [A-Za-z]+`),
  );
  await eventually('v2 current in Temporal', async () => (await routing(env, 'cli')).current === v2);

  await expect(main(['resume', target])).rejects.toThrow(/^refused: .*not paused/);

  // Aligned columns `at  who  what  why`, at least two spaces apart.
  const out = await main(['history', target]);
  const rows = out.split('\n').map((l) => l.split(/\s{2,}/));
  const promoted = rows.find(([, , what]) => what?.startsWith('promote'));
  expect(promoted).toEqual([
    expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    expect.stringContaining(userInfo().username),
    `promote ${v2}`,
    'looks good',
  ]);
});

test('a spec that cannot be taken mid-rollout: the rollout holds (its activities act only on the spec the apiserver has), its status says so as the watcher does, and it goes on once the spec is fixed', async () => {
  const { v1, v2 } = await rollingOut(env, 'bad-mid', { strategy: 'Manual' }, 'AwaitingPromotion');
  const broken = resource(env, 'bad-mid', { strategy: 'Manual', env: { VERSION: 'v2' } });
  broken.spec.workerOptions.connectionRef.name = 'missing';
  await apply(env, broken);
  await eventually('the watcher says ConnectionNotFound', async () =>
    (await twdStatus(env, 'bad-mid'))?.conditions?.some((c) => c.reason === 'ConnectionNotFound'),
  );
  // A promote asks for a routing change. The activity reads the resource, whose connection is missing now, and
  // refuses: the connection the workflow carries from the spec before is not the apiserver's.
  await workflowHandle(env, 'bad-mid').executeUpdate('promote', {
    args: [{ buildId: v2, full: true, identity: 'test' }],
  });
  const refusal = await eventually('a Warning Event says the routing change was refused', async () => {
    const list = await env.kc
      .makeApiClient(k8s.CoreV1Api)
      .listNamespacedEvent({ namespace: env.namespace, fieldSelector: 'involvedObject.name=bad-mid' });
    return list.items.find(
      (ev) => ev.type === 'Warning' && /refused: .*ConnectionNotFound|refused: .*missing/.test(ev.message ?? ''),
    );
  });
  expect(refusal.message).toMatch(/cannot be acted on/);
  expect((await routing(env, 'bad-mid')).current).toBe(v1);
  expect((await twdStatus(env, 'bad-mid'))?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
    status: 'False',
    reason: 'ConnectionNotFound',
  });
  // Fixed, the promote it was refused is made.
  await apply(env, resource(env, 'bad-mid', { strategy: 'Manual', env: { VERSION: 'v2' } }));
  await eventually(
    'v2 current in Temporal once the spec is fixed',
    async () => (await routing(env, 'bad-mid')).current === v2,
  );
});

test('the CLI refuses a control to someone Kubernetes does not let patch the resource, and sends nothing', async () => {
  await rollingOut(env, 'cli-rbac', { strategy: 'Manual' }, 'AwaitingPromotion');
  const target = `${env.namespace}/cli-rbac`;
  // A ServiceAccount that may read rollouts but not patch them.
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  const rbac = env.kc.makeApiClient(k8s.RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace: env.namespace, body: { metadata: { name: 'viewer' } } });
  await rbac.createNamespacedRole({
    namespace: env.namespace,
    body: {
      metadata: { name: 'viewer' },
      rules: [
        {
          apiGroups: [group],
          resources: ['temporalworkerdeployments', 'workerdeployments'],
          verbs: ['get', 'list', 'watch'],
        },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: env.namespace,
    body: {
      metadata: { name: 'viewer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'viewer' },
      subjects: [{ kind: 'ServiceAccount', name: 'viewer', namespace: env.namespace }],
    },
  });
  const { token } = (
    await core.createNamespacedServiceAccountToken({
      namespace: env.namespace,
      name: 'viewer',
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    })
  ).status!;
  const viewer = new k8s.KubeConfig();
  viewer.loadFromOptions({
    clusters: [{ name: 'test', server: env.kc.getCurrentCluster()!.server, skipTLSVerify: true }],
    users: [{ name: 'viewer', token }],
    contexts: [{ name: 'viewer', cluster: 'test', user: 'viewer' }],
    currentContext: 'viewer',
  });
  const file = join(mkdtempSync(join(tmpdir(), 'viewer-')), 'kubeconfig');
  writeFileSync(file, viewer.exportConfig());
  const before = (await workflowHandle(env, 'cli-rbac').query(history)).length;
  await expect(main(['promote', target, '--full', '--kubeconfig', file])).rejects.toThrow(
    /^refused: Kubernetes does not let you patch/,
  );
  expect((await workflowHandle(env, 'cli-rbac').query(history)).length).toBe(before);
  expect((await twdStatus(env, 'cli-rbac'))?.phase).toBe('AwaitingPromotion');
});

describe('annotations while Temporal is unreachable, and across a watcher restart', () => {
  let env2: RolloutEnv;
  const watchers: Watcher[] = [];

  beforeAll(async () => {
    // The controller's worker runs the workflows; the watchers are the test's own (its own watches no namespace in use).
    env2 = await startRolloutEnv('controls-down', { controller: { namespaces: ['glidepath-unwatched'] } });
  });
  afterAll(async () => {
    for (const w of watchers) await w.stop();
    await env2?.stop();
  });
  afterEach(() => {
    expect(env2.violations).toEqual([]);
  });

  /**
   * A client that fails while `down` (as with the Temporal frontend unreachable), or whose calls reach Temporal
   * but whose answers are lost (`lose answers`: the watcher cannot tell whether its update was taken).
   */
  function unreliable(real: Client) {
    const temporal = { mode: 'up' as 'up' | 'down' | 'lose answers' };
    const call =
      <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        if (temporal.mode === 'down') throw new Error('14 UNAVAILABLE: connection refused (test)');
        if (temporal.mode === 'up') return fn(...args);
        await fn(...args).catch(() => {}); // taken or refused: the watcher never hears which
        throw new Error('14 UNAVAILABLE: connection reset (test)');
      };
    const client = {
      workflow: {
        signalWithStart: call((...args: Parameters<Client['workflow']['signalWithStart']>) =>
          real.workflow.signalWithStart(...args),
        ),
        getHandle: (id: string) => {
          const handle = real.workflow.getHandle(id);
          return {
            signal: call((...args: Parameters<typeof handle.signal>) => handle.signal(...args)),
            executeUpdate: call((...args: Parameters<typeof handle.executeUpdate>) => handle.executeUpdate(...args)),
          };
        },
      },
    } as unknown as Client;
    return { client, temporal };
  }

  async function startWatcher(client: Client, lines: string[]): Promise<Watcher> {
    const watcher = new Watcher({
      kubeConfig: env2.kc,
      client,
      taskQueue: `glidepath-${env2.namespace}`,
      installation: env2.installation,
      namespaces: [env2.namespace],
      retryBackoff: { initialMs: 100, maxMs: 400, jitter: 0.2 },
      log: (m) => lines.push(m),
    });
    watchers.push(watcher);
    await watcher.start();
    return watcher;
  }

  test('the update taken but its answer lost, the watcher dies, Temporal is down: the annotation stays, and the next watcher runs it once', async () => {
    const { client, temporal } = unreliable(env2.client);
    const linesA: string[] = [];
    const a = await startWatcher(client, linesA);
    await rollingOut(
      env2,
      'crash',
      { strategy: 'Progressive', steps: [{ rampPercentage: 20, pauseDuration: '1h' }] },
      'Ramping',
    );

    temporal.mode = 'lose answers';
    await annotate(env2, 'crash', 'glidepath.dev/pause', 'looking at errors');
    await phaseIs(env2, 'crash', 'Paused'); // the update reached the workflow…
    await eventually('the lost answer retried', () =>
      linesA.some((l) => l.startsWith('controls ') && l.includes('retrying')),
    ); // …the watcher does not know
    await a.stop(); // dies before it could remove the annotation
    expect(await annotations(env2, 'crash')).toMatchObject({ 'glidepath.dev/pause': 'looking at errors' });

    temporal.mode = 'down';
    const linesB: string[] = [];
    await startWatcher(client, linesB);
    await eventually('the next watcher retrying', () => linesB.filter((l) => l.includes('retrying')).length >= 3);
    expect(await annotations(env2, 'crash')).toMatchObject({ 'glidepath.dev/pause': 'looking at errors' });

    temporal.mode = 'up';
    await removed(env2, 'crash', 'glidepath.dev/pause');
    // The re-send carried the same requestId: one pause in the history, no "already paused" refusal.
    const pauses = (await workflowHandle(env2, 'crash').query(history)).filter((e) => e.what === 'pause');
    expect(pauses).toEqual([
      expect.objectContaining({
        kind: 'control',
        who: 'kubectl annotate (kubectl-annotate)',
        why: 'looking at errors',
      }),
    ]);
    expect((await warnings(env2, 'crash', 'ControlRefused')).map((e) => e.message)).toEqual([]);
    expect((await twdStatus(env2, 'crash'))?.phase).toBe('Paused');
  });
});
