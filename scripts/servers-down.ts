/** `npm run servers:down`: stops what `servers:up` started (kube-controller-manager, kube-apiserver, etcd, Temporal). */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stopProcesses } from './servers/processes.js';
import type { DevState } from './servers-up.js';

const stateFile = join(dirname(fileURLToPath(import.meta.url)), '../.dev/servers.json');
if (!existsSync(stateFile)) {
  console.log('[glidepath] no servers recorded in .dev/servers.json; nothing to stop');
} else {
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as DevState;
  await stopProcesses(state.processes, 10_000);
  rmSync(stateFile);
  console.log(`[glidepath] stopped ${state.processes.map((p) => p.name).join(', ')}`);
}
