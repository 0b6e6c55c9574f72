/**
 * Starts the real servers Glidepath runs against: the Temporal dev server, and etcd + kube-apiserver in the
 * envtest layout. Used by `npm run servers:up` (detached, fixed ports) and by the test harness (free ports,
 * torn down after the run). Binaries come from `scripts/servers/{temporal,kube}.sh`, which cache them.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { searchAttributeFlags } from '../../workflows/search-attributes.js';

const scriptsDir = dirname(fileURLToPath(import.meta.url));

/** Dev-server settings that make drainage and poller expiry take about a second (tests and the demo). */
export const fastDrainageConfig = [
  'matching.wv.VersionDrainageStatusRefreshInterval="1s"',
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod="1s"',
  'matching.PollerHistoryTTL="1s"',
];

/** Path of the `temporal` CLI (built into the cache on first use). */
export function temporalBinary(): string {
  return execFileSync('bash', [join(scriptsDir, 'temporal.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** Folder holding kube-apiserver, etcd and kubectl (built into the cache on first use). */
export function kubeAssets(): string {
  return execFileSync('bash', [join(scriptsDir, 'kube.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(500);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.connect(port, '127.0.0.1');
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, logFile: string, child: ChildProcess, check: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}; read ${logFile}`);
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`${what} was not ready after ${timeoutMs / 1000}s; read ${logFile}`);
}

/** A process started by us, with its log. */
export interface ServerProcess {
  name: string;
  pid: number;
  logFile: string;
}

function launch(name: string, bin: string, args: string[], dir: string, detached: boolean): { child: ChildProcess; proc: ServerProcess } {
  mkdirSync(dir, { recursive: true });
  const logFile = join(dir, `${name}.log`);
  const out = openSync(logFile, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', out, out], detached });
  if (detached) child.unref();
  return { child, proc: { name, pid: child.pid!, logFile } };
}

export interface TemporalServer {
  address: string;
  namespace: string;
  uiUrl?: string;
  process: ServerProcess;
}

/** Starts `temporal server start-dev` on loopback with the fast-drainage settings and our search attributes. */
export async function startTemporal(opts: { dir: string; port?: number; uiPort?: number; dbFile?: string; detached?: boolean }): Promise<TemporalServer> {
  const port = opts.port ?? (await freePort());
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--namespace', 'default', '--log-level', 'warn'];
  args.push('--http-port', String(await freePort()), '--metrics-port', String(await freePort()));
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort));
  else args.push('--headless');
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  for (const v of fastDrainageConfig) args.push('--dynamic-config-value', v);
  for (const sa of searchAttributeFlags) args.push('--search-attribute', sa);
  const { child, proc } = launch('temporal', temporalBinary(), args, opts.dir, opts.detached ?? false);
  await waitFor('temporal dev server', proc.logFile, child, () => portOpen(port));
  return { address: `127.0.0.1:${port}`, namespace: 'default', uiUrl: opts.uiPort ? `http://127.0.0.1:${opts.uiPort}` : undefined, process: proc };
}

export interface KubeServer {
  url: string;
  kubeconfig: string;
  kubectl: string;
  assets: string;
  processes: ServerProcess[];
}

function readyz(url: string, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${url}/readyz`, { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => (req.destroy(), resolve(false)));
    req.end();
  });
}

/** Starts etcd and kube-apiserver (token auth, RBAC) on loopback and writes a kubeconfig for an admin. */
export async function startKube(opts: { dir: string; apiPort?: number; etcdPort?: number; detached?: boolean }): Promise<KubeServer> {
  const assets = kubeAssets();
  const detached = opts.detached ?? false;
  const [etcdPort, peerPort, apiPort] = [opts.etcdPort ?? (await freePort()), await freePort(), opts.apiPort ?? (await freePort())];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const etcd = launch('etcd', join(assets, 'etcd'), [
    '--data-dir', join(opts.dir, 'etcd-data'), '--listen-client-urls', etcdUrl, '--advertise-client-urls', etcdUrl,
    '--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl, '--initial-cluster', `default=${peerUrl}`,
    '--unsafe-no-fsync', '--log-level', 'warn',
  ], opts.dir, detached);
  await waitFor('etcd', etcd.proc.logFile, etcd.child, () => portOpen(etcdPort));

  const token = randomBytes(16).toString('hex');
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certDir = join(opts.dir, 'apiserver-certs');
  mkdirSync(certDir, { recursive: true });
  writeFileSync(join(opts.dir, 'tokens.csv'), `${token},admin,admin,system:masters\n`);
  writeFileSync(join(opts.dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(opts.dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const api = launch('kube-apiserver', join(assets, 'kube-apiserver'), [
    '--etcd-servers', etcdUrl, '--cert-dir', certDir, '--secure-port', String(apiPort), '--bind-address', '127.0.0.1',
    '--advertise-address', '127.0.0.1', '--token-auth-file', join(opts.dir, 'tokens.csv'), '--authorization-mode', 'RBAC',
    '--service-account-issuer', 'https://kubernetes.default.svc', '--service-account-key-file', join(opts.dir, 'sa.pub'),
    '--service-account-signing-key-file', join(opts.dir, 'sa.key'), '--service-cluster-ip-range', '10.0.0.0/24',
    '--allow-privileged=true', '--disable-admission-plugins', 'ServiceAccount',
  ], opts.dir, detached);
  const url = `https://127.0.0.1:${apiPort}`;
  await waitFor('kube-apiserver', api.proc.logFile, api.child, () => readyz(url, token), 90_000);

  const kubeconfig = join(opts.dir, 'kubeconfig');
  writeFileSync(kubeconfig, [
    'apiVersion: v1', 'kind: Config', 'current-context: glidepath',
    'clusters:', '- name: glidepath', '  cluster:', `    server: ${url}`, '    insecure-skip-tls-verify: true',
    'users:', '- name: admin', '  user:', `    token: ${token}`,
    'contexts:', '- name: glidepath', '  context:', '    cluster: glidepath', '    user: admin', '    namespace: default',
    '',
  ].join('\n'));
  return { url, kubeconfig, kubectl: join(assets, 'kubectl'), assets, processes: [api.proc, etcd.proc] };
}

/** Stops processes in order (kube-apiserver before etcd, or its shutdown hangs), SIGKILL after a grace period. */
export async function stopProcesses(processes: Pick<ServerProcess, 'pid' | 'name'>[], graceMs = 5000): Promise<void> {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (const p of processes) {
    if (!alive(p.pid)) continue;
    process.kill(p.pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (alive(p.pid) && Date.now() < deadline) await sleep(50);
    if (alive(p.pid)) process.kill(p.pid, 'SIGKILL');
  }
}
