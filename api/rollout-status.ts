/** The status Glidepath writes on a TemporalWorkerDeployment (a WorkerDeployment's too): phase, reason, versions, conditions. */
import { z } from 'zod';
import { Condition } from './common.js';

/** Where a rollout is, for `kubectl get` and search attributes. */
export const Phase = {
  Pending: 'Pending',
  Deploying: 'Deploying',
  WaitingForPollers: 'WaitingForPollers',
  Gating: 'Gating',
  Ramping: 'Ramping',
  AwaitingPromotion: 'AwaitingPromotion',
  Paused: 'Paused',
  Ready: 'Ready',
  Aborted: 'Aborted',
  Failed: 'Failed',
  InvalidSpec: 'InvalidSpec',
  Deleting: 'Deleting',
} as const;
export type Phase = (typeof Phase)[keyof typeof Phase];

/** The small, stable vocabulary of condition reasons. */
export const Reason = {
  RolloutComplete: 'RolloutComplete',
  Deploying: 'Deploying',
  WaitingForPollers: 'WaitingForPollers',
  Gating: 'Gating',
  Ramping: 'Ramping',
  AwaitingPromotion: 'AwaitingPromotion',
  Paused: 'Paused',
  Aborted: 'Aborted',
  /** Routing went back to a build that was current (spec back on it, or the rollback control). */
  RolledBack: 'RolledBack',
  /** The target's failure rate is over the analysis' limits. */
  AnalysisFailed: 'AnalysisFailed',
  /** Too few executions on the target to analyse within maxWait. */
  AnalysisInconclusive: 'AnalysisInconclusive',
  /** Someone else holds the worker deployment's manager identity: the rollout waits for it. */
  ManagerIdentityHeld: 'ManagerIdentityHeld',
  GateFailed: 'GateFailed',
  ProgressDeadlineExceeded: 'ProgressDeadlineExceeded',
  VersionLimitReached: 'VersionLimitReached',
  /** The version's workers did not poll Temporal within the progress deadline. */
  NoPollers: 'NoPollers',
  /** A permanent error (refused by Kubernetes or Temporal): waits for a new spec or a control. */
  Blocked: 'Blocked',
  ConnectionNotFound: 'ConnectionNotFound',
  InvalidSpec: 'InvalidSpec',
  Deleting: 'Deleting',
} as const;
export type Reason = (typeof Reason)[keyof typeof Reason];

/** Status of a version in Temporal, as TWC names it. */
export const VersionStatus = z.enum([
  'NotRegistered',
  'Inactive',
  'Ramping',
  'Current',
  'Draining',
  'Drained',
  'Unknown',
]);
export type VersionStatus = z.infer<typeof VersionStatus>;

const VersionRef = {
  buildID: z.string().describe("The version's build ID"),
  deploymentName: z.string().optional().describe('The versioned Deployment'),
  status: VersionStatus.optional().describe("The version's status in Temporal, as temporal-worker-controller names it"),
};

/** `Condition` with what each field says in a Glidepath status. */
const RolloutCondition = Condition.extend({
  type: z
    .string()
    .describe(
      'Ready (True while the phase is Ready) or Progressing (True while a rollout or deletion is under way: Pending, Deploying, WaitingForPollers, Gating, Ramping, AwaitingPromotion, Deleting)',
    ),
  reason: z.string().describe(`Why, from a small stable set: ${Object.values(Reason).join(', ')}`),
  message: z.string().optional().describe('What is happening, in words'),
  lastTransitionTime: z.string().describe("When the rollout's phase, reason or message last changed (RFC 3339)"),
});

export const TemporalWorkerDeploymentStatus = z
  .object({
    observedGeneration: z
      .int()
      .optional()
      .describe(
        'The generation of the spec the status is for: the latest one taken (also one that changes nothing) or refused',
      ),
    phase: z
      .enum(Object.values(Phase) as [Phase, ...Phase[]])
      .optional()
      .describe('Where the rollout is'),
    conditions: z
      .array(RolloutCondition)
      .optional()
      .describe('Ready and Progressing, with the reason and message of the phase'),
    currentVersion: z
      .object({ ...VersionRef, since: z.string().optional().describe('When it became current (RFC 3339)') })
      .optional()
      .describe('The version Temporal routes new executions to (all but the ramp)'),
    targetVersion: z
      .object({
        ...VersionRef,
        rampPercentage: z
          .number()
          .min(0)
          .max(100)
          .optional()
          .describe('Percentage of new executions routed to it, 0-100'),
        stepIndex: z.int().min(0).optional().describe('Index of the Progressive step in force, from 0'),
        rampingSince: z.string().optional().describe('When it first got a ramp (RFC 3339)'),
      })
      .optional()
      .describe('The version being rolled out'),
    deprecatedVersions: z
      .array(
        z.object({
          ...VersionRef,
          deprecatedSince: z.string().optional().describe('When it stopped being current or targeted (RFC 3339)'),
          drainedSince: z.string().optional().describe('When Temporal was seen to report it drained (RFC 3339)'),
        }),
      )
      .optional()
      .describe('Versions being sunset: drained, then scaled to 0 and deleted'),
    lastAbortReason: z
      .string()
      .optional()
      .describe(
        'Why the rollout of the build now aborted or rolled back was stopped (an abort, a rollback, a failed gate or analysis)',
      ),
    lastAnalysis: z.string().optional().describe('The latest analysis result, in words'),
    routing: z
      .object({
        currentBuildID: z.string().describe('The build Temporal routes to'),
        specBuildID: z.string().describe('The build the spec asks for'),
        reason: z.string().optional().describe('Why, and until when'),
      })
      .optional()
      .describe('Set while Temporal routes to another build than the spec asks for (after the rollback control)'),
    rolloutWorkflow: z
      .object({
        workflowId: z.string().describe('Its workflow ID: `glidepath/<installation>/<namespace>/<name>`'),
        temporalNamespace: z
          .string()
          .describe("The Temporal namespace it runs in (the controller's, not the workers')"),
      })
      .optional()
      .describe(
        "The resource's RolloutWorkflow and the Temporal namespace it runs in (where the CLI and `temporal workflow` find it)",
      ),
    message: z
      .string()
      .optional()
      .describe('Where the rollout stands, in words (with what is retried and what blocks a sunset)'),
  })
  .describe(
    "What Glidepath observes, written by the resource's RolloutWorkflow (and by the watcher for a spec it cannot take)",
  );
export type TemporalWorkerDeploymentStatus = z.infer<typeof TemporalWorkerDeploymentStatus>;
