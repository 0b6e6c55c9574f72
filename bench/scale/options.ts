/**
 * `npm run bench:scale`'s command line (see ./main.ts), and what the run is made of: its namespaces and the
 * Progressive rollout of phase 2.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    controllers: { type: 'string' },
    idle: { type: 'string' },
    timeout: { type: 'string' },
    'gone-timeout': { type: 'string' },
    keep: { type: 'boolean' },
    'controller-flag': { type: 'string', multiple: true },
    'server-flag': { type: 'string', multiple: true },
    compiled: { type: 'boolean' },
    'node-option': { type: 'string', multiple: true },
    'controller-env': { type: 'string', multiple: true },
    'write-rate': { type: 'string' },
    'without-own-count': { type: 'boolean' },
    'no-record': { type: 'boolean' },
  },
});
export { values };
export const resources = Number(positionals[0] ?? 100);
export const controllerCount = Number(values.controllers ?? 1);
export const idleSeconds = Number(values.idle ?? 0);
export const phaseTimeoutMs = Number(values.timeout ?? 600 + resources) * 1000;
export const goneTimeoutMs = Number(values['gone-timeout'] ?? 180) * 1000;
export const writeRate = values['write-rate'] === undefined ? undefined : Number(values['write-rate']);
if (writeRate !== undefined && !(writeRate > 0)) {
  console.error(`--write-rate: a number of writes a second above 0, not ${values['write-rate']}`);
  process.exit(2);
}
if (
  ![resources, controllerCount, idleSeconds, phaseTimeoutMs, goneTimeoutMs].every(
    (x) => Number.isInteger(x) && x >= 0,
  ) ||
  resources < 1 ||
  controllerCount < 1
) {
  console.error(
    'usage: npm run bench:scale -- N [--controllers K] [--idle SECONDS] [--timeout SECONDS] [--gone-timeout SECONDS] [--keep] [--controller-flag=FLAG]... [--server-flag=KEY=VALUE]... [--compiled] [--node-option=OPTION]... [--controller-env=KEY=VALUE]... [--write-rate R] [--without-own-count] [--no-record]',
  );
  process.exit(2);
}
if (values.compiled && !existsSync(join(root, 'dist/worker/main.js'))) {
  console.error('--compiled: dist/worker/main.js is missing; run `npm run build` first');
  process.exit(2);
}

export const k8sNamespace = 'bench';
/** The controllers' own Temporal namespace: every request in it is theirs (less the server's own background). */
export const controllerNamespace = 'glidepath';
/** An empty namespace: the server's own per-namespace background requests, subtracted from `controllerNamespace`'s. */
export const baselineNamespace = 'glidepath-baseline';
/** Where the pods' worker deployments live. */
export const podNamespace = 'default';
export const steps = [
  { rampPercentage: 10, pauseDuration: '5s' },
  { rampPercentage: 50, pauseDuration: '5s' },
];
/** The routing changes of phase 2's Progressive rollout: its ramps and the set-current. */
export const routingChanges = steps.length + 1;
export const writeConcurrency = 20;
