/**
 * The e2e test's view of the real node: kubectl, the API clients, pods' logs (read from kubelet's log folder:
 * the apiserver does not reach this kubelet), and what to print when a step fails.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';

export function kubectl(...args: string[]): string {
  return execFileSync(process.env.GLIDEPATH_KUBECTL!, ['--kubeconfig', process.env.KUBECONFIG!, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export function clients() {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(process.env.KUBECONFIG!);
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    apps: kc.makeApiClient(k8s.AppsV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
  };
}

/** The apiserver's address as pods on the host's network reach it. */
export function apiServerHostPort(): { host: string; port: string } {
  const { kc } = clients();
  const url = new URL(kc.getCurrentCluster()!.server);
  return { host: url.hostname, port: url.port };
}

/** The last `lines` lines each container of the pods in `namespace` wrote (kubelet's files; restarts included). */
export function podLogs(namespace: string, lines = 40): string {
  const root = process.env.GLIDEPATH_E2E_POD_LOGS!;
  if (!existsSync(root)) return '';
  const out: string[] = [];
  for (const pod of readdirSync(root).filter((d) => d.startsWith(`${namespace}_`))) {
    for (const container of readdirSync(join(root, pod))) {
      for (const file of readdirSync(join(root, pod, container)).sort()) {
        // CRI log lines: "<time> <stream> <tag> <message>"
        const text = readFileSync(join(root, pod, container, file), 'utf8')
          .trimEnd()
          .split('\n')
          .slice(-lines);
        out.push(`--- ${pod}/${container}/${file}`, ...text.map((l) => l.split(' ').slice(3).join(' ')));
      }
    }
  }
  return out.join('\n');
}

function tryRun(what: string, f: () => string): string {
  try {
    return `## ${what}\n${f()}`;
  } catch (err) {
    return `## ${what}: ${(err as Error).message}`;
  }
}

/** What to read when a step fails: pods, Deployments, the resources' status, Events, pods' logs. */
export function diagnostics(namespaces: string[]): string {
  const dir = process.env.GLIDEPATH_E2E_DIR;
  return [
    tryRun('pods', () => kubectl('get', 'pods', '-A', '-o', 'wide')),
    tryRun('deployments', () => kubectl('get', 'deployments', '-A', '-o', 'wide')),
    tryRun('temporalworkerdeployments', () =>
      kubectl(
        'get',
        'temporalworkerdeployments',
        '-A',
        '-o',
        'jsonpath={range .items[*]}{.metadata.name}: {.status}{"\\n"}{end}',
      ),
    ),
    ...namespaces.map((ns) =>
      tryRun(`events in ${ns}`, () => kubectl('get', 'events', '-n', ns, '--sort-by', '.lastTimestamp')),
    ),
    ...namespaces.map((ns) => `## logs of the pods in ${ns}\n${podLogs(ns)}`),
    `## the node's own logs: ${dir}/{kubelet,containerd,kube-scheduler,kube-controller-manager,kube-apiserver,temporal}.log`,
  ].join('\n\n');
}

/** Runs one step of the test; when it fails, the error carries the cluster's state and the pods' logs. */
export async function step<T>(name: string, namespaces: string[], run: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    const value = await run();
    console.log(`[e2e] ${name}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return value;
  } catch (err) {
    const e = err instanceof Error ? err : new Error(String(err));
    e.message = `step "${name}" failed: ${e.message}\n\n${diagnostics(namespaces)}`;
    throw e;
  }
}
