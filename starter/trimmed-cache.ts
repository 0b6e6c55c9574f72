/**
 * The watcher's informer caches keep only what the watcher reads of each object, as controller-runtime's cache
 * transforms do: at a thousand resources the caches hold a thousand resources and two thousand Deployments, and a
 * Deployment's pod template and every object's `managedFields` are most of their size.
 */
import * as k8s from '@kubernetes/client-node';

/** An informer and its cache; `latestResourceVersion` is '' until its list has succeeded. */
type Informer<T extends k8s.KubernetesObject> = k8s.Informer<T> &
  k8s.ObjectCache<T> & { latestResourceVersion(): string };

/**
 * An informer (as `k8s.makeInformer`) whose listed and watched objects pass through `trim` before they are cached
 * and handed to its event handlers. A `trim` that throws caches the object whole: never an event lost.
 */
export function makeTrimmedInformer<T extends k8s.KubernetesObject>(
  kubeConfig: k8s.KubeConfig,
  path: string,
  list: () => Promise<k8s.KubernetesListObject<T>>,
  trim: (obj: T) => T,
  labelSelector?: string,
): Informer<T> {
  const safeTrim = (obj: T): T => {
    try {
      return trim(obj);
    } catch {
      return obj;
    }
  };
  const trimmedList = async () => {
    const listed = await list();
    return { ...listed, items: (listed.items ?? []).map(safeTrim) };
  };
  return new k8s.ListWatch<T>(path, new TrimmingWatch(kubeConfig, safeTrim), trimmedList, false, labelSelector);
}

/** A watch whose objects pass through `trim`; ERROR (a Status) and BOOKMARK (a resourceVersion) pass as they are. */
class TrimmingWatch<T> extends k8s.Watch {
  constructor(
    config: k8s.KubeConfig,
    private readonly trim: (obj: T) => T,
  ) {
    super(config);
  }

  override watch(...[path, params, callback, done]: Parameters<k8s.Watch['watch']>): Promise<AbortController> {
    return super.watch(
      path,
      params,
      (phase, obj, raw) => callback(phase, phase === 'ERROR' || phase === 'BOOKMARK' ? obj : this.trim(obj as T), raw),
      done,
    );
  }
}

/**
 * A Deployment as the watcher reads it: what `observeDeployment` (kube/versioned-deployment.ts) reports, with the
 * labels naming its owner, and no pod template or managedFields.
 */
export function trimDeployment(d: k8s.V1Deployment): k8s.V1Deployment {
  const m = d.metadata ?? {};
  const progressing = d.status?.conditions
    ?.filter((c) => c.type === 'Progressing')
    .map(({ type, status, reason }) => defined({ type, status, reason }));
  return {
    apiVersion: d.apiVersion,
    kind: d.kind,
    metadata: defined({
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      generation: m.generation,
      labels: m.labels,
      deletionTimestamp: m.deletionTimestamp,
    }),
    spec: defined({ replicas: d.spec?.replicas }) as k8s.V1DeploymentSpec,
    status: defined({
      observedGeneration: d.status?.observedGeneration,
      availableReplicas: d.status?.availableReplicas,
      conditions: progressing,
    }),
  };
}

/**
 * A resource's managedFields as the watcher reads them (who set an annotation, whether it still holds a status
 * field): each entry's annotation keys and top-level status fields, without the rest of its field set (the
 * controller's status entry lists every field of every version it reports).
 */
export function trimManagedFields(
  entries: k8s.V1ManagedFieldsEntry[] | undefined,
): k8s.V1ManagedFieldsEntry[] | undefined {
  return entries?.map((entry) => {
    const fields = entry.fieldsV1 as Record<string, Record<string, unknown> | undefined> | undefined;
    const annotations = fields?.['f:metadata']?.['f:annotations'] as Record<string, unknown> | undefined;
    const status = fields?.['f:status'];
    const kept: Record<string, unknown> = {};
    if (annotations) kept['f:metadata'] = { 'f:annotations': keysOnly(annotations) };
    if (status) kept['f:status'] = keysOnly(status);
    return { ...entry, fieldsV1: kept };
  });
}

/** A resource with its managedFields trimmed (see `trimManagedFields`); everything else is read. */
export function trimResource<T extends k8s.KubernetesObject>(obj: T): T {
  if (!obj.metadata?.managedFields) return obj;
  return { ...obj, metadata: { ...obj.metadata, managedFields: trimManagedFields(obj.metadata.managedFields) } };
}

const keysOnly = (o: Record<string, unknown>) => Object.fromEntries(Object.keys(o).map((k) => [k, {}]));

function defined<T extends Record<string, unknown>>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
