/**
 * Starts the real servers Glidepath runs against: the Temporal dev server, and etcd + kube-apiserver in the
 * envtest layout, with a kube-controller-manager running the controllers a real cluster has that the pod
 * simulator does not play (garbage collection, namespace deletion, service accounts). Used by `npm run servers:up` (detached, fixed ports) and by the test harness (free ports,
 * torn down after the run). Binaries come from `scripts/servers/{temporal,kube}.sh`, which cache them.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer, Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultControllerNamespace } from '../../api/names.js';
import { searchAttributeFlags } from '../../workflows/search-attributes.js';
import { installCrds } from './install-crds.js';

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

/** Folder holding kube-apiserver, etcd and kubectl (built into the cache on first use). */
export function kubeAssets(): string {
  return execFileSync('bash', [join(scriptsDir, 'kube.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

/**
 * Path of kube-controller-manager of the same version: KUBEBUILDER_ASSETS' own if it has one, else the cache's
 * (built on first use; envtest's layout has none).
 */
export function controllerManagerBinary(): string {
  return execFileSync('bash', [join(scriptsDir, 'kube.sh'), 'kube-controller-manager'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

/**
 * The controllers of kube-controller-manager that run beside the apiserver: what must behave as in a real
 * cluster (owner references are garbage-collected, a deleted namespace is emptied and goes, namespaces get their
 * `default` ServiceAccount and its token). Not deployment/replicaset: the pod simulator plays those and writes
 * Deployment status itself.
 */
export const kubeControllers = ['garbagecollector', 'namespace', 'serviceaccount', 'serviceaccount-token'];

/** Whether a process with this PID is running (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
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

/** Whether a plain HTTP GET answers 2xx. */
async function httpOk(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return res.ok;
  } catch {
    return false;
  }
}

async function waitFor(
  what: string,
  logFile: string,
  child: ChildProcess,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
) {
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

const logFileOf = (dir: string, name: string) => join(dir, `${name}.log`);

/** Starts a server process with its output appended to `<dir>/<name>.log`. */
export function launch(
  name: string,
  bin: string,
  args: string[],
  dir: string,
  detached: boolean,
): { child: ChildProcess; proc: ServerProcess } {
  mkdirSync(dir, { recursive: true });
  const logFile = logFileOf(dir, name);
  const out = openSync(logFile, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', out, out], detached });
  if (detached) child.unref();
  return { child, proc: { name, pid: child.pid!, logFile } };
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

export interface KubeServer {
  url: string;
  kubeconfig: string;
  kubectl: string;
  assets: string;
  processes: ServerProcess[];
}

/** Whether `GET url+path` with the token answers 200. */
function answers200(url: string, path: string, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(
      `${url}${path}`,
      { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 1000 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => resolve(false));
    req.on('timeout', () => (req.destroy(), resolve(false)));
    req.end();
  });
}

/** Options of `startKube`. */
export interface KubeOptions {
  dir: string;
  apiPort?: number;
  etcdPort?: number;
  detached?: boolean;
  crds?: boolean;
  /** kube-controller-manager's controllers (default `kubeControllers`; a real node needs them all: `['*', '-nodeipam']`). */
  controllers?: string[];
  /**
   * The ServiceAccount admission plugin, off by default (the tiers without a kubelet run no pods): pods get their
   * ServiceAccount and its token mounted, as on a real cluster.
   */
  podServiceAccounts?: boolean;
  /**
   * An audit log, off by default: `auditPolicy` (an audit.k8s.io/v1 Policy, YAML) selects the requests whose events
   * the apiserver writes to `<dir>/audit.log` as JSON lines, before it answers (blocking mode).
   */
  auditPolicy?: string;
}

/**
 * Starts etcd and kube-apiserver (token auth, RBAC) on loopback, writes a kubeconfig for an admin, installs the
 * CRDs when asked, then starts kube-controller-manager (`kubeControllers`). CRDs installed before it starts are
 * known to its garbage collector at once; ones installed later, after its next discovery resync (30 s).
 * `processes` is in stop order: kube-controller-manager, kube-apiserver, etcd.
 */
export async function startKube(opts: KubeOptions): Promise<KubeServer> {
  const assets = kubeAssets();
  const controllerManager = controllerManagerBinary();
  const started: ServerProcess[] = [];
  try {
    return await startKubeProcesses(opts, assets, controllerManager, started);
  } catch (err) {
    await stopProcesses(started.reverse()); // none left behind when one of them fails to start
    throw err;
  }
}

async function startKubeProcesses(
  opts: KubeOptions,
  assets: string,
  controllerManager: string,
  started: ServerProcess[],
): Promise<KubeServer> {
  const detached = opts.detached ?? false;
  const [etcdPort, peerPort, apiPort] = [
    opts.etcdPort ?? (await freePort()),
    await freePort(),
    opts.apiPort ?? (await freePort()),
  ];
  const etcdUrl = `http://127.0.0.1:${etcdPort}`;
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const etcd = launch(
    'etcd',
    join(assets, 'etcd'),
    [
      '--data-dir',
      join(opts.dir, 'etcd-data'),
      '--listen-client-urls',
      etcdUrl,
      '--advertise-client-urls',
      etcdUrl,
      '--listen-peer-urls',
      peerUrl,
      '--initial-advertise-peer-urls',
      peerUrl,
      '--initial-cluster',
      `default=${peerUrl}`,
      '--unsafe-no-fsync',
      '--log-level',
      'warn',
    ],
    opts.dir,
    detached,
  );
  started.push(etcd.proc);
  await waitFor('etcd', etcd.proc.logFile, etcd.child, () => portOpen(etcdPort));

  const token = randomBytes(16).toString('hex');
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const certDir = join(opts.dir, 'apiserver-certs');
  mkdirSync(certDir, { recursive: true });
  writeFileSync(join(opts.dir, 'tokens.csv'), `${token},admin,admin,system:masters\n`);
  writeFileSync(join(opts.dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(join(opts.dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  if (opts.auditPolicy) writeFileSync(join(opts.dir, 'audit-policy.yaml'), opts.auditPolicy);
  const audit = opts.auditPolicy
    ? [
        '--audit-policy-file',
        join(opts.dir, 'audit-policy.yaml'),
        '--audit-log-path',
        join(opts.dir, 'audit.log'),
        '--audit-log-mode',
        'blocking',
      ]
    : [];
  const api = launch(
    'kube-apiserver',
    join(assets, 'kube-apiserver'),
    [
      '--etcd-servers',
      etcdUrl,
      '--cert-dir',
      certDir,
      '--secure-port',
      String(apiPort),
      '--bind-address',
      '127.0.0.1',
      '--advertise-address',
      '127.0.0.1',
      '--token-auth-file',
      join(opts.dir, 'tokens.csv'),
      '--authorization-mode',
      'RBAC',
      '--service-account-issuer',
      'https://kubernetes.default.svc',
      '--service-account-key-file',
      join(opts.dir, 'sa.pub'),
      '--service-account-signing-key-file',
      join(opts.dir, 'sa.key'),
      '--service-cluster-ip-range',
      '10.0.0.0/24',
      '--allow-privileged=true',
      ...(opts.podServiceAccounts ? [] : ['--disable-admission-plugins', 'ServiceAccount']),
      ...audit,
    ],
    opts.dir,
    detached,
  );
  started.push(api.proc);
  const url = `https://127.0.0.1:${apiPort}`;
  await waitFor('kube-apiserver', api.proc.logFile, api.child, () => answers200(url, '/readyz', token), 90_000);

  const kubeconfig = join(opts.dir, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: glidepath',
      'clusters:',
      '- name: glidepath',
      '  cluster:',
      `    server: ${url}`,
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: admin',
      '  user:',
      `    token: ${token}`,
      'contexts:',
      '- name: glidepath',
      '  context:',
      '    cluster: glidepath',
      '    user: admin',
      '    namespace: default',
      '',
    ].join('\n'),
  );
  const kubectl = join(assets, 'kubectl');
  if (opts.crds) installCrds(kubeconfig, kubectl);

  // The same admin kubeconfig for its API calls and for delegated authn/authz; no serving port of its own.
  const kcm = launch(
    'kube-controller-manager',
    controllerManager,
    [
      '--kubeconfig',
      kubeconfig,
      '--authentication-kubeconfig',
      kubeconfig,
      '--authorization-kubeconfig',
      kubeconfig,
      '--service-account-private-key-file',
      join(opts.dir, 'sa.key'),
      '--root-ca-file',
      join(certDir, 'apiserver.crt'),
      '--use-service-account-credentials=false',
      '--leader-elect=false',
      '--secure-port',
      '0',
      '--controllers',
      (opts.controllers ?? kubeControllers).join(','),
    ],
    opts.dir,
    detached,
  );
  started.push(kcm.proc);
  // Running once the serviceaccount controller has given the `default` namespace its ServiceAccount.
  await waitFor('kube-controller-manager', kcm.proc.logFile, kcm.child, () =>
    answers200(url, '/api/v1/namespaces/default/serviceaccounts/default', token),
  );
  return { url, kubeconfig, kubectl, assets, processes: [kcm.proc, api.proc, etcd.proc] };
}

/**
 * Stops processes in order (kube-controller-manager, then kube-apiserver, then etcd: with etcd gone first the
 * apiserver's shutdown hangs), SIGKILL after a grace period.
 */
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
