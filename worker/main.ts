/**
 * `npm start`: runs the controller. With `.dev/env.sh` sourced it needs no flag.
 *
 *   --kubeconfig PATH           default $KUBECONFIG, ~/.kube/config, else in-cluster
 *   --temporal-address H:P      default $TEMPORAL_ADDRESS or localhost:7233
 *   --temporal-namespace NS     where the controller's workflows run: default $TEMPORAL_NAMESPACE or "glidepath"
 *   --installation-id ID        this installation's ID (default $GLIDEPATH_INSTALLATION_ID, else read from the ConfigMap
 *                               glidepath-installation in the controller's namespace: worker/installation.ts)
 *   --task-queue NAME           default "glidepath-<installation ID>"
 *   --namespace NS              a Kubernetes namespace to watch (repeatable; default all, or $GLIDEPATH_NAMESPACES, comma-separated);
 *                               with it the controller needs only the namespaced Role (k8s-manifests/overlays/namespaced/)
 *   --resync-interval DURATION  how often every resource's spec is sent again (1h)
 *   --manager-identity NAME     the worker deployments' manager identity Glidepath claims (default
 *                               "glidepath/<installation ID>")
 *   --max-cached-workflows N    rollouts kept in memory between their workflow tasks (100): memory against CPU
 *   --metrics-bind-address A    where /metrics (Prometheus) is served (:8080; 0: off)
 *   --health-probe-bind-address A  where /healthz and /readyz are served (:8081; 0: off)
 *   --log-format json|text      JSON lines (the default when stdout is not a terminal) or text
 * TLS and API key follow Temporal's env conventions: TEMPORAL_TLS_CLIENT_CERT_PATH,
 * TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME, TEMPORAL_API_KEY.
 * GLIDEPATH_LOG_LEVEL sets the log level (INFO).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadKubeConfig } from '../kube/client.js';
import { parseDuration } from '../api/duration.js';
import type { Logger } from '@temporalio/common';
import { DefaultLogger, type LogLevel } from '@temporalio/worker';
import { installRuntime, rolloutBundleApart, startController, type Controller } from './controller.js';
import { defaultControllerNamespace } from '../api/names.js';
import { resolveInstallation } from './installation.js';
import { JsonLogger } from './logging.js';
import { parseBindAddress, startProbeServer } from './probes.js';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    'temporal-address': { type: 'string' },
    'temporal-namespace': { type: 'string' },
    'installation-id': { type: 'string' },
    'task-queue': { type: 'string' },
    namespace: { type: 'string', multiple: true },
    'resync-interval': { type: 'string' },
    'manager-identity': { type: 'string' },
    'max-cached-workflows': { type: 'string' },
    'temporal-qps': { type: 'string' },
    'max-activities-per-second': { type: 'string' },
    'metrics-bind-address': { type: 'string', default: ':8080' },
    'health-probe-bind-address': { type: 'string', default: ':8081' },
    'log-format': { type: 'string', default: process.stdout.isTTY ? 'text' : 'json' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  console.log(
    'usage: npm start -- [--kubeconfig PATH] [--temporal-address HOST:PORT] [--temporal-namespace NS] [--installation-id ID] [--task-queue NAME] [--namespace NS]... [--resync-interval DURATION] [--manager-identity NAME] [--max-cached-workflows N] [--temporal-qps N] [--max-activities-per-second N] [--metrics-bind-address HOST:PORT] [--health-probe-bind-address HOST:PORT] [--log-format json|text]',
  );
  process.exit(0);
}

/** A bad flag: says which and why, exits 2 (a usage error). */
function refuse(message: string): never {
  console.error(message);
  process.exit(2);
}

/** A bind address flag (see probes.ts), or a usage error. */
function bindAddress(flag: 'metrics-bind-address' | 'health-probe-bind-address') {
  try {
    return parseBindAddress(flag, values[flag]!);
  } catch (err) {
    return refuse((err as Error).message);
  }
}

/** A flag that must be a whole number ≥ 0 (absent: undefined). */
function count(flag: 'max-cached-workflows'): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) refuse(`--${flag}: "${raw}" is not a whole number`);
  return Number(raw);
}

/** A flag that must be a number above 0, like 2.5 (absent: undefined). */
function rate(flag: 'temporal-qps' | 'max-activities-per-second'): number | undefined {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(raw) || !(Number(raw) > 0)) refuse(`--${flag}: "${raw}" is not a number above 0`);
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

const level = (env.GLIDEPATH_LOG_LEVEL ?? 'INFO').toUpperCase() as LogLevel;
if (!['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'].includes(level))
  refuse(`GLIDEPATH_LOG_LEVEL: "${env.GLIDEPATH_LOG_LEVEL}" is not one of TRACE, DEBUG, INFO, WARN, ERROR`);
if (values['log-format'] !== 'json' && values['log-format'] !== 'text')
  refuse(`--log-format: "${values['log-format']}" is not json or text`);
const json = values['log-format'] === 'json';
const metrics = bindAddress('metrics-bind-address');
const probes = bindAddress('health-probe-bind-address');
// The controller's own lines are always shown (its start and stop); the SDK's follow the level.
const logger: Logger = json ? new JsonLogger(level) : new DefaultLogger(level);
const log = json
  ? (message: string, fields?: Record<string, unknown>) => new JsonLogger('INFO').info(message, fields)
  : (message: string, fields?: Record<string, unknown>) =>
      console.log(`${new Date().toISOString()} ${message}${fields ? ` ${JSON.stringify(fields)}` : ''}`);

installRuntime(level, { logger, metrics });
// The probes answer from the start: live at once, ready once the controller runs.
const started: { controller?: Controller } = {};
const probeServer = probes
  ? await startProbeServer(probes, {
      live: () => started.controller?.health().live ?? true,
      ready: () => started.controller?.health().ready ?? 'starting',
    })
  : undefined;
// Empty GLIDEPATH_NAMESPACES (as docker-compose passes an unset one) means all, like no flag.
const fromEnv = env.GLIDEPATH_NAMESPACES?.split(',').filter(Boolean);
const watched = values.namespace ?? (fromEnv?.length ? fromEnv : undefined);
const address = values['temporal-address'] ?? env.TEMPORAL_ADDRESS ?? 'localhost:7233';
const namespace = values['temporal-namespace'] ?? env.TEMPORAL_NAMESPACE ?? defaultControllerNamespace;
const kubeConfig = loadKubeConfig(values.kubeconfig);
const installationFlag = values['installation-id'] ?? (env.GLIDEPATH_INSTALLATION_ID || undefined);
let installation: string;
try {
  installation = await resolveInstallation(kubeConfig, watched, installationFlag);
} catch (err) {
  refuse((err as Error).message);
}
const controller = await startController({
  kubeConfig,
  installation,
  installationFromConfigMap: installationFlag === undefined,
  temporal: { address, namespace, tls, apiKey: env.TEMPORAL_API_KEY },
  taskQueue: values['task-queue'],
  namespaces: watched,
  resyncIntervalMs: values['resync-interval'] ? parseDuration(values['resync-interval']) : undefined,
  managerIdentity: values['manager-identity'],
  maxCachedWorkflows: count('max-cached-workflows'),
  temporalQps: rate('temporal-qps'),
  maxActivitiesPerSecond: rate('max-activities-per-second'),
  workflowBundle: await rolloutBundleApart(),
  timings: env.GLIDEPATH_DRAIN_POLL_MAX ? { drainPollMaxMs: Number(env.GLIDEPATH_DRAIN_POLL_MAX) } : undefined,
  log,
});
log(
  `glidepath controller running as installation ${installation}: Temporal ${address} namespace ${namespace}, task queue ${controller.taskQueue}, watching ${watched?.length ? watched.join(', ') : 'all namespaces'}`,
  {
    metrics: metrics ? `${metrics.host}:${metrics.port}` : 'off',
    probes: probes ? `${probes.host}:${probeServer!.port}` : 'off',
  },
);
started.controller = controller;
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    log(`${signal}: shutting down`);
    void controller.stop().then(async () => {
      await probeServer?.close();
      process.exit(0);
    });
  });
}
await controller.done;
