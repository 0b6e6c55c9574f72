/**
 * docker-compose.yml's controller service, started by Debian's docker-compose from the image built here, against
 * this tier's servers (the kubeconfig of the node's apiserver mounted from the host, the dev server through the
 * host's network): it becomes ready and acts on the cluster.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { group, version } from '../../api/common.js';
import { freePort } from '../../scripts/servers/processes.js';
import { eventually } from '../harness/eventually.js';
import { clients, kubectl } from './cluster.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const project = `glidepath-e2e-${randomBytes(3).toString('hex')}`;
const namespace = `compose-${randomBytes(3).toString('hex')}`;
const { core, custom } = clients();
let env: Record<string, string>;
let probePort: number;

const compose = (...args: string[]) =>
  execFileSync('docker-compose', ['-f', 'docker-compose.yml', '-p', project, ...args], {
    cwd: root,
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });

beforeAll(async () => {
  [probePort] = [await freePort()];
  env = {
    ...(process.env as Record<string, string>),
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS!,
    KUBECONFIG: process.env.KUBECONFIG!,
    GLIDEPATH_VERSION: '0.1.0',
    GLIDEPATH_NAMESPACES: namespace,
    GLIDEPATH_METRICS_PORT: String(await freePort()),
    GLIDEPATH_PROBE_PORT: String(probePort),
  };
  // The CRDs, as an install has them (the rollout test may have deleted its install, CRDs included).
  kubectl('apply', '--server-side', '-f', join(root, 'k8s-manifests/base/crds'));
  await core.createNamespace({ body: { metadata: { name: namespace } } });
});
afterAll(() => {
  try {
    compose('down', '--timeout', '10');
  } catch (err) {
    console.error(`docker-compose down: ${String(err)}`);
  }
});

test("the controller service starts from the image, becomes ready, and writes a resource's status", async () => {
  compose('up', '-d', '--no-deps', '--no-build', 'controller');
  const logs = () => compose('logs', '--no-color', 'controller');
  try {
    await eventually(
      'the controller ready',
      async () => (await fetch(`http://127.0.0.1:${probePort}/readyz`)).status === 200,
      180_000,
      500,
    );
    expect(logs()).toContain('glidepath controller running');
    // A resource whose TemporalConnection does not exist: the controller's answer is in its status.
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: 'temporalworkerdeployments',
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'TemporalWorkerDeployment',
        metadata: { name: 'compose' },
        spec: {
          rollout: { strategy: 'AllAtOnce' },
          workerOptions: { connectionRef: { name: 'missing' }, temporalNamespace: 'default' },
          template: { spec: { containers: [{ name: 'worker', image: 'glidepath/example-worker:1.0.0' }] } },
        },
      },
    });
    const reason = await eventually(
      'the ConnectionNotFound status',
      async () => {
        const obj = (await custom.getNamespacedCustomObject({
          group,
          version,
          namespace,
          plural: 'temporalworkerdeployments',
          name: 'compose',
        })) as { status?: { conditions?: { reason: string }[] } };
        return obj.status?.conditions?.find((c) => c.reason === 'ConnectionNotFound')?.reason;
      },
      120_000,
      500,
    );
    expect(reason).toBe('ConnectionNotFound');
  } catch (err) {
    throw new Error(`${String(err)}\n--- controller logs ---\n${logs().split('\n').slice(-40).join('\n')}`);
  }
});
