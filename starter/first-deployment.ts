/**
 * The watcher's first apply of a new resource's Deployment, made beside the workflow's start instead of after its
 * first task: `kubectl apply` to a Deployment in one apiserver round trip. It is the Deployment the workflow's
 * first activity applies in that case, rendered by the same code, so the workflow's apply changes nothing.
 *
 * It is fenced on the resource's resourceVersion without waiting on the fence: the Deployment is created (never
 * applied over anything: it cannot overwrite the workflow's newer apply) while the finalizer patch, which
 * carries the resourceVersion seen, goes out beside it. If the patch is refused (this replica's cache was stale),
 * what it created is deleted unless someone wrote it since (preconditions: its uid and resourceVersion).
 */
import * as k8s from '@kubernetes/client-node';
import type { Desired } from '../workflows/state.js';
import { asApply, statusCode } from '../activities/kubernetes/client.js';
import { managerName, renderVersionedDeployment, type Owner } from '../activities/kubernetes/versioned-deployment.js';

export interface FirstDeployment {
  owner: Owner;
  desired: Desired;
  /** The finalizer patch carrying the resourceVersion seen: rejects when the object moved on. */
  fence: () => Promise<void>;
}

/** `created` (and fenced), `exists` (someone made it first: left alone), or why it was not created. */
export type FirstDeploymentOutcome = 'created' | 'exists' | { notCreated: string };

/** Rejects with the fence's error when the fence is refused (after undoing the create); a failed create is an outcome. */
export async function createFirstDeployment(apps: k8s.AppsV1Api, input: FirstDeployment): Promise<FirstDeploymentOutcome> {
  const { owner, desired } = input;
  const body = renderVersionedDeployment({ owner, spec: desired.spec, connection: desired.connection, buildId: desired.buildId });
  // A server-side apply that can only create: a resourceVersion no stored object has is a precondition that fails
  // (409) on any existing one. Made as the workflow's own apply (same manager, same fields), which it then leaves alone.
  body.metadata = { ...body.metadata, resourceVersion: '1' };
  const create = apps.patchNamespacedDeployment({ name: body.metadata.name!, namespace: owner.namespace, body, fieldManager: managerName, force: true }, asApply).catch((err: unknown) => {
    if (statusCode(err) === 409) return undefined; // already there: never overwritten from here
    throw err;
  });
  const [fence, created] = await Promise.allSettled([input.fence(), create]);
  if (fence.status === 'rejected') {
    const made = created.status === 'fulfilled' ? created.value : undefined;
    if (made) await undo(apps, made);
    throw fence.reason;
  }
  if (created.status === 'rejected') return { notCreated: (created.reason as Error)?.message ?? String(created.reason) };
  return created.value ? 'created' : 'exists';
}

/** Deletes what this replica created, unless it changed since (the workflow applied it: then it is the workflow's). */
async function undo(apps: k8s.AppsV1Api, made: k8s.V1Deployment): Promise<void> {
  const { name, namespace, uid, resourceVersion } = made.metadata ?? {};
  try {
    await apps.deleteNamespacedDeployment({ name: name!, namespace: namespace!, body: { preconditions: { uid, resourceVersion } } });
  } catch (err) {
    if (statusCode(err) !== 409 && statusCode(err) !== 404) throw err; // changed since, or gone: not ours to undo
  }
}
