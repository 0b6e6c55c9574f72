/**
 * Pure synthesis of the CustomResourceDefinitions from the zod schemas: structural OpenAPI v3, CEL rules,
 * defaults, the status subresource, printer columns and short names. `scripts/generate-crds.ts` writes them.
 */
import { z } from 'zod';
import { dnsLabelPattern, group, version } from './common.js';
import { TemporalConnectionSpec } from './temporal-connection.js';
import { TemporalWorkerDeploymentSpec, TemporalWorkerDeploymentStatus } from './temporal-worker-deployment.js';

/** A JSON Schema node, as much of it as a CRD's structural schema holds. */
export type JsonSchema = { [key: string]: unknown };

const keep = new Set([
  'type', 'format', 'description', 'properties', 'required', 'items', 'additionalProperties', 'enum', 'default',
  'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'pattern', 'minItems',
  'maxItems', 'nullable', 'x-kubernetes-validations', 'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string', 'x-kubernetes-embedded-resource', 'x-kubernetes-list-type', 'x-kubernetes-map-type',
  'x-kubernetes-list-map-keys', 'anyOf',
]);

/** Numeric bounds zod adds for "any safe integer", which say nothing to a reader of the CRD. */
const noiseBounds = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]);

/** Reduces a JSON Schema from zod to the structural subset kube-apiserver accepts. */
export function toStructural(node: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(node)) {
    if (!keep.has(key)) continue;
    if ((key === 'minimum' || key === 'maximum') && noiseBounds.has(value as number)) continue;
    if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([k, v]) => [k, toStructural(v)]),
      );
    } else if (key === 'additionalProperties' && node['x-kubernetes-preserve-unknown-fields']) {
      continue; // any value is kept as it is
    } else if (key === 'items' || (key === 'additionalProperties' && typeof value === 'object')) {
      out[key] = toStructural(value as JsonSchema);
    } else if (key === 'additionalProperties') {
      continue; // `false` is implied by a structural schema (unknown fields are pruned)
    } else {
      out[key] = value;
    }
  }
  if (Array.isArray(out.required) && out.required.length === 0) delete out.required;
  return out;
}

function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

interface CrdOptions {
  kind: string;
  plural: string;
  shortNames: string[];
  spec: JsonSchema;
  status: JsonSchema;
  printerColumns: { name: string; type: string; jsonPath: string; description?: string }[];
  /** Restricts metadata.name beyond kube-apiserver's DNS subdomain rule. */
  namePattern?: string;
}

function crd(o: CrdOptions) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${o.plural}.${group}` },
    spec: {
      group,
      names: { kind: o.kind, listKind: `${o.kind}List`, plural: o.plural, singular: o.kind.toLowerCase(), shortNames: o.shortNames, categories: ['glidepath'] },
      scope: 'Namespaced',
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                // At the root only name restrictions are allowed; a versioned Deployment is named after it.
                metadata: { type: 'object', properties: { name: { type: 'string', maxLength: 63, ...(o.namePattern ? { pattern: o.namePattern } : {}) } } },
                spec: o.spec,
                status: o.status,
              },
            },
          },
          subresources: { status: {} },
          additionalPrinterColumns: o.printerColumns,
        },
      ],
    },
  };
}

/**
 * What a Deployment's validation checks about containers that Kubernetes' OpenAPI does not say: at least one,
 * names unique (a list map keyed by name) and DNS-1123 labels. Without it a bad template is accepted here and
 * fails only when the versioned Deployment is created.
 */
function constrainContainers(template: JsonSchema) {
  const podSpec = (template.properties as Record<string, JsonSchema>).spec!;
  const containers = (podSpec.properties as Record<string, JsonSchema>).containers!;
  Object.assign(containers, { minItems: 1, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] });
  const name = ((containers.items as JsonSchema).properties as Record<string, JsonSchema>).name!;
  Object.assign(name, { pattern: dnsLabelPattern, maxLength: 63 });
}

/**
 * Both CRDs. `podTemplateSpec` is Kubernetes' own PodTemplateSpec schema (structural, refs resolved), so
 * the pod template is checked at `kubectl apply` as a Deployment's would be.
 */
export function renderCrds(podTemplateSpec: JsonSchema) {
  const spec = toStructural(jsonSchemaOf(TemporalWorkerDeploymentSpec));
  const properties = spec.properties as Record<string, JsonSchema>;
  const ourTemplate = properties.template!;
  properties.template = {
    ...podTemplateSpec,
    // As zod: without `spec`, the restartPolicy rule fails to evaluate and names `spec.template`, not the field.
    required: ['spec'],
    description: 'The pods of each version (a PodTemplateSpec; restartPolicy must be Always)',
    'x-kubernetes-validations': ourTemplate['x-kubernetes-validations'],
  };
  constrainContainers(properties.template);
  return [
    crd({
      kind: 'TemporalWorkerDeployment',
      plural: 'temporalworkerdeployments',
      shortNames: ['twd'],
      // A DNS-1123 label: Temporal refuses "." in the worker deployment name `<namespace>/<name>`.
      namePattern: dnsLabelPattern,
      spec,
      status: toStructural(jsonSchemaOf(TemporalWorkerDeploymentStatus)),
      printerColumns: [
        { name: 'Current', type: 'string', jsonPath: '.status.currentVersion.buildID', description: 'Current build ID' },
        { name: 'Target', type: 'string', jsonPath: '.status.targetVersion.buildID', description: 'Target build ID' },
        { name: 'Ramp %', type: 'number', jsonPath: '.status.targetVersion.rampPercentage', description: 'Share of new executions on the target' },
        { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
        // "Paused (42s left in step 1/3): looking at errors", the abort reason, what is retried.
        { name: 'Message', type: 'string', jsonPath: '.status.message', description: 'Where the rollout stands, in words' },
      ],
    }),
    crd({
      kind: 'TemporalConnection',
      plural: 'temporalconnections',
      shortNames: ['tconn'],
      spec: toStructural(jsonSchemaOf(TemporalConnectionSpec)),
      status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      printerColumns: [
        { name: 'Host', type: 'string', jsonPath: '.spec.hostPort' },
        { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
      ],
    }),
  ];
}
