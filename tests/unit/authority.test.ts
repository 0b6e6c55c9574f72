/**
 * activities/authority.ts: an activity's reference is honoured only for the object the apiserver has, claimed by
 * this installation, on the connection it names now. The reads and the Deployment list are fakes of this module's
 * two inputs; the tier that schedules the real activities as an attacker is tests/security.
 */
import type * as k8s from '@kubernetes/client-node';
import { ApplicationFailure } from '@temporalio/common';
import { createAuthority, refusalReason } from '../../activities/authority.js';
import type { Routing } from '../../activities/routing.js';
import type { Desired, Owner } from '../../api/resource.js';
import type { ResourceRead, ResourceReads } from '../../kube/read-resource.js';

const owner: Owner = { namespace: 'shop', name: 'orders', uid: 'uid-1' };
const desired = {
  generation: 1,
  buildId: 'v2',
  connection: { hostPort: 'temporal:7233' },
  connectionVersion: '1',
  spec: { workerOptions: { temporalNamespace: 'workers' } },
} as unknown as Desired;
const found = (o: Partial<Extract<ResourceRead, { found: true }>> = {}): ResourceRead => ({
  found: true,
  uid: 'uid-1',
  kind: 'TemporalWorkerDeployment',
  resourceVersion: '7',
  generation: 1,
  deleting: false,
  claimedBy: 'inst',
  desired,
  ...o,
});

/** `deployments`: the builds whose Deployments the resource has (a `:0` suffix: none of its pods available). */
function authorityOver(read: ResourceRead, deployments: string[] = []) {
  const reads = { readResource: async () => read } as unknown as ResourceReads;
  const apps = {
    listNamespacedDeployment: async ({ labelSelector }: { labelSelector: string }) => ({
      items: deployments
        .map((d) => d.split(':') as [string, string?])
        .filter(([b]) => labelSelector.includes(`glidepath.dev/build-id=${b}`) || !labelSelector.includes('build-id'))
        .map(([b, available]) => ({
          metadata: {
            name: `orders-${b}`,
            labels: { 'glidepath.dev/owner-uid': 'uid-1', 'glidepath.dev/build-id': b },
          },
          status: { availableReplicas: Number(available ?? 1) },
        })),
    }),
  } as unknown as k8s.AppsV1Api;
  return createAuthority(reads, 'inst', apps);
}

/** The reason a call was refused with (it must be refused). */
async function reasonOf(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    return refusalReason(err);
  }
  throw new Error('not refused');
}

const ref = { owner, temporalNamespace: 'workers', hostPort: 'temporal:7233' };
const noRouting = async (): Promise<Routing> => ({ rampPercentage: 0, versions: [], propagating: false });

test('the resource as read: its connection, namespace and worker deployment, whatever the reference carried', async () => {
  const forged = { ...ref, connection: { hostPort: 'attacker:1' }, k8sNamespace: 'elsewhere', deploymentName: 'x' };
  const a = await authorityOver(found()).temporal(forged);
  expect(a).toMatchObject({
    connection: { hostPort: 'temporal:7233' },
    k8sNamespace: 'shop',
    temporalNamespace: 'workers',
    deploymentName: 'shop/orders',
    owner: { namespace: 'shop', name: 'orders', uid: 'uid-1', kind: 'TemporalWorkerDeployment' },
  });
});

test.each([
  ['a reference that is not one', found(), { owner: { namespace: 'shop' } }, 'malformed'],
  ['another object under the name', found({ uid: 'uid-2' }), ref, 'uid'],
  ['no object', { found: false } as ResourceRead, ref, 'not-found'],
  ['another installation', found({ claimedBy: 'other' }), ref, 'claim'],
  ['no claim', found({ claimedBy: undefined }), ref, 'claim'],
  ['a spec it cannot act on', found({ desired: undefined, problem: 'bad' }), ref, 'spec'],
  ['another server', found(), { ...ref, hostPort: 'attacker:1' }, 'place'],
  ['another Temporal namespace', found(), { ...ref, temporalNamespace: 'default' }, 'place'],
])('refused: %s', async (_, read, reference, reason) => {
  expect(await reasonOf(authorityOver(read).temporal(reference as typeof ref))).toBe(reason);
});

test("a deletion's steps: only for a resource being deleted, or gone", async () => {
  expect(await reasonOf(authorityOver(found()).deletion(owner, 'x'))).toBe('not-deleting');
  await expect(authorityOver(found({ deleting: true })).deletion(owner, 'x')).resolves.toMatchObject(owner);
  await expect(authorityOver({ found: false }).deletion(owner, 'x')).resolves.toMatchObject(owner);
});

test('routing: to the spec build, a build of its own Deployments with pods, or one already routed to; nothing else', async () => {
  const a = await authorityOver(found(), ['v1', 'v0:0', 'v9:0']).resource(owner);
  const authority = authorityOver(found(), ['v1', 'v0:0', 'v9:0']);
  await expect(authority.mayRouteTo(a, 'v2', noRouting)).resolves.toBeUndefined();
  await expect(authority.mayRouteTo(a, 'v1', noRouting)).resolves.toBeUndefined();
  const routed = async (): Promise<Routing> => ({ current: 'v0', rampPercentage: 0, versions: [], propagating: false });
  await expect(authority.mayRouteTo(a, 'v0', routed)).resolves.toBeUndefined();
  expect(await reasonOf(authority.mayRouteTo(a, 'evil', noRouting))).toBe('undeclared-build');
  // A Deployment of its own without available pods: new work would find no workers.
  expect(await reasonOf(authority.mayRouteTo(a, 'v9', noRouting))).toBe('undeclared-build');
});

test('a refusal says why, names its reason, and is retryable only when asked', async () => {
  const { refused } = await import('../../activities/authority.js');
  const once = refused('uid', 'gone');
  expect([once.type, once.nonRetryable, once.message, refusalReason(once)]).toEqual([
    'Refused',
    true,
    'refused: gone',
    'uid',
  ]);
  expect(refused('live-version', 'draining', { retryable: true }).nonRetryable).toBe(false);
  expect(refusalReason(new Error('x'))).toBeUndefined();
});
