/**
 * etcd and kube-apiserver in the envtest layout, with a kube-controller-manager running the controllers a real
 * cluster has that the pod simulator does not play (garbage collection, namespace deletion, service accounts).
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { installCrds } from './install-crds.js';
import { freePort, launch, logFileOf, portOpen, stopProcesses, waitFor, type ServerProcess } from './processes.js';

const scriptsDir = dirname(fileURLToPath(import.meta.url));

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
  // A port found free can be taken before the server binds it (by another process's connection: the ports come from
  // the ephemeral range). Such a start fails at once, and goes again on other ports.
  for (let attempt = 1; ; attempt++) {
    const started: ServerProcess[] = [];
    const logged = new Map(['etcd', 'kube-apiserver'].map((n) => [n, sizeOf(logFileOf(opts.dir, n))]));
    try {
      return await startKubeProcesses(opts, assets, controllerManager, started);
    } catch (err) {
      await stopProcesses(started.reverse()); // none left behind when one of them fails to start
      const lostPort = [...logged].some(([n, from]) =>
        /address already in use/.test(readFrom(logFileOf(opts.dir, n), from)),
      );
      if (attempt >= 3 || !lostPort) throw err;
    }
  }
}

const sizeOf = (file: string) => (existsSync(file) ? statSync(file).size : 0);
const readFrom = (file: string, from: number) => (existsSync(file) ? readFileSync(file).subarray(from).toString() : '');

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
