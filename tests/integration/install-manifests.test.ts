/**
 * The kustomize install (k8s-manifests/) as the real kube-apiserver takes it: the base and both overlays render,
 * every object they hold is accepted by a server-side dry run (schemas, RBAC rules, the controller Deployment), the
 * namespaced overlay holds nothing cluster-wide but the CRDs and the controller's namespace, keeps the controller
 * out of the team's namespace, and its Role grants exactly the ClusterRoles' rules. A dry run, so the CRDs the other
 * tests use are never touched.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
  subjects?: { kind: string; name: string; namespace?: string }[];
  spec?: {
    template?: {
      spec?: {
        containers?: {
          args?: string[];
          ports?: { name: string; containerPort: number }[];
          readinessProbe?: { httpGet?: { path: string; port: string } };
          livenessProbe?: { httpGet?: { path: string; port: string } };
          env?: { name: string; value?: string }[];
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
    'clusterrole.rbac.authorization.k8s.io/glidepath-controller-secrets',
    'clusterrolebinding.rbac.authorization.k8s.io/glidepath-controller-secrets',
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

test("the namespaced overlay, set to a team namespace, runs the controller in a namespace of its own with a Role in the team's, nothing cluster-wide but the CRDs and that namespace", () => {
  const team = `team-${process.pid}`;
  const own = `glidepath-team-${process.pid}`;
  // Dry-run objects need their namespace to exist (a dry-run Namespace is not created).
  kubectl('create', 'namespace', team);
  kubectl('create', 'namespace', own);
  try {
    // What a user does: the overlay with its two `namespace:` lines set (a copy, with the base beside it as in the
    // repository).
    for (const dir of ['base', 'overlays/namespaced'])
      cpSync(join(manifests, dir), join(work, dir), { recursive: true });
    const overlay = join(work, 'overlays/namespaced');
    const setNamespace = (file: string, from: string, to: string) => {
      const text = readFileSync(join(overlay, file), 'utf8');
      expect(text).toContain(`\nnamespace: ${from}\n`);
      writeFileSync(join(overlay, file), text.replace(`\nnamespace: ${from}\n`, `\nnamespace: ${to}\n`));
    };
    setNamespace('controller/kustomization.yaml', 'glidepath-team', own);
    setNamespace('team/kustomization.yaml', 'team', team);

    const objects = render(overlay);
    const clusterWide = objects.filter((o) => !o.metadata.namespace);
    expect([...new Set(clusterWide.map((o) => o.kind))].sort()).toEqual(['CustomResourceDefinition', 'Namespace']);
    expect(clusterWide.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name)).toEqual([own]);
    // In the team's namespace only the Role and its binding; all the rest (the ServiceAccount, the ConfigMaps, the
    // controller, any Role of the base's) in the controller's.
    const inTeam = objects.filter((o) => o.metadata.namespace === team).map((o) => `${o.kind}/${o.metadata.name}`);
    expect(inTeam.sort()).toEqual(['Role/glidepath-controller', 'RoleBinding/glidepath-controller']);
    expect(
      objects.every((o) => !o.metadata.namespace || o.metadata.namespace === team || o.metadata.namespace === own),
    ).toBe(true);
    expect(find(objects, 'ServiceAccount', 'glidepath')!.metadata.namespace).toBe(own);
    expect(find(objects, 'Deployment', 'glidepath-controller')!.metadata.namespace).toBe(own);
    // Every binding of the ServiceAccount names it in the controller's namespace.
    for (const binding of objects.filter((o) => o.kind === 'RoleBinding')) {
      for (const subject of binding.subjects ?? []) {
        if (subject.kind === 'ServiceAccount' && subject.name === 'glidepath') expect(subject.namespace).toBe(own);
      }
    }
    expect(find(objects, 'RoleBinding', 'glidepath-controller')!.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'glidepath', namespace: own },
    ]);
    // The Role grants what the cluster-wide install's two ClusterRoles grant.
    const base = render(manifests);
    expect(find(objects, 'Role', 'glidepath-controller')!.rules).toEqual([
      ...find(base, 'ClusterRole', 'glidepath-controller')!.rules!,
      ...find(base, 'ClusterRole', 'glidepath-controller-secrets')!.rules!,
    ]);
    const env = find(objects, 'Deployment', 'glidepath-controller')!.spec!.template!.spec!.containers![0]!.env;
    expect(env).toEqual([{ name: 'GLIDEPATH_NAMESPACES', value: team }]);

    const out = kubectl('apply', '--server-side', '--dry-run=server', '-k', overlay);
    expect(out).toContain('role.rbac.authorization.k8s.io/glidepath-controller');
    expect(out).toContain('rolebinding.rbac.authorization.k8s.io/glidepath-controller');
    expect(out).toContain('serviceaccount/glidepath');
    expect(out).toContain('deployment.apps/glidepath-controller');
  } finally {
    kubectl('delete', 'namespace', team, own, '--wait=false');
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
