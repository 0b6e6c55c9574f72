/** Stops the servers global setup started; their logs stay in .dev/test-servers/ for a failed run. */
import { stopProcesses } from '../../scripts/servers/processes.js';

export default async function globalTeardown() {
  await stopProcesses(globalThis.glidepathServers ?? []);
  globalThis.glidepathServers = [];
}
