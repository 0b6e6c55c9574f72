/**
 * The kustomize install (k8s-manifests/) as the real kube-apiserver takes it: the base and both overlays render,
 * every object they hold is accepted by a server-side dry run (schemas, RBAC rules, the controller Deployment), the
 * namespaced overlay holds nothing cluster-wide but the CRDs, and its Role grants exactly the ClusterRole's rules.
 * A dry run, so the CRDs the other tests use are never touched.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

const manifests = fileURLToPath(new URL('../../k8s-manifests/', import.meta.url));
const kubectl = (...args: string[]) =>
  execFileSync(process.env.GLIDEPATH_KUBECTL!, ['--kubeconfig', process.env.KUBECONFIG!, ...args], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: unknown[];
  spec?: {
    template?: {
      spec?: {
        containers?: {
          args?: string[];
          ports?: { name: string; containerPort: number }[];
          readinessProbe?: { httpGet?: { path: string; port: string } };
          livenessProbe?: { httpGet?: { path: string; port: string } };
          env?: { name: string }[];
        }[];
      };
    };
  };
}

const render = (dir: string): KubeObject[] =>
  parseAllDocuments(kubectl('kustomize', dir)).map((d) => d.toJS() as KubeObject);
const find = (objects: KubeObject[], kind: string, name: string) =>
  objects.find((o) => o.kind === kind && o.metadata.name === name);

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'glidepath-kustomize-'));
  // The base's namespace must exist for a dry run of the objects in it (a dry-run Namespace is not created).
  kubectl('apply', '--server-side', '-f', join(manifests, 'base/rbac.yaml'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

test('kubectl apply --server-side -k k8s-manifests/ is accepted by the apiserver: CRDs, RBAC, the controller and its metrics Service', () => {
  const out = kubectl('apply', '--server-side', '--dry-run=server', '-k', manifests);
  for (const object of [
    'customresourcedefinition.apiextensions.k8s.io/temporalworkerdeployments.glidepath.dev',
    'clusterrole.rbac.authorization.k8s.io/glidepath-controller',
    'deployment.apps/glidepath-controller',
    'service/glidepath-controller-metrics',
    'configmap/glidepath-temporal',
  ]) {
    expect(out).toContain(object);
  }
});

test('the controller Deployment probes the ports and paths the controller serves, runs as non-root and has two replicas', () => {
  const deployment = find(render(manifests), 'Deployment', 'glidepath-controller')! as KubeObject & {
    spec: { replicas: number; template: { spec: { securityContext: { runAsNonRoot: boolean } } } };
  };
  const container = deployment.spec.template.spec.containers![0]!;
  expect(container.args).toEqual(['--metrics-bind-address=:8080', '--health-probe-bind-address=:8081']);
  expect(container.ports).toEqual([
    { name: 'metrics', containerPort: 8080 },
    { name: 'health', containerPort: 8081 },
  ]);
  expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'health' });
  expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'health' });
  expect(deployment.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
  expect(deployment.spec.replicas).toBe(2);
});

test('the namespaced overlay, set to a team namespace, holds a Role with the ClusterRole rules and nothing cluster-wide but the CRDs', () => {
  const team = `team-${process.pid}`;
  kubectl('create', 'namespace', team);
  try {
    // What a user does: a kustomization of their own on top of the overlay, with their namespace (kustomize takes
    // only relative paths).
    writeFileSync(
      join(work, 'kustomization.yaml'),
      `resources:\n  - ${relative(work, join(manifests, 'overlays/namespaced'))}\nnamespace: ${team}\n`,
    );
    const objects = render(work);
    const clusterWide = objects.filter((o) => !o.metadata.namespace).map((o) => o.kind);
    expect([...new Set(clusterWide)]).toEqual(['CustomResourceDefinition']);
    expect(objects.filter((o) => o.metadata.namespace).every((o) => o.metadata.namespace === team)).toBe(true);
    const clusterRole = find(render(manifests), 'ClusterRole', 'glidepath-controller')!;
    expect(find(objects, 'Role', 'glidepath-controller')!.rules).toEqual(clusterRole.rules);
    const env = find(objects, 'Deployment', 'glidepath-controller')!.spec!.template!.spec!.containers![0]!.env;
    expect(env).toEqual([
      { name: 'GLIDEPATH_NAMESPACES', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ]);
    const out = kubectl('apply', '--server-side', '--dry-run=server', '-k', work);
    expect(out).toContain('role.rbac.authorization.k8s.io/glidepath-controller');
    expect(out).toContain('deployment.apps/glidepath-controller');
  } finally {
    kubectl('delete', 'namespace', team, '--wait=false');
  }
});

test('the Temporal Cloud overlay requires the API key Secret and turns TLS on', () => {
  const objects = render(join(manifests, 'overlays/temporal-cloud'));
  const config = find(objects, 'ConfigMap', 'glidepath-temporal') as KubeObject & { data: Record<string, string> };
  expect(config.data.TEMPORAL_TLS).toBe('true');
  const deployment = find(objects, 'Deployment', 'glidepath-controller') as KubeObject & {
    spec: { template: { spec: { containers: { envFrom: unknown[] }[] } } };
  };
  expect(deployment.spec.template.spec.containers[0]!.envFrom).toContainEqual({
    secretRef: { name: 'glidepath-temporal', optional: false },
  });
  expect(
    kubectl('apply', '--server-side', '--dry-run=server', '-k', join(manifests, 'overlays/temporal-cloud')),
  ).toContain('deployment.apps/glidepath-controller');
});
