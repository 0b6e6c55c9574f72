/**
 * Jest global setup of the workflow and integration tiers: starts the real servers on free loopback ports
 * (integration: also etcd, kube-apiserver and kube-controller-manager) and hands their addresses to the tests
 * through the environment. Logs stay in .dev/test-servers/<tier>/ (or <tier>-<pid>/ while another run holds it).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from 'jest';
import { startKube } from '../../scripts/servers/kube-server.js';
import { alive, freePort, stopProcesses, type ServerProcess } from '../../scripts/servers/processes.js';
import { startTemporal } from '../../scripts/servers/temporal-server.js';

declare global {
  var glidepathServers: ServerProcess[] | undefined;
}

/**
 * This run's server folder, emptied: `<tier>/`, unless another live run (another jest process) holds it — then
 * `<tier>-<pid>/`, so two runs side by side do not delete each other's etcd data and logs.
 */
function serverDir(rootDir: string, tier: string): string {
  const base = join(rootDir, '.dev/test-servers', tier);
  const ownerFile = join(base, 'run.pid');
  const owner = existsSync(ownerFile) ? Number(readFileSync(ownerFile, 'utf8')) : NaN;
  const dir = owner && owner !== process.pid && alive(owner) ? `${base}-${process.pid}` : base;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'run.pid'), String(process.pid));
  return dir;
}

export default async function globalSetup(
  global: Config,
  project: { displayName?: { name: string } | string; rootDir: string },
) {
  const name = typeof project.displayName === 'string' ? project.displayName : (project.displayName?.name ?? 'tests');
  const dir = serverDir(project.rootDir, name);
  const processes: ServerProcess[] = [];
  try {
    const temporal = await startTemporal({ dir, uiPort: await freePort() });
    processes.push(temporal.process);
    process.env.TEMPORAL_ADDRESS = temporal.address;
    process.env.TEMPORAL_NAMESPACE = temporal.namespace;
    process.env.TEMPORAL_UI_ADDRESS = temporal.uiUrl; // its Web UI (tests/integration/web-ui.test.ts opens it)
    // Jest runs a global setup shared by several projects once, for whichever project comes first: Kubernetes is
    // started whenever a project that needs it is in the run (every project, without --selectProjects).
    const selected = (global as { selectProjects?: string[] }).selectProjects;
    const needsKube =
      !selected ||
      selected.some((p) => p === 'integration' || p === 'chaos') ||
      name === 'integration' ||
      name === 'chaos';
    if (needsKube) {
      // CRDs first, then kube-controller-manager: its garbage collector knows their kinds from the start.
      const kube = await startKube({ dir, crds: true });
      processes.unshift(...kube.processes); // stop order: controller-manager, apiserver, etcd, then Temporal
      process.env.KUBECONFIG = kube.kubeconfig;
      process.env.GLIDEPATH_KUBECTL = kube.kubectl;
    }
  } catch (err) {
    await stopProcesses(processes); // a failed start leaves nothing running
    throw err;
  }
  globalThis.glidepathServers = [...(globalThis.glidepathServers ?? []), ...processes];
  console.log(`\n[glidepath] ${name} servers up; logs in ${dir}`);
}
