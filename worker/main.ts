/**
 * `npm start`: runs the controller. With `.dev/env.sh` sourced it needs no flag.
 *
 *   --kubeconfig PATH           default $KUBECONFIG, ~/.kube/config, else in-cluster
 *   --temporal-address H:P      default $TEMPORAL_ADDRESS or localhost:7233
 *   --temporal-namespace NS     default $TEMPORAL_NAMESPACE or "default"
 *   --task-queue NAME           default "glidepath"
 *   --namespace NS              a Kubernetes namespace to watch (repeatable; default all, or $GLIDEPATH_NAMESPACES, comma-separated);
 *                               with it the controller needs only the namespaced Role (k8s-manifests/overlays/namespaced/)
 *   --resync-interval DURATION  how often every resource's spec is sent again (1h)
 *   --manager-identity NAME     the worker deployments' manager identity Glidepath claims (default "glidepath",
 *                               or "glidepath/<task queue>" with another --task-queue)
 *   --max-cached-workflows N    rollouts kept in memory between their workflow tasks (250): memory against CPU
 * TLS and API key follow Temporal's env conventions: TEMPORAL_TLS_CLIENT_CERT_PATH,
 * TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME, TEMPORAL_API_KEY.
 * GLIDEPATH_LOG_LEVEL sets the SDK's log level (INFO).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadKubeConfig } from '../activities/kubernetes/client.js';
import { parseDuration } from '../api/duration.js';
import type { LogLevel } from '@temporalio/worker';
import { installRuntime, rolloutBundleApart, startController } from './controller.js';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    'temporal-address': { type: 'string' },
    'temporal-namespace': { type: 'string' },
    'task-queue': { type: 'string' },
    namespace: { type: 'string', multiple: true },
    'resync-interval': { type: 'string' },
    'manager-identity': { type: 'string' },
    'max-cached-workflows': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log('usage: npm start -- [--kubeconfig PATH] [--temporal-address HOST:PORT] [--temporal-namespace NS] [--task-queue NAME] [--namespace NS]... [--resync-interval DURATION] [--manager-identity NAME] [--max-cached-workflows N]');
  process.exit(0);
}

/** A flag that must be a whole number ≥ 0 (absent: undefined). */
function count(flag: 'max-cached-workflows'): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) {
    console.error(`--${flag}: "${raw}" is not a whole number`);
    process.exit(2);
  }
  return Number(raw);
}

const env = process.env;
const file = (path: string | undefined) => (path ? readFileSync(path) : undefined);
const certPath = env.TEMPORAL_TLS_CLIENT_CERT_PATH;
const tls =
  certPath || env.TEMPORAL_API_KEY || env.TEMPORAL_TLS === 'true'
    ? {
        serverNameOverride: env.TEMPORAL_TLS_SERVER_NAME,
        serverRootCACertificate: file(env.TEMPORAL_TLS_SERVER_CA_CERT_PATH),
        clientCertPair: certPath ? { crt: file(certPath)!, key: file(env.TEMPORAL_TLS_CLIENT_KEY_PATH)! } : undefined,
      }
    : undefined;

const log = (message: string, fields?: Record<string, unknown>) =>
  console.log(`${new Date().toISOString()} ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`);

installRuntime((env.GLIDEPATH_LOG_LEVEL ?? 'INFO') as LogLevel);
const address = values['temporal-address'] ?? env.TEMPORAL_ADDRESS ?? 'localhost:7233';
const namespace = values['temporal-namespace'] ?? env.TEMPORAL_NAMESPACE ?? 'default';
const controller = await startController({
  kubeConfig: loadKubeConfig(values.kubeconfig),
  temporal: { address, namespace, tls, apiKey: env.TEMPORAL_API_KEY },
  taskQueue: values['task-queue'],
  namespaces: values.namespace ?? env.GLIDEPATH_NAMESPACES?.split(',').filter(Boolean),
  resyncIntervalMs: values['resync-interval'] ? parseDuration(values['resync-interval']) : undefined,
  managerIdentity: values['manager-identity'],
  maxCachedWorkflows: count('max-cached-workflows'),
  workflowBundle: await rolloutBundleApart(),
  timings: env.GLIDEPATH_DRAIN_POLL_MAX ? { drainPollMaxMs: Number(env.GLIDEPATH_DRAIN_POLL_MAX) } : undefined,
  log,
});
log(`glidepath controller running: Temporal ${address} namespace ${namespace}, watching ${values.namespace?.join(', ') ?? env.GLIDEPATH_NAMESPACES ?? 'all namespaces'}`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log(`${signal}: shutting down`);
    void controller.stop().then(() => process.exit(0));
  });
}
await controller.done;
