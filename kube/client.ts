/** Kubernetes API access shared by the activities, the watcher and the pod simulator. */
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { Context } from '@temporalio/activity';

/**
 * A kubeconfig whose requests share keep-alive connections. client-node makes a new `https.Agent` for every
 * request (`applySecurityAuthentication`), so each call opened a TCP connection and did a TLS handshake of its own:
 * 57 ms a call against a busy apiserver, and native memory churned in the controller at thousands of calls.
 * Here each request's agent is swapped for one kept per TLS identity (CA, client certificate and key, server name,
 * verification): a rotated client certificate gets a new agent. Proxies' agents are left as they are.
 */
export class SharedConnectionsKubeConfig extends k8s.KubeConfig {
  private readonly agents = new Map<string, http.Agent>();

  override async applySecurityAuthentication(context: k8s.RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const agent = context.getAgent();
    if (agent) context.setAgent(this.shared(agent));
  }

  override async applyToFetchOptions(opts: https.RequestOptions): ReturnType<k8s.KubeConfig['applyToFetchOptions']> {
    const init = await super.applyToFetchOptions(opts);
    return init.agent instanceof http.Agent ? { ...init, agent: this.shared(init.agent) } : init;
  }

  /** The kept agent with `agent`'s TLS identity (a plain `http.Agent` or `https.Agent`; any other as it is). */
  private shared(agent: http.Agent): http.Agent {
    const secure = agent.constructor === https.Agent;
    if (!secure && agent.constructor !== http.Agent) return agent;
    const options = (agent as http.Agent & { options: https.AgentOptions }).options;
    const identity = [
      secure,
      options.ca,
      options.cert,
      options.key,
      options.pfx,
      options.passphrase,
      options.servername,
      options.rejectUnauthorized,
    ];
    const key = createHash('sha256').update(JSON.stringify(identity)).digest('hex');
    let kept = this.agents.get(key);
    if (!kept) {
      kept = secure
        ? new https.Agent({ ...options, keepAlive: true })
        : new http.Agent({ ...options, keepAlive: true });
      this.agents.set(key, kept);
    }
    return kept;
  }
}

/** Loads a kubeconfig: the given file, else $KUBECONFIG / ~/.kube/config, else in-cluster. */
export function loadKubeConfig(path?: string): k8s.KubeConfig {
  const kc = new SharedConnectionsKubeConfig();
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
export function withinAttempt(
  options: k8s.ConfigurationOptions<k8s.ObservableMiddleware>,
): k8s.ConfigurationOptions<k8s.ObservableMiddleware> {
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
  return {
    ...options,
    middleware: [...(options.middleware ?? []), abortWithAttempt],
    middlewareMergeStrategy: 'append',
  };
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
