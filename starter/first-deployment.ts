/**
 * The watcher's first apply of a new resource's Deployment, made beside the workflow's start instead of after its
 * first task: `kubectl apply` to a Deployment in one apiserver round trip. It is the Deployment the workflow's
 * first activity applies in that case, rendered by the same code, so the workflow's apply changes nothing.
 *
 * It is fenced on the resource's resourceVersion without waiting on the fence: the Deployment is created (never
 * applied over anything: it cannot overwrite the workflow's newer apply) while the finalizer patch, which
 * carries the resourceVersion seen, goes out beside it. If the patch is refused because the object moved on (409,
 * or 404), the resource is read again: what was created is kept when the object still asks for that build (another
 * replica, or the workflow, wrote it meanwhile), else deleted unless it changed since (uid and resourceVersion).
 */
import * as k8s from '@kubernetes/client-node';
import { computeBuildId } from '../api/build-id.js';
import { group, version } from '../api/common.js';
import { parseWorkerResource, pluralOf, type ResourceKind } from '../api/kinds.js';
import type { Desired } from '../api/resource.js';
import { asApply, ignoreNotFound, statusCode } from '../kube/client.js';
import { managerName, renderVersionedDeployment, type Owner } from '../kube/versioned-deployment.js';
import type { Resource } from './informers.js';
import { kindOf } from './raw-resource.js';

/**
 * First Deployments the watcher applies at once, at most; a resource beyond that gets its Deployment from its
 * workflow, as before. A thousand resources applied together would otherwise be a thousand Deployments rendered
 * and a thousand apiserver requests in flight at once in the controller (its RSS grew by 140 MB at 1,000).
 */
const maxFirstApplies = 10;

export interface FirstDeployment {
  owner: Owner;
  desired: Desired;
  /** The finalizer patch carrying the resourceVersion seen: rejects when the object moved on. */
  fence: () => Promise<void>;
  /** The build the object asks for now, read from the apiserver (undefined: gone, replaced or being deleted). */
  buildIdNow: () => Promise<string | undefined>;
}

/** `created` (and fenced), `exists` (someone made it first: left alone), or why it was not created. */
export type FirstDeploymentOutcome = 'created' | 'exists' | { notCreated: string };

/** Rejects with the fence's error when the fence is refused (after undoing the create); a failed create is an outcome. */
export async function createFirstDeployment(
  apps: k8s.AppsV1Api,
  input: FirstDeployment,
): Promise<FirstDeploymentOutcome> {
  const { owner, desired } = input;
  const body = renderVersionedDeployment({
    owner,
    spec: desired.spec,
    connection: desired.connection,
    buildId: desired.buildId,
  });
  // A server-side apply that can only create: a resourceVersion no stored object has is a precondition that fails
  // (409) on any existing one. Made as the workflow's own apply (same manager, same fields), which it then leaves alone.
  body.metadata = { ...body.metadata, resourceVersion: '1' };
  const create = apps
    .patchNamespacedDeployment(
      { name: body.metadata.name!, namespace: owner.namespace, body, fieldManager: managerName, force: true },
      asApply,
    )
    .catch((err: unknown) => {
      if (statusCode(err) === 409) return undefined; // already there: never overwritten from here
      throw err;
    });
  const [fence, created] = await Promise.allSettled([input.fence(), create]);
  if (fence.status === 'rejected') {
    const made = created.status === 'fulfilled' ? created.value : undefined;
    const movedOn = statusCode(fence.reason) === 409 || statusCode(fence.reason) === 404;
    if (made && movedOn && (await input.buildIdNow()) !== desired.buildId) await undo(apps, made);
    throw fence.reason;
  }
  if (created.status === 'rejected')
    return { notCreated: (created.reason as Error)?.message ?? String(created.reason) };
  return created.value ? 'created' : 'exists';
}

/** Deletes what this replica created, unless it changed since (the workflow applied it: then it is the workflow's). */
async function undo(apps: k8s.AppsV1Api, made: k8s.V1Deployment): Promise<void> {
  const { name, namespace, uid, resourceVersion } = made.metadata ?? {};
  try {
    await apps.deleteNamespacedDeployment({
      name: name!,
      namespace: namespace!,
      body: { preconditions: { uid, resourceVersion } },
    });
  } catch (err) {
    if (statusCode(err) !== 409 && statusCode(err) !== 404) throw err; // changed since, or gone: not ours to undo
  }
}

/** The build the object (`meta`'s uid) asks for now, read from the apiserver: undefined when gone, replaced or being deleted. */
export async function buildIdNow(
  custom: k8s.CustomObjectsApi,
  kind: ResourceKind,
  meta: k8s.V1ObjectMeta,
): Promise<string | undefined> {
  const { namespace = '', name = '', uid } = meta;
  const now = (await ignoreNotFound(
    custom.getNamespacedCustomObject({ group, version, plural: pluralOf(kind), namespace, name }),
  )) as k8s.KubernetesObject | undefined;
  if (!now || now.metadata?.uid !== uid || now.metadata?.deletionTimestamp) return undefined;
  const parsed = parseWorkerResource(now, kind);
  if (!parsed.ok) return undefined;
  try {
    return computeBuildId(parsed.resource.spec.template, parsed.resource.spec.workerOptions.unsafeCustomBuildID);
  } catch {
    return undefined; // an invalid custom build ID: no build is wanted
  }
}

/** The watcher's first applies, at most `maxFirstApplies` at once. */
export class FirstApplies {
  /** First Deployments being applied now. */
  private inFlight = 0;

  constructor(
    private readonly w: {
      apps: k8s.AppsV1Api;
      custom: k8s.CustomObjectsApi;
      log(message: string, fields?: Record<string, unknown>): void;
    },
  ) {}

  /** Whether one more may be applied now. */
  get available(): boolean {
    return this.inFlight < maxFirstApplies;
  }

  /**
   * The first Deployment of a resource no workflow has handled yet (no finalizer of ours, no status) whose name has
   * no Deployment at all, created beside the workflow's start (`createFirstDeployment`: created, never applied
   * over, fenced by the finalizer patch `claim`). Best effort: a failed create is logged, and the workflow applies it.
   */
  async apply(obj: Resource, owner: Owner, desired: Desired, claim: Promise<void>): Promise<void> {
    this.inFlight++;
    const started = performance.now();
    try {
      // Rejects when the fence is refused: retried as any failure.
      const outcome = await createFirstDeployment(this.w.apps, {
        owner,
        desired,
        fence: () => claim,
        buildIdNow: () => buildIdNow(this.w.custom, kindOf(obj), obj.metadata ?? {}),
      });
      if (typeof outcome !== 'string')
        this.w.log(
          `the first Deployment of ${owner.namespace}/${owner.name} was not created at first sight (the workflow applies it): ${outcome.notCreated}`,
        );
      else
        this.w.log('applied the first Deployment', {
          resource: `${owner.namespace}/${owner.name}`,
          buildId: desired.buildId,
          outcome,
          ms: Math.round(performance.now() - started),
        });
    } finally {
      this.inFlight--;
    }
  }
}
