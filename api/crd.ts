/**
 * Pure synthesis of the CustomResourceDefinitions from the zod schemas: structural OpenAPI v3, CEL rules,
 * defaults, the status subresource, printer columns and short names. `scripts/generate.ts` writes them, and the CRD
 * reference (docs/crd-reference.md) from the same definitions.
 */
import { z } from 'zod';
import { dnsLabelPattern, group, version } from './common.js';
import { ConnectionSpec } from './connection.js';
import { TemporalWorkerDeploymentSpec } from './temporal-worker-deployment.js';
import { TemporalWorkerDeploymentStatus } from './rollout-status.js';
import { WorkerDeploymentSpec } from './worker-deployment.js';

/** A JSON Schema node, as much of it as a CRD's structural schema holds. */
export type JsonSchema = { [key: string]: unknown };

const keep = new Set([
  'type',
  'format',
  'description',
  'properties',
  'required',
  'items',
  'additionalProperties',
  'enum',
  'default',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'nullable',
  'x-kubernetes-validations',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-list-type',
  'x-kubernetes-map-type',
  'x-kubernetes-list-map-keys',
  'anyOf',
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
    } else if (key === 'anyOf') {
      out.anyOf = (value as JsonSchema[]).map(toStructural);
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

/** One kind Glidepath serves: what its CRD and the CRD reference (docs/crd-reference.md) are made of. */
export interface KindDefinition {
  kind: string;
  plural: string;
  shortNames: string[];
  scope: 'Namespaced' | 'Cluster';
  /** What the kind is: the root description `kubectl explain <kind>` shows. */
  description: string;
  /** Restricts metadata.name beyond kube-apiserver's DNS subdomain rule. */
  namePattern?: string;
  /** Structural, from the zod schema: the pod templates at `podTemplates` are ours, not yet Kubernetes' own. */
  spec: JsonSchema;
  status: JsonSchema;
  /** Where the spec holds a pod template (property names), into which the CRD embeds Kubernetes' PodTemplateSpec. */
  podTemplates: string[][];
  printerColumns: { name: string; type: string; jsonPath: string; description?: string }[];
}

function crd(o: KindDefinition, podTemplateSpec: JsonSchema) {
  const spec = structuredClone(o.spec);
  for (const path of o.podTemplates) embedPodTemplate(spec, path, podTemplateSpec);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${o.plural}.${group}` },
    spec: {
      group,
      names: {
        kind: o.kind,
        listKind: `${o.kind}List`,
        plural: o.plural,
        singular: o.kind.toLowerCase(),
        shortNames: o.shortNames,
        categories: ['glidepath'],
      },
      scope: o.scope,
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              description: o.description,
              type: 'object',
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                // At the root only name restrictions are allowed; a versioned Deployment is named after it.
                metadata: {
                  type: 'object',
                  properties: {
                    name: { type: 'string', maxLength: 63, ...(o.namePattern ? { pattern: o.namePattern } : {}) },
                  },
                },
                spec,
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
 * Replaces our PodTemplate at `path` (property names from the spec) with Kubernetes' own PodTemplateSpec schema,
 * keeping our description and CEL rules, so the pod template is checked at `kubectl apply` as a Deployment's would be.
 */
function embedPodTemplate(spec: JsonSchema, path: string[], podTemplateSpec: JsonSchema) {
  const parent = path.slice(0, -1).reduce((node, key) => (node.properties as Record<string, JsonSchema>)[key]!, spec);
  const properties = parent.properties as Record<string, JsonSchema>;
  const key = path[path.length - 1]!;
  const ours = properties[key]!;
  properties[key] = {
    // A copy for each place: the YAML then repeats it instead of using anchors.
    ...structuredClone(podTemplateSpec),
    // As zod: without `spec`, the restartPolicy rule fails to evaluate and names `spec.template`, not the field.
    required: ['spec'],
    description: ours.description,
    'x-kubernetes-validations': ours['x-kubernetes-validations'],
  };
  constrainContainers(properties[key]);
}

/** What `kubectl get` prints for either kind of resource. */
const resourceColumns = [
  { name: 'Current', type: 'string', jsonPath: '.status.currentVersion.buildID', description: 'Current build ID' },
  { name: 'Target', type: 'string', jsonPath: '.status.targetVersion.buildID', description: 'Target build ID' },
  {
    name: 'Ramp %',
    type: 'number',
    jsonPath: '.status.targetVersion.rampPercentage',
    description: 'Share of new executions on the target',
  },
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  // "Paused (42s left in step 1/3): looking at errors", the abort reason, what is retried.
  { name: 'Message', type: 'string', jsonPath: '.status.message', description: 'Where the rollout stands, in words' },
];
const connectionColumns = [
  { name: 'Host', type: 'string', jsonPath: '.spec.hostPort' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

/**
 * Every kind: ours (TemporalWorkerDeployment, TemporalConnection) and temporal-worker-controller's ≥ 1.7 kinds
 * (WorkerDeployment, Connection, ClusterConnection). Short names differ from each other and from the other
 * controller's (`wd`, `wdeployment`), which may still be installed while its users move over.
 */
export function kindDefinitions(): KindDefinition[] {
  const status = toStructural(jsonSchemaOf(TemporalWorkerDeploymentStatus));
  const connectionSpec = toStructural(jsonSchemaOf(ConnectionSpec));
  const connectionStatus = {
    description: 'Unused: Glidepath writes no status on a connection',
    type: 'object',
    'x-kubernetes-preserve-unknown-fields': true,
  };
  return [
    {
      kind: 'TemporalWorkerDeployment',
      plural: 'temporalworkerdeployments',
      shortNames: ['twd'],
      scope: 'Namespaced',
      description:
        "A worker deployment Glidepath rolls out: each build of its pod template runs as a versioned Deployment and a version in Temporal, and new executions move to it as spec.rollout says. Field for field temporal-worker-controller's TemporalWorkerDeployment (temporal.io/v1alpha1).",
      // A DNS-1123 label: Temporal refuses "." in the worker deployment name `<namespace>/<name>`.
      namePattern: dnsLabelPattern,
      spec: toStructural(jsonSchemaOf(TemporalWorkerDeploymentSpec)),
      status,
      podTemplates: [['template']],
      printerColumns: resourceColumns,
    },
    {
      kind: 'TemporalConnection',
      plural: 'temporalconnections',
      shortNames: ['tconn'],
      scope: 'Namespaced',
      description:
        "How a TemporalWorkerDeployment's workers, and Glidepath for it, reach a Temporal server. Field for field temporal-worker-controller's TemporalConnection.",
      spec: connectionSpec,
      status: connectionStatus,
      podTemplates: [],
      printerColumns: connectionColumns,
    },
    {
      kind: 'WorkerDeployment',
      plural: 'workerdeployments',
      shortNames: ['gwd'],
      scope: 'Namespaced',
      description:
        "temporal-worker-controller's kind since its v1.7: a TemporalWorkerDeployment whose versioned Deployments' settings are in spec.deployment (the top-level replicas, template, minReadySeconds and progressDeadlineSeconds are deprecated and still read). Same status and behaviour.",
      namePattern: dnsLabelPattern,
      spec: toStructural(jsonSchemaOf(WorkerDeploymentSpec)),
      status,
      podTemplates: [['deployment', 'template'], ['template']],
      printerColumns: resourceColumns,
    },
    {
      kind: 'Connection',
      plural: 'connections',
      shortNames: ['gconn'],
      scope: 'Namespaced',
      description:
        "temporal-worker-controller's connection kind since its v1.7, the default connectionRef kind of a WorkerDeployment: the same spec as a TemporalConnection.",
      spec: connectionSpec,
      status: connectionStatus,
      podTemplates: [],
      printerColumns: connectionColumns,
    },
    {
      kind: 'ClusterConnection',
      plural: 'clusterconnections',
      shortNames: ['gcconn'],
      scope: 'Cluster',
      description:
        'One connection for every namespace (connectionRef.kind: ClusterConnection), as temporal-worker-controller ≥ 1.7: the Secrets it names are read in the namespace of each resource that uses it (a pod mounts only Secrets of its own namespace). A namespaced installation cannot read it.',
      spec: connectionSpec,
      status: connectionStatus,
      podTemplates: [],
      printerColumns: connectionColumns,
    },
  ];
}

/**
 * Every CRD, from `kindDefinitions`. `podTemplateSpec` is Kubernetes' own PodTemplateSpec schema (structural, refs
 * resolved), embedded wherever a spec holds a pod template.
 */
export function renderCrds(podTemplateSpec: JsonSchema) {
  return kindDefinitions().map((k) => crd(k, podTemplateSpec));
}
