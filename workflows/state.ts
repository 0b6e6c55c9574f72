/**
 * What RolloutWorkflow knows, carried across ContinueAsNew. Plain data: decisions are pure functions of it.
 */
import type { DeploymentObservation, Desired, Owner } from '../api/resource.js';
import type { Timings } from '../api/timings.js';
import type { TemporalConnectionSpec } from '../api/temporal-connection.js';
import type { PodTemplate, RolloutStep, Strategy } from '../api/temporal-worker-deployment.js';
import type { Phase, Reason, VersionStatus } from '../api/rollout-status.js';
import type { MeasuredRollout } from './metrics.js';

/**
 * Where a target's rollout is. Each stage is done before the next begins, and a run that continued as new resumes
 * in the stage it was in:
 * - `deploying`: its Deployment is applied and there is room for it in Temporal;
 * - `registering`: the Deployment becomes available and its workers poll Temporal;
 * - `gating`: the rollout gate runs;
 * - `analysing`: AllAtOnce's or Manual's analysis window before promotion;
 * - `routing`: the ramp steps (`step`) or the wait for promote, then current.
 */
export type Stage = 'deploying' | 'registering' | 'gating' | 'analysing' | 'routing';

/** The Progressive step in force (or the analysis window before promotion): how long it is held, what it passed. */
export interface StepProgress {
  /** Index of the Progressive step; absent for the analysis window. */
  index?: number;
  /** When it began (its analysis counts executions closed since). */
  startedAt: string;
  /** Time it has been held so far, paused time excluded (carried across ContinueAsNew). */
  heldMs: number;
  /** While its pause is counting: since when, on top of `heldMs` (read-only: the CLI's time left). */
  heldSince?: string;
  /** Its pause elapsed and its gate passed, or it was promoted. */
  done: boolean;
  /** It passed its analysis (not run again after ContinueAsNew). */
  analysed: boolean;
  /** Time its analysis has waited for enough executions (carried across ContinueAsNew). */
  analysisWaitMs: number;
}

/** A step just begun at `at`. */
export const stepAt = (at: string, index?: number): StepProgress => ({
  ...(index !== undefined ? { index } : {}),
  startedAt: at,
  heldMs: 0,
  done: false,
  analysed: false,
  analysisWaitMs: 0,
});

/** The version being rolled out. */
export interface Target {
  buildId: string;
  generation: number;
  stage: Stage;
  /** The live ramp, once ramping, and since when it first ramped. */
  rampPercentage?: number;
  rampingSince?: string;
  /** The step in force, in the `analysing` and `routing` stages. */
  step?: StepProgress;
  /** Time spent waiting for the Deployment to be available, paused time excluded. */
  availableWaitMs?: number;
  /** Its workers poll Temporal: their task queues, and whether unversioned workers poll them too. */
  registration?: { taskQueues: string[]; unversionedPollers: boolean; workflowTaskQueues?: string[] };
  /** The worker deployment's manager identity was claimed for this rollout. */
  managerClaimed?: boolean;
  /** `retry` after a paused analysis: analyse again over a fresh window. */
  reanalyse?: boolean;
  /** Promoted to current (Manual's go-ahead, or `promote {full}`): kept until it is current, across ContinueAsNew. */
  promotedFully?: boolean;
  /** The Temporal it is deployed to (set when its rollout starts). */
  place?: TemporalPlace;
  /** A build that was current moments ago and still runs: made current at once, no gate, no steps. */
  rollback?: { reason: string; who: string };
  /** The workflow ID of each gate's run (by label): kept until a person asks a failed gate to run again. */
  gateRunIds?: Record<string, string>;
  /** The definition of the rollout gate that passed: a new generation with another gate runs it again. */
  gateKey?: string;
  /**
   * What let it past the rollout gate: the passed run's workflow ID, or `promoted`. The routing activities read that
   * run themselves before its first traffic.
   */
  gatePassedBy?: string;
  /** The same for the latest step's gate it passed (the routing changes after that step read it). */
  stepGatePassedBy?: string;
}

/** Where in Temporal a version lives: drainage is read there, whatever the spec says now. */
export interface TemporalPlace {
  connection: TemporalConnectionSpec;
  temporalNamespace: string;
}

/** A version no longer current or targeted, on its way out. */
export interface SunsetVersion {
  buildId: string;
  deprecatedSince: string;
  status?: VersionStatus;
  drainedSince?: string;
  scaledDown?: boolean;
  /** The Temporal it lived on when it was retired. */
  place?: TemporalPlace;
  /** A permanent error stopped its sunset; a new spec tries again. */
  blocked?: string;
  /** When it stopped being current (absent for a target that never was): a rollback may bring it back. */
  currentUntil?: string;
  /** `sunset.onMaxDrain` acted on what was still pinned to it (once). */
  maxDrainActed?: boolean;
  /** Executions pinned to it that were open when its draining began (counted once, for the Web UI's details). */
  openExecutions?: { count: number; at: string };
}

export interface RolloutState {
  owner: Owner;
  desired?: Desired;
  /**
   * A newer generation the workflow read and could not take (invalid, or its connection missing): its status says
   * so as the watcher does, instead of writing over the watcher's condition. Cleared when a spec is taken.
   */
  specProblem?: {
    generation: number;
    phase: 'InvalidSpec' | 'Pending';
    reason: 'InvalidSpec' | 'ConnectionNotFound';
    message: string;
  };
  current?: { buildId: string; since: string; place?: TemporalPlace };
  target?: Target;
  deprecated: SunsetVersion[];
  /** Set by `pause` or by a failed gate or analysis (then for that build only); `spec.rollout.paused` pauses too. */
  pausedBy?: { reason: string; buildId?: string; who?: string; cause?: Reason };
  /** The build whose rollout was aborted: not rolled out again until the spec asks for another build. */
  aborted?: { buildId: string; reason: string; cause?: Reason };
  /** Someone else holds the worker deployment's manager identity: routing waits until it is handed back. */
  managerHeldBy?: string;
  /**
   * The conflict token our last routing write returned, and the worker deployment it is of
   * (`routingTokenKey`): the next write there needs no describe.
   */
  routingToken?: { of: string; token: string };
  /** Gate runs started in this lifecycle: numbers each run's workflow ID. */
  gateSeq?: number;
  /** Who did what and why, newest last (bounded). */
  history?: HistoryEntry[];
  /** requestIds of recent controls: the same one twice is one control. */
  recentRequests?: string[];
  /** The latest analysis, in words. */
  lastAnalysis?: string;
  /** A promote not yet taken (carried across ContinueAsNew); for the target it names. */
  promote?: { full: boolean; buildId?: string };
  /** Builds that may still hold the ramp (superseded, aborted): cleared before anything else, until Temporal confirms. */
  rampsToClear?: {
    buildId: string;
    place?: TemporalPlace;
    /** `rollout.onAbort.movePinned`: then its pinned executions move to current. */ movePinned?: boolean;
  }[];
  /** A resync was asked for and not yet done (carried across ContinueAsNew). */
  resyncDue?: boolean;
  /** The current and target Deployments are to be applied again (new connection, settings or template). */
  reapplyDue?: boolean;
  /** A call that keeps failing transiently: the status says what is retried and why. */
  retrying?: { what: string; message: string; since: string };
  /**
   * The owner as last read from the apiserver (its UID matched): set once this lifecycle's resource was read, so a
   * run that never read it (started by hand, a forged owner) touches nothing. A message whose versions are these
   * asks for nothing new.
   */
  read?: { resourceVersion: string; connectionVersion?: string };
  /** A message asked for the resource to be read again (carried across ContinueAsNew). */
  readDue?: boolean;
  /** A message named another object under this name: once this lifecycle ends, the apiserver is asked for it. */
  successorHinted?: boolean;
  phase: Phase;
  reason: Reason;
  message: string;
  /** When the last transition happened (status conditions' lastTransitionTime). */
  since: string;
  /** The rollout the metrics measure (workflows/metrics.ts): carried across ContinueAsNew. */
  measured?: MeasuredRollout;
  /** Since when the rollout is in `phase` (`since` moves with every transition, this only with the phase). */
  phaseSince?: string;
  deleting: boolean;
  deployments: Record<string, DeploymentObservation>;
  /**
   * Builds whose Deployments temporal-worker-controller made and this resource adopted, with
   * their Deployments' names: never rendered by Glidepath (their selectors are the other controller's).
   */
  foreign?: Record<string, string>;
  /**
   * Build IDs Glidepath computes for a template that an adopted build already runs: a spec with that template
   * is that build (no new version for an unchanged template).
   */
  aliases?: Record<string, string>;
  /** Whether the other controller's Deployments were looked for (once per lifecycle, before the first rollout). */
  adoptionChecked?: boolean;
  /** The pod template of each live build: a build's Deployment is only ever rendered from its own. */
  templates?: Record<string, PodTemplate>;
  timings: Timings;
}

/** One line of `history`: a control or a transition, who did it, and why. */
export interface HistoryEntry {
  at: string;
  /** `control` (pause, abort…), `transition` (phase changes), or `refused` (a control that was not taken). */
  kind: 'control' | 'transition' | 'refused';
  /** The control's name, or the transition's reason. */
  what: string;
  who: string;
  why: string;
  buildId?: string;
}

/** What the `status` query answers. */
export interface RolloutStatus {
  phase: Phase;
  reason: Reason;
  message: string;
  paused: boolean;
  current?: string;
  target?: Target;
  deprecated: SunsetVersion[];
  generation?: number;
  lastAbortReason?: string;
  retrying?: { what: string; message: string; since: string };
  lastAnalysis?: string;
  /** Someone else holds the worker deployment's manager identity. */
  managerHeldBy?: string;
  /** Controls refused so far (this run), and the last one: the CLI says so instead of claiming success. */
  refused?: { count: number; last?: { control: string; why: string } };
  /** The strategy and steps in force (of `generation`), for the CLI's progress bar and time left. */
  strategy?: Strategy;
  steps?: RolloutStep[];
  /** Where the current build lives in Temporal (the CLI counts the executions open on each version there). */
  currentPlace?: TemporalPlace;
}
