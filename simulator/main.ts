/** `npm run pods`: the pod simulator on its own, against $KUBECONFIG (see pod-simulator.ts). */
import { loadKubeConfig } from '../activities/kubernetes/client.js';
import { installRuntime } from '../worker/controller.js';
import { PodSimulator } from './pod-simulator.js';

installRuntime('WARN');

const log = (message: string) => console.log(`${new Date().toISOString()} ${message}`);
const simulator = new PodSimulator(loadKubeConfig(), { log });
await simulator.start();
log('pod simulator running: each Glidepath Deployment gets real example workers for its replicas');
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => void simulator.stop().then(() => process.exit(0)));
}
