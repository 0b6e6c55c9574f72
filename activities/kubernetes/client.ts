/** Kubernetes API access shared by the activities, the watcher and the pod simulator. */
import * as k8s from '@kubernetes/client-node';
import { Context } from '@temporalio/activity';

/** Loads a kubeconfig: the given file, else $KUBECONFIG / ~/.kube/config, else in-cluster. */
export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromDefault();
  return kc;
}

/** Request options for each patch flavour (client-node sends JSON patch unless told otherwise). */
export const asApply = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply);
export const asMergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/**
 * `options` with the request tied to the running activity attempt: when the attempt is cancelled (a local
 * activity past its timeout is, before its retry starts), the request is aborted instead of landing after the
 * retry's. Outside an activity (the watcher), `options` as they are.
 */
export function withinAttempt(options: k8s.ConfigurationOptions<k8s.ObservableMiddleware>): k8s.ConfigurationOptions<k8s.ObservableMiddleware> {
  let signal: AbortSignal;
  try {
    signal = Context.current().cancellationSignal;
  } catch {
    return options;
  }
  // The object API hands call options to its observable core as they are: observable middleware, as setHeaderOptions'.
  const abortWithAttempt: k8s.ObservableMiddleware = {
    pre: (request) => (request.setSignal(signal), new k8s.Observable(Promise.resolve(request))),
    post: (response) => new k8s.Observable(Promise.resolve(response)),
  };
  return { ...options, middleware: [...(options.middleware ?? []), abortWithAttempt], middlewareMergeStrategy: 'append' };
}

/** The HTTP status of a failed Kubernetes call, if it was one. */
export function statusCode(err: unknown): number | undefined {
  return err instanceof k8s.ApiException ? err.code : undefined;
}

/** Runs a call, treating 404 as `undefined` (the object is gone, which is often what we wanted). */
export async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (statusCode(err) === 404) return undefined;
    throw err;
  }
}
