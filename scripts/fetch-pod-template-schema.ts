/**
 * Takes Kubernetes' own PodTemplateSpec schema from a real kube-apiserver's /openapi/v3 and writes it,
 * refs resolved and reduced to a structural CRD schema, to api/openapi/pod-template-spec.json, which the CRD
 * generator embeds. Run it when moving to a new Kubernetes version: `npm run fetch:pod-template-schema`.
 */
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startKube } from './servers/kube-server.js';
import { stopProcesses } from './servers/processes.js';

type Schema = { [key: string]: unknown };
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'api/openapi/pod-template-spec.json');

/** Validation keywords kept; descriptions, defaults and patch/list-merge hints are dropped to keep the CRD small. */
const kept = [
  'type',
  'format',
  'enum',
  'required',
  'minimum',
  'maximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
];

const intOrString = { anyOf: [{ type: 'integer' }, { type: 'string' }], 'x-kubernetes-int-or-string': true };
/** Types whose OpenAPI form is not structural, replaced the way controller-gen renders them. */
const special: Record<string, Schema> = {
  'io.k8s.apimachinery.pkg.util.intstr.IntOrString': intOrString,
  'io.k8s.apimachinery.pkg.api.resource.Quantity': {
    ...intOrString,
    pattern:
      '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$',
  },
  'io.k8s.apimachinery.pkg.apis.meta.v1.Time': { type: 'string', format: 'date-time' },
  'io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime': { type: 'string', format: 'date-time' },
  // A pod template's metadata: what a Deployment's template uses; the rest is set by Kubernetes.
  'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta': {
    type: 'object',
    properties: {
      labels: { type: 'object', additionalProperties: { type: 'string' } },
      annotations: { type: 'object', additionalProperties: { type: 'string' } },
      name: { type: 'string' },
      namespace: { type: 'string' },
    },
  },
};

export function resolve(schemas: Record<string, Schema>, node: Schema, seen: string[] = []): Schema {
  const ref =
    (node.$ref as string | undefined) ?? ((node.allOf as Schema[] | undefined)?.[0]?.$ref as string | undefined);
  if (ref) {
    const name = ref.replace('#/components/schemas/', '');
    if (special[name]) return special[name];
    if (seen.includes(name)) throw new Error(`recursive schema ${[...seen, name].join(' → ')} cannot be structural`);
    return resolve(schemas, schemas[name]!, [...seen, name]);
  }
  const result: Schema = {};
  for (const key of kept) if (node[key] !== undefined) result[key] = node[key];
  if (node.properties) {
    result.properties = Object.fromEntries(
      Object.entries(node.properties as Record<string, Schema>).map(([k, v]) => [k, resolve(schemas, v, seen)]),
    );
  }
  if (node.items) result.items = resolve(schemas, node.items as Schema, seen);
  if (node.additionalProperties && typeof node.additionalProperties === 'object') {
    result.additionalProperties = resolve(schemas, node.additionalProperties as Schema, seen);
  }
  if (result.type === undefined && (result.properties || node.additionalProperties)) result.type = 'object';
  return result;
}

function get(url: string, token: string): Promise<string> {
  return new Promise((res, rej) => {
    request(url, { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false }, (r) => {
      let body = '';
      r.on('data', (c) => (body += c));
      r.on('end', () => (r.statusCode === 200 ? res(body) : rej(new Error(`${url}: HTTP ${r.statusCode} ${body}`))));
    })
      .on('error', rej)
      .end();
  });
}

const dir = mkdtempSync(join(tmpdir(), 'glidepath-openapi-'));
const kube = await startKube({ dir });
try {
  const token = readFileSync(join(dir, 'tokens.csv'), 'utf8').split(',')[0]!;
  const doc = JSON.parse(await get(`${kube.url}/openapi/v3/api/v1`, token)) as {
    components: { schemas: Record<string, Schema> };
  };
  const schema = resolve(doc.components.schemas, { $ref: '#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec' });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(schema, null, 1)}\n`);
  console.log(`wrote ${out} (${JSON.stringify(schema).length} bytes)`);
} finally {
  await stopProcesses(kube.processes);
  rmSync(dir, { recursive: true, force: true });
}
