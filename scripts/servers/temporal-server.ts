/** The Temporal dev server, with the fast-drainage settings and Glidepath's search attributes. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultControllerNamespace } from '../../api/names.js';
import { searchAttributeFlags } from '../../workflows/search-attributes.js';
import { freePort, launch, logFileOf, portOpen, waitFor, type ServerProcess } from './processes.js';

const scriptsDir = dirname(fileURLToPath(import.meta.url));

/** Dev-server settings that make drainage and poller expiry take about a second (tests and the demo). */
export const fastDrainageConfig = [
  'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod="1s"',
  'matching.PollerHistoryTTL="1s"',
];

/** Path of the `temporal` CLI (built into the cache on first use). */
export function temporalBinary(): string {
  return execFileSync('bash', [join(scriptsDir, 'temporal.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

/** Whether a plain HTTP GET answers 2xx. */
async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}

export interface TemporalServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  /** The server's Prometheus metrics (`service_requests` counts every RPC; see scripts/servers/metrics.ts). */
  metricsUrl: string;
  process: ServerProcess;
}

/** Starts `temporal server start-dev` on loopback with the fast-drainage settings and our search attributes. */
/** `defaults`: the server's own settings instead of the fast drainage ones (to check behaviour that depends on them). */
/** `dynamicConfig`: more `KEY=VALUE` dynamic config values (the scale benchmark raises the server's limits). */
export async function startTemporal(opts: {
  dir: string;
  port?: number;
  uiPort?: number;
  dbFile?: string;
  detached?: boolean;
  defaults?: boolean;
  dynamicConfig?: string[];
}): Promise<TemporalServer> {
  // A port found free can be taken before the server binds it (by one of the server's own connections: the
  // ports come from the ephemeral range). Such a start fails at once, and goes again on other ports.
  for (let attempt = 1; ; attempt++) {
    const logFile = logFileOf(opts.dir, 'temporal');
    const logged = existsSync(logFile) ? statSync(logFile).size : 0;
    try {
      return await startTemporalOnce(opts);
    } catch (err) {
      const tail = existsSync(logFile) ? readFileSync(logFile).subarray(logged).toString() : '';
      if (attempt >= 3 || !/address already in use/.test(tail)) throw err;
    }
  }
}

async function startTemporalOnce(opts: Parameters<typeof startTemporal>[0]): Promise<TemporalServer> {
  const port = opts.port ?? (await freePort());
  // `default` for the workers, `glidepath` for the controller's own workflows (the search attributes go into both).
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--namespace',
    'default',
    '--namespace',
    defaultControllerNamespace,
    '--log-level',
    'warn',
  ];
  const httpPort = await freePort();
  const metricsPort = await freePort();
  args.push('--http-port', String(httpPort), '--metrics-port', String(metricsPort));
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort));
  else args.push('--headless');
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  if (!opts.defaults) for (const v of fastDrainageConfig) args.push('--dynamic-config-value', v);
  for (const v of opts.dynamicConfig ?? []) args.push('--dynamic-config-value', v);
  for (const sa of searchAttributeFlags) args.push('--search-attribute', sa);
  const { child, proc } = launch('temporal', temporalBinary(), args, opts.dir, opts.detached ?? false);
  // Ready means the frontend answers and knows the namespace: an open port alone may still say "Frontend is not healthy yet".
  await waitFor(
    'temporal dev server',
    proc.logFile,
    child,
    async () => (await portOpen(port)) && (await httpOk(`http://127.0.0.1:${httpPort}/api/v1/namespaces/default`)),
  );
  const uiUrl = opts.uiPort ? `http://127.0.0.1:${opts.uiPort}` : undefined;
  if (uiUrl) await waitFor('temporal Web UI', proc.logFile, child, () => httpOk(uiUrl));
  return {
    address: `127.0.0.1:${port}`,
    namespace: 'default',
    uiUrl,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    process: proc,
  };
}
