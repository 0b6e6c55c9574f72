/**
 * Jest global setup of the workflow and integration tiers: starts the real servers on free loopback ports
 * and hands their addresses to the tests through the environment. Logs stay in .dev/test-servers/.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from 'jest';
import { startKube, startTemporal, type ServerProcess } from '../../scripts/servers/servers.js';
import { installCrds } from '../../scripts/servers/install-crds.js';

declare global {
  var glidepathServers: ServerProcess[] | undefined;
}

export default async function globalSetup(_global: Config, project: { displayName?: { name: string } | string; rootDir: string }) {
  const name = typeof project.displayName === 'string' ? project.displayName : project.displayName?.name ?? 'tests';
  const dir = join(project.rootDir, '.dev/test-servers', name);
  rmSync(dir, { recursive: true, force: true });
  const processes: ServerProcess[] = [];
  const temporal = await startTemporal({ dir });
  processes.push(temporal.process);
  process.env.TEMPORAL_ADDRESS = temporal.address;
  process.env.TEMPORAL_NAMESPACE = temporal.namespace;
  if (name === 'integration') {
    const kube = await startKube({ dir });
    processes.unshift(...kube.processes);
    installCrds(kube.kubeconfig, kube.kubectl);
    process.env.KUBECONFIG = kube.kubeconfig;
    process.env.GLIDEPATH_KUBECTL = kube.kubectl;
  }
  globalThis.glidepathServers = [...(globalThis.glidepathServers ?? []), ...processes];
  console.log(`\n[glidepath] ${name} servers up; logs in ${dir}`);
}
