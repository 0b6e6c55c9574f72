/**
 * `TemporalWorkerDeployment`: the spec a user applies and the status Glidepath writes. Field for field
 * compatible with temporal-worker-controller's v1alpha1, so its users migrate by changing `apiVersion`.
 * The CRD YAML (`k8s-manifests/base/crds/`) is generated from these schemas.
 */
import { z } from 'zod';
import { withCel } from './cel.js';
import { TemporalWorkerDeploymentStatus } from './rollout-status.js';
import {
  KeySelector,
  ObjectMeta,
  apiVersion,
  buildIdPattern,
  dnsLabel,
  duration,
  integer,
  maxBuildIdLength,
} from './common.js';

/** How new executions move to the target version. */
export const Strategy = { Manual: 'Manual', AllAtOnce: 'AllAtOnce', Progressive: 'Progressive' } as const;
export type Strategy = (typeof Strategy)[keyof typeof Strategy];

/** What a failed gate does to the rollout. */
export const GateFailurePolicy = { Abort: 'Abort', Pause: 'Pause' } as const;
export type GateFailurePolicy = (typeof GateFailurePolicy)[keyof typeof GateFailurePolicy];

export const MaxSteps = 20;

export const GateInputSource = withCel(
  z
    .object({
      configMapKeyRef: KeySelector.optional().describe('A key of a ConfigMap in the same namespace'),
      secretKeyRef: KeySelector.optional().describe('A key of a Secret in the same namespace'),
    })
    .refine((s) => (s.configMapKeyRef ? 1 : 0) + (s.secretKeyRef ? 1 : 0) === 1, {
      message: 'exactly one of configMapKeyRef or secretKeyRef must be set',
    }),
  {
    rule: '(has(self.configMapKeyRef) ? 1 : 0) + (has(self.secretKeyRef) ? 1 : 0) == 1',
    message: 'exactly one of configMapKeyRef or secretKeyRef must be set',
  },
);

/** A workflow that must complete on the target version (pinned to it) before it gets more traffic. */
export const Gate = withCel(
  z
    .object({
      workflowType: z.string().min(1).describe('The workflow type to run on the target version'),
      taskQueue: z
        .string()
        .min(1)
        .optional()
        .describe(
          "The task queue the gate workflow starts on (default: the first workflow task queue the target's workers poll)",
        ),
      input: z
        .record(z.string(), z.unknown())
        .meta({ 'x-kubernetes-preserve-unknown-fields': true })
        .optional()
        .describe("A JSON object passed as the gate workflow's first argument"),
      inputFrom: GateInputSource.optional().describe(
        "A ConfigMap or Secret key holding JSON passed as the first argument, read when the gate starts (it never enters the RolloutWorkflow's history)",
      ),
      timeout: duration({ allowZero: false })
        .optional()
        .describe('How long the gate workflow may run: its execution timeout (default 10m)'),
    })
    .refine((g) => !(g.input !== undefined && g.inputFrom), {
      message: 'only one of input or inputFrom may be set',
      path: ['inputFrom'],
    }),
  {
    rule: '!(has(self.input) && has(self.inputFrom))',
    message: 'only one of input or inputFrom may be set',
    fieldPath: '.inputFrom',
  },
);
export type Gate = z.infer<typeof Gate>;

export const RolloutStep = z
  .object({
    rampPercentage: integer(z.int().min(1).max(99)).describe(
      'Percentage of new executions routed to the target during this step, 1-99',
    ),
    pauseDuration: duration({ allowZero: false })
      .optional()
      .describe(
        'How long to hold this step (paused time does not count); without it the step waits for promote (temporal-worker-controller requires it)',
      ),
    gate: Gate.optional().describe('A gate run at the end of this step, before the next'),
  })
  .describe('One step of a Progressive rollout');
export type RolloutStep = z.infer<typeof RolloutStep>;

const strictlyIncreasing = (steps: RolloutStep[]) =>
  steps.every((s, i) => i === 0 || s.rampPercentage > steps[i - 1]!.rampPercentage);

/**
 * Analysis from Temporal's own visibility: the target's failure rate (closed executions Failed / TimedOut on
 * its version) against a limit and against the current version's rate over the same window.
 */
export const Analysis = z.object({
  maxFailurePercentage: z
    .number()
    .min(0)
    .max(100)
    .describe('Highest share of failed (Failed / TimedOut) closed executions on the target, 0-100'),
  maxFailureRatioToCurrent: z
    .number()
    .gt(0)
    .optional()
    .describe(
      "At most this many times the current version's failure rate (e.g. 2); checked when the current version has failures",
    ),
  minExecutions: integer(z.int32().min(1))
    .default(10)
    .describe('Fewer closed executions on the target (since the step began) make the analysis inconclusive'),
  maxWait: duration({ allowZero: true })
    .default('10m')
    .describe('How much longer a step waits for minExecutions before following inconclusivePolicy'),
  inconclusivePolicy: z
    .enum(['Pass', 'Abort', 'Pause'])
    .default('Pause')
    .describe('What an analysis without enough executions does after maxWait: Pass, Abort or Pause'),
  workflowTypes: z
    .array(z.string().min(1))
    .optional()
    .describe('Count only executions of these workflow types (default: all)'),
  window: duration({ allowZero: false })
    .optional()
    .describe('AllAtOnce / Manual: analyse the target for this long before promotion (Progressive analyses each step)'),
});
export type Analysis = z.infer<typeof Analysis>;

export const Rollout = withCel(
  z
    .object({
      strategy: z
        .enum(['Manual', 'AllAtOnce', 'Progressive'])
        .describe(
          'How new executions move to the target once its workers poll and its gate passed: Manual (waits for promote), AllAtOnce (made current at once, after analysis.window if set) or Progressive (through steps)',
        ),
      steps: withCel(
        z
          .array(RolloutStep)
          .max(MaxSteps)
          .refine(strictlyIncreasing, { message: 'rampPercentage must strictly increase from step to step' }),
        {
          rule: 'self.map(s, s.rampPercentage).isSorted() && self.all(a, self.exists_one(b, b.rampPercentage == a.rampPercentage))',
          message: 'rampPercentage must strictly increase from step to step',
        },
      )
        .optional()
        .describe(
          `The ramp steps of a Progressive rollout (at least one then; at most ${MaxSteps}), rampPercentage strictly increasing`,
        ),
      gate: Gate.optional().describe(
        'A workflow run once on the target version, pinned to it, before any new executions are routed to it',
      ),
      gateFailurePolicy: z
        .enum(['Abort', 'Pause'])
        .default('Abort')
        .describe(
          'What a failed gate or analysis does: Abort (the target gets no new executions and is sunset) or Pause (holds the rollout: after a gate, resume runs it again and promote skips it; after an analysis, resume or promote goes on and retry analyses again)',
        ),
      paused: z
        .boolean()
        .optional()
        .describe(
          "true holds the rollout where it is, as the pause control does (a running step's pause stops counting), until set back to false",
        ),
      rollbackWindow: duration({ allowZero: true })
        .default('1h')
        .describe(
          'A spec back on a build that was current this recently, and still runs, switches back at once ("0s" turns it off)',
        ),
      analysis: Analysis.optional().describe(
        "Compares the target's failure rate, from Temporal's visibility, with a limit and with the current version's: at the end of each Progressive step, or over window",
      ),
      onAbort: z
        .object({
          movePinned: z
            .boolean()
            .default(false)
            .describe('Move executions pinned to the aborted (or rolled back) build to the current version'),
        })
        .optional()
        .describe('What an abort, a failed gate or analysis, or a rollback does beside clearing the ramp'),
    })
    .refine((r) => r.strategy !== 'Progressive' || (r.steps?.length ?? 0) > 0, {
      message: 'a Progressive rollout needs at least one step',
      path: ['steps'],
    }),
  {
    rule: "self.strategy != 'Progressive' || (has(self.steps) && size(self.steps) > 0)",
    message: 'a Progressive rollout needs at least one step',
    fieldPath: '.steps',
  },
);
export type Rollout = z.infer<typeof Rollout>;

export const Sunset = z
  .object({
    scaledownDelay: duration({ allowZero: true })
      .default('1h')
      .describe('How long after a version is drained its Deployment is scaled to 0'),
    deleteDelay: duration({ allowZero: true })
      .default('24h')
      .describe(
        'How long after a version is drained its Deployment and its version in Temporal are deleted (never before it is scaled to 0)',
      ),
    drainBeforeDelete: duration({ allowZero: false })
      .optional()
      .describe(
        'On deletion of the resource: new work goes to unversioned workers, then wait up to this long for pinned executions to finish before the versions are deleted (without it they are deleted at once)',
      ),
    maxDrainDuration: duration({ allowZero: false })
      .optional()
      .describe('How long a sunset version may drain before onMaxDrain acts on the executions still pinned to it'),
    onMaxDrain: withCel(
      z
        .object({
          action: z
            .enum(['Wait', 'Cancel', 'Terminate', 'Signal'])
            .default('Wait')
            .describe(
              'What is done, once, to the executions still pinned: Wait (nothing), Cancel, Terminate, or Signal (sends signalName)',
            ),
          signalName: z
            .string()
            .min(1)
            .optional()
            .describe('The signal sent by action Signal (e.g. one the workflow answers with ContinueAsNew)'),
        })
        .refine((a) => a.action !== 'Signal' || !!a.signalName, {
          message: 'action Signal needs signalName',
          path: ['signalName'],
        }),
      {
        rule: "self.action != 'Signal' || has(self.signalName)",
        message: 'action Signal needs signalName',
        fieldPath: '.signalName',
      },
    )
      .optional()
      .describe('What happens to executions still pinned to a version after maxDrainDuration'),
  })
  .describe('What happens to a version once it is no longer current or targeted: drained, scaled to 0, deleted');

/** The kinds a connectionRef may name; the default depends on the resource's kind (api/kinds.ts). */
export const ConnectionRefKind = z.enum(['TemporalConnection', 'Connection', 'ClusterConnection']);
export type ConnectionRefKind = z.infer<typeof ConnectionRefKind>;

export const ConnectionRef = z
  .object({
    name: dnsLabel.describe("The connection's name"),
    // No default here: it differs per resource kind, and the apiserver's defaults must equal zod's.
    kind: ConnectionRefKind.optional().describe(
      'TemporalConnection (the default for a TemporalWorkerDeployment), Connection (the default for a WorkerDeployment) or ClusterConnection; as temporal-worker-controller ≥ 1.7',
    ),
  })
  .describe('A TemporalConnection or Connection in the same namespace, or a ClusterConnection');
export type ConnectionRef = z.infer<typeof ConnectionRef>;

export const WorkerOptions = z
  .object({
    connectionRef: ConnectionRef,
    temporalNamespace: z
      .string()
      .min(1)
      .describe('The Temporal namespace the workers poll (TEMPORAL_NAMESPACE in every pod)'),
    // Refused when a label value or Temporal cannot hold it (pattern and maxLength in the CRD too), never rewritten.
    unsafeCustomBuildID: z
      .string()
      .min(1)
      .max(maxBuildIdLength)
      .regex(
        new RegExp(buildIdPattern),
        'must be a Kubernetes label value: letters, digits, "-", "_" and ".", starting and ending alphanumeric',
      )
      .optional()
      .describe(
        "Overrides the computed build ID, used as it is (a label value of at most 63 characters); a new template under the same ID updates that version's Deployment in place",
      ),
  })
  .describe(
    "How the workers reach Temporal: every pod gets TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_DEPLOYMENT_NAME, TEMPORAL_WORKER_BUILD_ID and the connection's TLS settings",
  );

/**
 * The pod template. Glidepath reads only what it renders; kube-apiserver checks the whole of it against
 * Kubernetes' own PodTemplateSpec schema (embedded in the CRD by the generator).
 */
export const PodTemplate = withCel(
  z.looseObject({
    metadata: z
      .looseObject({
        labels: z.record(z.string(), z.string()).optional(),
        annotations: z.record(z.string(), z.string()).optional(),
      })
      .optional(),
    spec: z
      .looseObject({
        containers: z
          .array(z.looseObject({ name: dnsLabel, image: z.string().optional() }))
          .min(1)
          .refine((cs) => new Set(cs.map((c) => c.name)).size === cs.length, {
            message: 'container names must be unique',
          }),
        restartPolicy: z.string().optional(),
      })
      .refine((s) => s.restartPolicy === undefined || s.restartPolicy === 'Always', {
        message: 'only "Always" is allowed',
        path: ['restartPolicy'],
      }),
  }),
  {
    rule: "!has(self.spec.restartPolicy) || self.spec.restartPolicy == 'Always'",
    message: 'only "Always" is allowed',
    fieldPath: '.spec.restartPolicy',
  },
).describe(
  "The pods of each version: a PodTemplateSpec, checked as a Deployment's (at least one container, unique DNS-1123 container names); restartPolicy must be Always",
);
export type PodTemplate = z.infer<typeof PodTemplate>;

/**
 * The versioned Deployments' own settings, without defaults: a TemporalWorkerDeployment sets them at the top of
 * its spec (defaulted below), a WorkerDeployment in `spec.deployment` (api/worker-deployment.ts).
 */
export const DeploymentFields = {
  replicas: () => integer(z.int32().min(0)),
  minReadySeconds: () => integer(z.int32().min(0)),
  progressDeadlineSeconds: () => integer(z.int32().min(1)),
} as const;
export const DeploymentFieldDescriptions = {
  replicas: 'Pods of each version that gets traffic',
  minReadySeconds: 'Seconds a pod must be ready to count as available',
  progressDeadlineSeconds: 'Seconds a new version may take to become available before the rollout fails',
} as const;
/** What a spec without them gets. */
export const DeploymentDefaults = { replicas: 1, minReadySeconds: 0, progressDeadlineSeconds: 600 } as const;
export const SunsetDefaults = { scaledownDelay: '1h', deleteDelay: '24h' } as const;

export const TemporalWorkerDeploymentSpec = withCel(
  z
    .object({
      replicas: DeploymentFields.replicas()
        .default(DeploymentDefaults.replicas)
        .describe(DeploymentFieldDescriptions.replicas),
      template: PodTemplate,
      minReadySeconds: DeploymentFields.minReadySeconds()
        .default(DeploymentDefaults.minReadySeconds)
        .describe(DeploymentFieldDescriptions.minReadySeconds),
      progressDeadlineSeconds: DeploymentFields.progressDeadlineSeconds()
        .default(DeploymentDefaults.progressDeadlineSeconds)
        .describe(DeploymentFieldDescriptions.progressDeadlineSeconds),
      rollout: Rollout.describe('How new executions move to a new build'),
      sunset: Sunset.default(SunsetDefaults),
      workerOptions: WorkerOptions,
    })
    .describe('What to run, and how to roll a new build of it out')
    .refine((s) => s.progressDeadlineSeconds > s.minReadySeconds, {
      message: 'must be greater than minReadySeconds',
      path: ['progressDeadlineSeconds'],
    }),
  {
    rule: '!has(self.progressDeadlineSeconds) || !has(self.minReadySeconds) || self.progressDeadlineSeconds > self.minReadySeconds',
    message: 'must be greater than minReadySeconds',
    fieldPath: '.progressDeadlineSeconds',
  },
);
export type TemporalWorkerDeploymentSpec = z.infer<typeof TemporalWorkerDeploymentSpec>;
/** The spec as a user writes it, before defaults. */
export type TemporalWorkerDeploymentSpecInput = z.input<typeof TemporalWorkerDeploymentSpec>;

export const TemporalWorkerDeployment = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('TemporalWorkerDeployment'),
  // A DNS-1123 label (the CRD says so too): versioned Deployment names start with it, and Temporal refuses a
  // worker deployment name (`<namespace>/<name>`) with "." in it, which a DNS subdomain may have.
  metadata: ObjectMeta.extend({ name: dnsLabel }),
  spec: TemporalWorkerDeploymentSpec,
  status: TemporalWorkerDeploymentStatus.optional(),
});
export type TemporalWorkerDeployment = z.infer<typeof TemporalWorkerDeployment>;
