/**
 * Installs the generated CRDs the way a user does: `kubectl apply --server-side` (they are too large for
 * client-side apply's annotation), then waits until they are established.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const crdDir = join(dirname(fileURLToPath(import.meta.url)), '../../k8s-manifests/base/crds');

export function installCrds(kubeconfig: string, kubectl: string): void {
  const run = (...args: string[]) =>
    execFileSync(kubectl, ['--kubeconfig', kubeconfig, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  run('apply', '--server-side', '--force-conflicts', '--field-manager', 'glidepath', '-f', crdDir);
  run('wait', '--for', 'condition=Established', '--timeout', '30s', '-f', crdDir);
}
