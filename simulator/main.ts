/**
 * `npm run pods`: the pod simulator on its own, against $KUBECONFIG (see pod-simulator.ts).
 *
 *   --light   light pods (bare versioned pollers, light-pod.ts) instead of real example workers; also
 *             GLIDEPATH_PODS_LIGHT=1
 */
import { parseArgs } from 'node:util';
import { loadKubeConfig } from '../kube/client.js';
import { installRuntime } from '../worker/controller.js';
import { PodSimulator } from './pod-simulator.js';

const { values } = parseArgs({ options: { light: { type: 'boolean' } } });
const light = values.light || ['1', 'true'].includes(process.env.GLIDEPATH_PODS_LIGHT ?? '');
// Light pods use no SDK worker, so no native runtime to set up.
if (!light) installRuntime('WARN');

const log = (message: string) => console.log(`${new Date().toISOString()} ${message}`);
const simulator = new PodSimulator(loadKubeConfig(), { log, light });
await simulator.start();
log(
  `pod simulator running: each Glidepath Deployment gets ${light ? 'light pods (bare versioned pollers)' : 'real example workers'} for its replicas`,
);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => void simulator.stop().then(() => process.exit(0)));
}
