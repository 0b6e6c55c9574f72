/**
 * Which Kubernetes API failures are worth retrying: a refusal no retry can change is permanent, an expected,
 * passing one (a conflict, an apiserver restarting) transient. Errors of unknown shape are not classified.
 */
import * as k8s from '@kubernetes/client-node';
import { oneLine, type CallContext, type Classified } from '../api/errors.js';

/** The fields of a metav1.Status that say why kube-apiserver refused a call. */
interface KubeStatus {
  message?: string;
  reason?: string;
  details?: { name?: string; kind?: string; causes?: { reason?: string; message?: string; field?: string }[] };
}

/** The Status object client-node 1.4 keeps, as text, in `ApiException.body`. */
function kubeStatus(err: k8s.ApiException<unknown>): KubeStatus {
  const body = err.body;
  if (typeof body === 'object' && body !== null) return body as KubeStatus;
  if (typeof body !== 'string') return {};
  try {
    const parsed: unknown = JSON.parse(body);
    return typeof parsed === 'object' && parsed !== null ? (parsed as KubeStatus) : {};
  } catch {
    return { message: body };
  }
}

/** Whether kube-apiserver refused a create because the namespace is being deleted. */
export function isNamespaceTerminating(err: unknown): boolean {
  if (!(err instanceof k8s.ApiException) || err.code !== 403) return false;
  const status = kubeStatus(err);
  return (
    (status.details?.causes ?? []).some((c) => c.reason === 'NamespaceTerminating') ||
    /because it is being terminated/.test(status.message ?? '')
  );
}

/**
 * Classifies a Kubernetes API failure (client-node 1.4's `ApiException`, or a network error of its fetch).
 * Permanent: 400, 422, 403 (RBAC, or a namespace being deleted: creates there never succeed), and 404 of a
 * ConfigMap or Secret (every one Glidepath reads is named by the user). Transient: 401 (credentials refresh),
 * 409, 429, 5xx, network errors. Anything else: `undefined`.
 */
export function classifyKubernetesError(err: unknown, context: CallContext = {}): Classified | undefined {
  if (isNetworkError(err)) return { kind: 'transient', message: `kube-apiserver unreachable: ${oneLine(err.message)}` };
  if (!(err instanceof k8s.ApiException)) return undefined;
  const code = err.code;
  const status = kubeStatus(err);
  const why = oneLine(
    (status.details?.causes ?? [])
      .filter((c) => c.field)
      .map((c) => `${c.field}: ${c.message}`)
      .join('; ') ||
      status.message ||
      (code === 401 ? 'Unauthorized' : `HTTP ${code}`),
  );
  const objectKind = status.details?.kind ?? '';
  const userNamed = /^(configmaps?|secrets?)$/i.test(objectKind);
  const permanent = code === 400 || code === 422 || code === 403 || (code === 404 && userNamed);
  if (permanent) {
    const name = status.details?.name;
    const what = name
      ? `${objectKind} ${context.namespace ? `${context.namespace}/` : ''}${name}`
      : (context.call ?? 'the call');
    const terminating =
      isNamespaceTerminating(err) && !/being terminated/.test(why) ? ' (the namespace is being terminated)' : '';
    return { kind: 'permanent', message: `kube-apiserver refused ${what} (${code}): ${why}${terminating}` };
  }
  if (code === 401 || code === 409 || code === 429 || code >= 500) {
    return { kind: 'transient', message: `kube-apiserver ${code}${status.reason ? ` ${status.reason}` : ''}: ${why}` };
  }
  return undefined;
}

/** node-fetch's FetchError of a failed connection, or a bare Node socket error. */
function isNetworkError(err: unknown): err is Error & { code?: string } {
  if (!(err instanceof Error)) return false;
  const { name, type, code } = err as Error & { type?: string; code?: unknown };
  if (name === 'FetchError' && type === 'system') return true;
  return (
    typeof code === 'string' &&
    /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)$/.test(code)
  );
}
