/**
 * `npm run servers:up`: the Temporal dev server (Web UI on) and kube-apiserver + etcd + kube-controller-manager
 * in the background on loopback, the CRDs installed, and `.dev/env.sh` for the shell. Idempotent: running servers
 * are reused.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultControllerNamespace } from '../api/names.js';
import { installCrds } from './servers/install-crds.js';
import { startKube } from './servers/kube-server.js';
import { alive, portOpen, type ServerProcess } from './servers/processes.js';
import { startTemporal, temporalBinary, temporalServerVersion, userDynamicConfig } from './servers/temporal-server.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const devDir = join(root, '.dev');
const stateFile = join(devDir, 'servers.json');

/** Fixed ports, so the Web UI and kubectl context stay put between runs. */
const ports = { temporal: 7233, ui: 8233, kube: 6443, etcd: 2379 };

export interface DevState {
  temporalAddress: string;
  uiUrl: string;
  kubeconfig: string;
  /** Folders of kubectl and temporal, for PATH. */
  binDirs: string[];
  processes: ServerProcess[];
}

async function main() {
  mkdirSync(devDir, { recursive: true });
  const previous = existsSync(stateFile) ? (JSON.parse(readFileSync(stateFile, 'utf8')) as DevState) : undefined;
  let state: DevState;
  if (
    previous &&
    previous.processes.every((p) => alive(p.pid)) &&
    (await portOpen(ports.temporal)) &&
    (await portOpen(ports.kube))
  ) {
    console.log('[glidepath] servers already running; reusing them');
    if (!previous.processes.some((p) => p.name === 'kube-controller-manager')) {
      console.log(
        '[glidepath] note: they run without kube-controller-manager (no garbage collection, namespaces stay Terminating); `npm run servers:down && npm run servers:up` adds it',
      );
    }
    if (process.env.GLIDEPATH_DEV_DYNAMIC_CONFIG)
      console.log(
        '[glidepath] note: GLIDEPATH_DEV_DYNAMIC_CONFIG applies when Temporal starts; `npm run servers:down && npm run servers:up` restarts it',
      );
    state = previous;
    installCrds(state.kubeconfig, join(state.binDirs[0]!, 'kubectl'));
  } else {
    for (const [name, port] of Object.entries(ports)) {
      if (await portOpen(port))
        throw new Error(`port ${port} (${name}) is in use by something else; stop it or run \`npm run servers:down\``);
    }
    const serverDir = join(devDir, 'servers');
    const dynamicConfig = userDynamicConfig();
    // A database per server version: a newer server does not open an older one's schema.
    const temporal = await startTemporal({
      dir: serverDir,
      port: ports.temporal,
      uiPort: ports.ui,
      dbFile: join(serverDir, `temporal-${temporalServerVersion()}.db`),
      detached: true,
      dynamicConfig,
    });
    if (dynamicConfig.length > 0) console.log(`[glidepath] Temporal dynamic config: ${dynamicConfig.join(' ')}`);
    const kube = await startKube({
      dir: serverDir,
      apiPort: ports.kube,
      etcdPort: ports.etcd,
      detached: true,
      crds: true,
    });
    state = {
      temporalAddress: temporal.address,
      uiUrl: temporal.uiUrl!,
      kubeconfig: kube.kubeconfig,
      binDirs: [kube.assets, dirname(temporalBinary())],
      // Stop order: kube-controller-manager, kube-apiserver, etcd, then Temporal.
      processes: [...kube.processes, temporal.process],
    };
    writeFileSync(stateFile, JSON.stringify(state, null, 2));
  }
  writeFileSync(
    join(devDir, 'env.sh'),
    [
      '# Written by `npm run servers:up`; source it: `. .dev/env.sh`',
      `export KUBECONFIG=${state.kubeconfig}`,
      `export TEMPORAL_ADDRESS=${state.temporalAddress}`,
      `export TEMPORAL_NAMESPACE=${defaultControllerNamespace} # the controller's; the workers' is "default"`,
      `export PATH=${state.binDirs.join(':')}:$PATH`,
      '',
    ].join('\n'),
  );
  console.log(
    `[glidepath] Temporal ${state.temporalAddress} (Web UI ${state.uiUrl}), Kubernetes via ${state.kubeconfig}`,
  );
  console.log('[glidepath] now: . .dev/env.sh && kubectl get twd && temporal workflow list');
}

main().catch((err: Error) => {
  console.error(`[glidepath] servers:up failed: ${err.message}`);
  process.exit(1);
});
