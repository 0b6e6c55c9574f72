/**
 * Where the CLI connects, by the conventions its users already follow:
 * - Kubernetes as kubectl does: `--kubeconfig`, else `$KUBECONFIG` (several files, merged), else `~/.kube/config`;
 *   `--context`, else the current context; `-n/--namespace`, else the context's namespace, else `default`.
 * - Temporal as the `temporal` CLI and the SDKs do (`@temporalio/envconfig`): a profile (`TEMPORAL_PROFILE`, else
 *   `default`) from the TOML file `TEMPORAL_CONFIG_FILE` or `~/.config/temporalio/temporal.toml`, overridden by
 *   `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`, `TEMPORAL_GRPC_META_*`, then
 *   by the `--temporal-*` flags. This is the controller's own Temporal, where the RolloutWorkflows run — not the
 *   one a resource's TemporalConnection names for its workers.
 */
import { defaultControllerNamespace } from '../api/names.js';
import * as k8s from '@kubernetes/client-node';
import type { ConnectionOptions } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { CliError, ExitCode } from './exit-codes.js';

/** The flags that choose the cluster and namespace (kubectl's names). */
export interface KubeFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  allNamespaces?: boolean;
}

export interface KubeSettings {
  kc: k8s.KubeConfig;
  /** The context in use, when a kubeconfig names one. */
  context?: string;
  /** The namespace a bare NAME and the resource listings mean. */
  namespace: string;
}

/** client-node's name for the context it makes up when there is no kubeconfig at all. */
const madeUpContext = 'loaded-context';

/** Loads the kubeconfig as kubectl would; a `--context` it does not know is a usage error. */
export function kubeSettings(flags: KubeFlags): KubeSettings {
  const kc = new k8s.KubeConfig();
  try {
    if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
    else kc.loadFromDefault();
  } catch (err) {
    throw new CliError(`cannot read the kubeconfig: ${(err as Error).message}`, ExitCode.Usage);
  }
  if (flags.context) {
    if (!kc.getContextObject(flags.context))
      throw new CliError(`context "${flags.context}" is not in the kubeconfig`, ExitCode.Usage);
    kc.setCurrentContext(flags.context);
  }
  const current = kc.getCurrentContext();
  const context = current && current !== madeUpContext ? current : undefined;
  const namespace = flags.namespace ?? (context ? kc.getContextObject(context)?.namespace : undefined) ?? 'default';
  return { kc, context, namespace };
}

/** The flags that override Temporal's environment configuration. */
export interface TemporalFlags {
  temporalAddress?: string;
  temporalNamespace?: string;
  temporalProfile?: string;
  temporalConfigFile?: string;
}

export interface TemporalSettings {
  connection: ConnectionOptions;
  namespace: string;
  /** `127.0.0.1:7233, namespace default (profile prod)`, for messages. */
  describe: string;
}

/** The controller's Temporal: envconfig's profile and variables, then the flags. */
export function temporalSettings(flags: TemporalFlags, env: NodeJS.ProcessEnv = process.env): TemporalSettings {
  let loaded: ReturnType<typeof loadClientConnectConfig>;
  try {
    loaded = loadClientConnectConfig({
      ...(flags.temporalProfile ? { profile: flags.temporalProfile } : {}),
      ...(flags.temporalConfigFile ? { configSource: { path: flags.temporalConfigFile } } : {}),
      overrideEnvVars: definedOnly(env),
    });
  } catch (err) {
    throw new CliError(`Temporal configuration: ${(err as Error).message}`, ExitCode.Usage);
  }
  const { address, apiKey, tls, metadata } = loaded.connectionOptions;
  const connection: ConnectionOptions = {
    address: flags.temporalAddress ?? address ?? 'localhost:7233',
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(tls !== undefined ? { tls } : {}),
    ...(metadata !== undefined ? { metadata } : {}),
  };
  const namespace = flags.temporalNamespace ?? loaded.namespace ?? defaultControllerNamespace;
  const profile = flags.temporalProfile ?? env.TEMPORAL_PROFILE;
  return {
    connection,
    namespace,
    describe: `${connection.address}, namespace ${namespace}${profile ? ` (profile ${profile})` : ''}`,
  };
}

function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/** A resource named on the command line. */
export interface ResourceRef {
  namespace: string;
  name: string;
}

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/**
 * `NAMESPACE/NAME`, or `NAME` in the namespace `-n` or the context gives.
 * @example parseResourceRef('prod/orders', 'default') // { namespace: 'prod', name: 'orders' }
 */
export function parseResourceRef(text: string, defaultNamespace: string): ResourceRef {
  const parts = text.split('/');
  const [namespace, name] = parts.length === 2 ? parts : [defaultNamespace, parts[0]];
  if (
    parts.length > 2 ||
    !namespace ||
    !name ||
    !dnsLabel.test(namespace) ||
    !dnsLabel.test(name) ||
    name.length > 63 ||
    namespace.length > 63
  ) {
    throw new CliError(`"${text}" is not NAMESPACE/NAME or NAME (lower-case letters, digits and "-")`, ExitCode.Usage);
  }
  return { namespace, name };
}

/**
 * The resource a RolloutWorkflow ID names (`glidepath/INSTALLATION/NAMESPACE/NAME`, see `rolloutWorkflowId`), with
 * the installation; other IDs are not rollouts.
 * @example parseWorkflowId('glidepath/1a2b3c4d/prod/orders') // { installation: '1a2b3c4d', namespace: 'prod', name: 'orders' }
 */
export function parseWorkflowId(workflowId: string): (ResourceRef & { installation: string }) | undefined {
  const match = /^glidepath\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(workflowId);
  return match ? { installation: match[1]!, namespace: match[2]!, name: match[3]! } : undefined;
}
