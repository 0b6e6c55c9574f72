/**
 * The Temporal dev server, with the fast-drainage settings and Glidepath's search attributes: Glidepath's own
 * build of the newest server (scripts/servers/temporal-dev), or with `GLIDEPATH_TEMPORAL_SERVER=cli` the `temporal`
 * CLI's (`server start-dev`, 1.29.1: the oldest server Glidepath supports).
 */
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
  return cachedBinary('temporal.sh');
}

/** Path of Glidepath's Temporal dev server (built into the cache on first use). */
export function temporalDevServerBinary(): string {
  return cachedBinary('temporal-dev.sh');
}

function cachedBinary(script: string): string {
  return execFileSync('bash', [join(scriptsDir, script)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

/** The version of the server `startTemporal` runs, as the binary prints it (`... (Server 1.32.0, UI 2.55.0)`). */
export function temporalServerVersion(): string {
  const binary = temporalServerKind() === 'cli' ? temporalBinary() : temporalDevServerBinary();
  const printed = execFileSync(binary, ['--version'], { encoding: 'utf8' });
  const version = /Server (\d+\.\d+\.\d+)/.exec(printed)?.[1];
  if (!version) throw new Error(`${binary} --version printed no server version: ${printed.trim()}`);
  return version;
}

/** Which server `startTemporal` runs: `dev` (the default) or `cli`. */
export function temporalServerKind(env = process.env): 'dev' | 'cli' {
  const kind = env.GLIDEPATH_TEMPORAL_SERVER ?? 'dev';
  if (kind === 'dev' || kind === 'cli') return kind;
  throw new Error(`GLIDEPATH_TEMPORAL_SERVER=${kind}: want dev (Glidepath's build of the newest server) or cli`);
}

/**
 * `GLIDEPATH_DEV_DYNAMIC_CONFIG`: more dynamic config for the dev server, `KEY=VALUE` entries separated by spaces
 * or new lines, each VALUE in JSON (`matching.maxVersionsInDeployment=5 matching.PollerHistoryTTL="1s"`).
 */
export function userDynamicConfig(env = process.env): string[] {
  const raw = env.GLIDEPATH_DEV_DYNAMIC_CONFIG?.trim();
  if (!raw) return [];
  return raw.split(/\s+/).map((entry) => {
    const eq = entry.indexOf('=');
    const key = entry.slice(0, eq);
    if (eq <= 0 || !/^[A-Za-z][A-Za-z0-9_.]*$/.test(key))
      throw new Error(`GLIDEPATH_DEV_DYNAMIC_CONFIG: "${entry}" is not KEY=VALUE with a dotted key`);
    try {
      JSON.parse(entry.slice(eq + 1));
    } catch {
      throw new Error(
        `GLIDEPATH_DEV_DYNAMIC_CONFIG: the value of ${key} is not JSON (${entry.slice(eq + 1)}; a string is quoted: "1s")`,
      );
    }
    return entry;
  });
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

/**
 * Starts the dev server on loopback with the fast-drainage settings and our search attributes.
 * `defaults`: the server's own settings instead of the fast drainage ones (to check behaviour that depends on them).
 * `dynamicConfig`: more `KEY=VALUE` dynamic config values (the scale benchmark raises the server's limits).
 */
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
  const kind = temporalServerKind();
  const args = [
    ...(kind === 'cli' ? ['server', 'start-dev'] : []),
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
  else if (kind === 'cli') args.push('--headless');
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  if (!opts.defaults) for (const v of fastDrainageConfig) args.push('--dynamic-config-value', v);
  for (const v of opts.dynamicConfig ?? []) args.push('--dynamic-config-value', v);
  for (const sa of searchAttributeFlags) args.push('--search-attribute', sa);
  const binary = kind === 'cli' ? temporalBinary() : temporalDevServerBinary();
  const { child, proc } = launch('temporal', binary, args, opts.dir, opts.detached ?? false);
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
