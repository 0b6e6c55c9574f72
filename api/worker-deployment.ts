/**
 * `WorkerDeployment`: temporal-worker-controller's kind since its v1.7, served beside `TemporalWorkerDeployment`.
 * Its spec is ours plus `spec.deployment`, a DeploymentSpec-shaped object holding the versioned Deployments' own
 * settings; the top-level `replicas`, `template`, `minReadySeconds` and `progressDeadlineSeconds` are deprecated
 * and still read. `spec.deployment` wins; both given with different values are refused, naming both fields.
 *
 * The watcher turns a WorkerDeployment into the one spec the workflow gets (`normalizeWorkerDeploymentSpec`): the
 * workflow never knows which kind it rolls out.
 */
import { z } from 'zod';
import { withCel, type CelRule } from './cel.js';
import { ObjectMeta, apiVersion, dnsLabel, integer } from './common.js';
import {
  DeploymentDefaults,
  DeploymentFieldDescriptions,
  DeploymentFields,
  PodTemplate,
  Rollout,
  Sunset,
  SunsetDefaults,
  WorkerOptions,
  type TemporalWorkerDeploymentSpec,
} from './temporal-worker-deployment.js';
import { TemporalWorkerDeploymentStatus } from './rollout-status.js';

const deprecated = (field: string) => `deprecated: use spec.deployment.${field}`;

/** `maxSurge` / `maxUnavailable`: a count or a percentage, as a Deployment takes them. */
const countOrPercent = 'must be a count or a percentage such as "25%"';
const IntOrPercent = withCel(
  z
    .union([z.int(), z.string()])
    .refine((v) => (typeof v === 'number' ? v >= 0 : /^[0-9]+%$/.test(v)), countOrPercent)
    .meta({ 'x-kubernetes-int-or-string': true }),
  // The bounds live in CEL: an int-or-string schema takes no constraints of its own.
  { rule: "type(self) == int ? self >= 0 : self.matches('^[0-9]+%$')", message: countOrPercent },
);

/** How a version's Deployment replaces its pods when its template changes in place (a custom build ID, a new connection). */
export const DeploymentStrategy = z
  .object({
    type: z.enum(['RollingUpdate', 'Recreate']).optional().describe('RollingUpdate (the default) or Recreate'),
    rollingUpdate: z
      .object({
        maxSurge: IntOrPercent.optional().describe(
          'Pods above the desired count during an update: a count or a percentage such as "25%"',
        ),
        maxUnavailable: IntOrPercent.optional().describe(
          'Pods that may be unavailable during an update: a count or a percentage such as "25%"',
        ),
      })
      .optional()
      .describe("How a RollingUpdate replaces pods, as a Deployment's"),
  })
  .describe(
    'How each versioned Deployment replaces its pods when its template changes in place (a custom build ID, a new connection)',
  );
export type DeploymentStrategy = z.infer<typeof DeploymentStrategy>;

/**
 * `spec.deployment`: the part of a DeploymentSpec Glidepath honours for every versioned Deployment. Not `selector`
 * (Glidepath owns it: immutable, per build) nor `paused` (a paused Deployment never becomes available).
 */
export const DeploymentSpec = z
  .object({
    replicas: DeploymentFields.replicas()
      .optional()
      .describe(
        `${DeploymentFieldDescriptions.replicas} (default ${DeploymentDefaults.replicas}; temporal-worker-controller leaves an omitted count to an autoscaler, Glidepath does not)`,
      ),
    template: PodTemplate.optional().describe(
      `${PodTemplate.description}; required here or in the deprecated spec.template`,
    ),
    minReadySeconds: DeploymentFields.minReadySeconds()
      .optional()
      .describe(`${DeploymentFieldDescriptions.minReadySeconds} (default 0)`),
    progressDeadlineSeconds: DeploymentFields.progressDeadlineSeconds()
      .optional()
      .describe(
        `${DeploymentFieldDescriptions.progressDeadlineSeconds} (default ${DeploymentDefaults.progressDeadlineSeconds})`,
      ),
    revisionHistoryLimit: integer(z.int32().min(0))
      .optional()
      .describe("Old ReplicaSets each versioned Deployment keeps (default: Kubernetes' 10)"),
    strategy: DeploymentStrategy.optional(),
  })
  .describe(
    "The versioned Deployments' settings, as temporal-worker-controller ≥ 1.7: a DeploymentSpec without selector (Glidepath's, per build) and paused; wins over the deprecated top-level fields",
  );
export type DeploymentSpec = z.infer<typeof DeploymentSpec>;

/** The fields a WorkerDeployment may give in two places: `spec.<field>` (deprecated) and `spec.deployment.<field>`. */
export const movedFields = ['replicas', 'template', 'minReadySeconds', 'progressDeadlineSeconds'] as const;
type MovedField = (typeof movedFields)[number];

interface Problem {
  path: (string | number)[];
  message: string;
}

const differ = (field: MovedField) =>
  `spec.${field} (deprecated) and spec.deployment.${field} differ: set only spec.deployment.${field}`;
const templateRequired = 'a pod template is required: set spec.deployment.template (or the deprecated spec.template)';
const deadlineAfterReady = 'must be greater than minReadySeconds';
const readyBeforeDeadline = `must be less than progressDeadlineSeconds (${DeploymentDefaults.progressDeadlineSeconds} when not set)`;

/** Deep equality of JSON values, key order ignored (as CEL's `==` compares maps). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (!a || !b || typeof a !== 'object' || typeof b !== 'object') return false;
  const [ka, kb] = [
    Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined),
    Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined),
  ];
  return (
    ka.length === kb.length &&
    ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
  );
}

type MovedFieldsSpec = Partial<Record<MovedField, unknown>> & { deployment?: Partial<Record<MovedField, unknown>> };

/**
 * What is wrong with where a WorkerDeployment puts its Deployment fields: a template nowhere, a field given in both
 * places with different values, or the progress deadline in force not after minReadySeconds in force. The CEL
 * rules of the CRD say the same (`movedFieldRules`), so kube-apiserver and the watcher refuse alike — but for two
 * different templates, which only the watcher can compare (InvalidSpec).
 */
export function movedFieldProblems(spec: MovedFieldsSpec): Problem[] {
  const problems: Problem[] = [];
  const d = spec.deployment ?? {};
  if (spec.template === undefined && d.template === undefined)
    problems.push({ path: ['deployment', 'template'], message: templateRequired });
  for (const field of movedFields) {
    if (spec[field] !== undefined && d[field] !== undefined && !sameJson(spec[field], d[field]))
      problems.push({ path: [field], message: differ(field) });
  }
  const inForce = (f: 'progressDeadlineSeconds' | 'minReadySeconds') => (d[f] ?? spec[f]) as number | undefined;
  const deadline = inForce('progressDeadlineSeconds');
  const ready = inForce('minReadySeconds') ?? DeploymentDefaults.minReadySeconds;
  if ((deadline ?? DeploymentDefaults.progressDeadlineSeconds) > ready) return problems;
  if (deadline !== undefined)
    problems.push({
      path:
        d.progressDeadlineSeconds !== undefined
          ? ['deployment', 'progressDeadlineSeconds']
          : ['progressDeadlineSeconds'],
      message: deadlineAfterReady,
    });
  else
    problems.push({
      path: d.minReadySeconds !== undefined ? ['deployment', 'minReadySeconds'] : ['minReadySeconds'],
      message: readyBeforeDeadline,
    });
  return problems;
}

/** `movedFieldProblems` as CEL rules on the spec. */
function movedFieldRules(): CelRule[] {
  const inDeployment = (f: string) => `(has(self.deployment) && has(self.deployment.${f}))`;
  const inForce = (f: string, fallback: number) =>
    `(${inDeployment(f)} ? self.deployment.${f} : (has(self.${f}) ? self.${f} : ${fallback}))`;
  const ok = `${inForce('progressDeadlineSeconds', DeploymentDefaults.progressDeadlineSeconds)} > ${inForce('minReadySeconds', DeploymentDefaults.minReadySeconds)}`;
  const anyDeadline = `(${inDeployment('progressDeadlineSeconds')} || has(self.progressDeadlineSeconds))`;
  return [
    {
      rule: `has(self.template) || ${inDeployment('template')}`,
      message: templateRequired,
      fieldPath: '.deployment.template',
    },
    // Not the template: CEL cannot compare two objects of different schemas; the watcher refuses that one (InvalidSpec).
    ...movedFields
      .filter((f) => f !== 'template')
      .map((f) => ({
        rule: `!has(self.${f}) || !${inDeployment(f)} || self.${f} == self.deployment.${f}`,
        message: differ(f),
        fieldPath: `.${f}`,
      })),
    {
      rule: `!${inDeployment('progressDeadlineSeconds')} || ${ok}`,
      message: deadlineAfterReady,
      fieldPath: '.deployment.progressDeadlineSeconds',
    },
    {
      rule: `${inDeployment('progressDeadlineSeconds')} || !has(self.progressDeadlineSeconds) || ${ok}`,
      message: deadlineAfterReady,
      fieldPath: '.progressDeadlineSeconds',
    },
    {
      rule: `${anyDeadline} || !${inDeployment('minReadySeconds')} || ${ok}`,
      message: readyBeforeDeadline,
      fieldPath: '.deployment.minReadySeconds',
    },
    {
      rule: `${anyDeadline} || ${inDeployment('minReadySeconds')} || !has(self.minReadySeconds) || ${ok}`,
      message: readyBeforeDeadline,
      fieldPath: '.minReadySeconds',
    },
  ];
}

export const WorkerDeploymentSpec = withCel(
  z
    .object({
      deployment: DeploymentSpec.optional(),
      replicas: DeploymentFields.replicas().optional().describe(deprecated('replicas')),
      template: PodTemplate.optional().describe(`${PodTemplate.description}; ${deprecated('template')}`),
      minReadySeconds: DeploymentFields.minReadySeconds().optional().describe(deprecated('minReadySeconds')),
      progressDeadlineSeconds: DeploymentFields.progressDeadlineSeconds()
        .optional()
        .describe(deprecated('progressDeadlineSeconds')),
      rollout: Rollout.describe('How new executions move to a new build'),
      sunset: Sunset.default(SunsetDefaults),
      workerOptions: WorkerOptions,
    })
    .describe(
      "What to run, and how to roll a new build of it out: a TemporalWorkerDeployment's spec with the Deployment settings in spec.deployment",
    )
    .superRefine((spec, ctx) => {
      for (const p of movedFieldProblems(spec)) ctx.addIssue({ code: 'custom', path: p.path, message: p.message });
    }),
  ...movedFieldRules(),
);
export type WorkerDeploymentSpec = z.infer<typeof WorkerDeploymentSpec>;
export type WorkerDeploymentSpecInput = z.input<typeof WorkerDeploymentSpec>;

/**
 * The one spec the workflow rolls out, whichever kind the resource is: a TemporalWorkerDeployment's, or a
 * WorkerDeployment's normalized into it. The extra Deployment settings only a WorkerDeployment can give are optional.
 */
export type NormalizedSpec = TemporalWorkerDeploymentSpec & Pick<DeploymentSpec, 'revisionHistoryLimit' | 'strategy'>;

/**
 * A WorkerDeployment's spec (parsed: consistent, with a template) as the spec the workflow gets: `spec.deployment`
 * wins over the deprecated top-level fields (they agree when both are given), then the defaults of a
 * TemporalWorkerDeployment apply; `revisionHistoryLimit` and `strategy` come along when given.
 * @example normalizeWorkerDeploymentSpec({ deployment: { replicas: 3, template }, rollout, sunset, workerOptions }).replicas === 3
 * @throws Error naming the field when the spec has no template (a spec that did not pass `WorkerDeploymentSpec`).
 */
export function normalizeWorkerDeploymentSpec(spec: WorkerDeploymentSpec): NormalizedSpec {
  const { deployment: d = {}, replicas, template, minReadySeconds, progressDeadlineSeconds, ...rest } = spec;
  const podTemplate = d.template ?? template;
  if (!podTemplate) throw new Error(`spec.deployment.template: ${templateRequired}`);
  return {
    ...rest,
    replicas: d.replicas ?? replicas ?? DeploymentDefaults.replicas,
    template: podTemplate,
    minReadySeconds: d.minReadySeconds ?? minReadySeconds ?? DeploymentDefaults.minReadySeconds,
    progressDeadlineSeconds:
      d.progressDeadlineSeconds ?? progressDeadlineSeconds ?? DeploymentDefaults.progressDeadlineSeconds,
    ...(d.revisionHistoryLimit !== undefined ? { revisionHistoryLimit: d.revisionHistoryLimit } : {}),
    ...(d.strategy !== undefined ? { strategy: d.strategy } : {}),
  };
}

export const WorkerDeployment = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('WorkerDeployment'),
  // A DNS-1123 label, as a TemporalWorkerDeployment's: versioned Deployments are named after it.
  metadata: ObjectMeta.extend({ name: dnsLabel }),
  spec: WorkerDeploymentSpec,
  status: TemporalWorkerDeploymentStatus.optional(),
});
export type WorkerDeployment = z.infer<typeof WorkerDeployment>;
