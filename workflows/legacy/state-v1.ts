/** Frozen with ./rollout-v1.ts: the state it carries across ContinueAsNew (the current code reads it). */
import type { TemporalConnectionSpec } from '../../api/temporal-connection.js';
import type { Phase, PodTemplate, Reason, TemporalWorkerDeploymentSpec, VersionStatus } from '../../api/temporal-worker-deployment.js';

/** The resource a workflow rolls out. */
export interface Owner {
  namespace: string;
  name: string;
  uid: string;
}

/** One generation of the spec as the watcher parsed it (defaults applied), with what it derived. */
export interface Desired {
  generation: number;
  spec: TemporalWorkerDeploymentSpec;
  buildId: string;
  connection: TemporalConnectionSpec;
  /** The connection object's resourceVersion: a change re-applies the live Deployments. */
  connectionVersion: string;
}

/** A versioned Deployment as the watcher last saw it. */
export interface DeploymentObservation {
  buildId: string;
  name: string;
  exists: boolean;
  generation?: number;
  observedGeneration?: number;
  replicas?: number;
  availableReplicas?: number;
  /** Its `Progressing` condition says ProgressDeadlineExceeded. */
  progressDeadlineExceeded?: boolean;
}

/** The version being rolled out. */
export interface Target {
  buildId: string;
  generation: number;
  /** Index of the Progressive step in force, once ramping. */
  stepIndex?: number;
  rampPercentage?: number;
  rampingSince?: string;
  /** The rollout gate passed (it is not run again after a restart or ContinueAsNew). */
  gatePassed?: boolean;
}

/** A version no longer current or targeted, on its way out. */
export interface SunsetVersion {
  buildId: string;
  deprecatedSince: string;
  status?: VersionStatus;
  drainedSince?: string;
  scaledDown?: boolean;
}

/** Tunables that are fixed per workflow run (passed in, so they are replay-safe). */
export interface Timings {
  /** How often live Deployments are checked to exist when nothing else happens. */
  resyncIntervalMs: number;
  /** Longest wait between two drainage checks (they back off from 1s). */
  drainPollMaxMs: number;
  /** Versions per worker deployment the server allows (its default is 100). */
  maxVersions: number;
  /** History length past which the workflow continues as new at its next idle point (or when the server suggests it). */
  historyLimit?: number;
}

export const defaultTimings: Timings = { resyncIntervalMs: 30 * 60_000, drainPollMaxMs: 60_000, maxVersions: 100, historyLimit: 10_000 };

export interface RolloutState {
  owner: Owner;
  desired?: Desired;
  current?: { buildId: string; since: string };
  target?: Target;
  deprecated: SunsetVersion[];
  /** Set by the `pause` signal; `spec.rollout.paused` pauses too. */
  pausedBy?: { reason: string };
  /** The build whose rollout was aborted: not rolled out again until the spec asks for another build. */
  aborted?: { buildId: string; reason: string; cause?: Reason };
  phase: Phase;
  reason: Reason;
  message: string;
  /** When the last transition happened (status conditions' lastTransitionTime). */
  since: string;
  deleting: boolean;
  deployments: Record<string, DeploymentObservation>;
  /** The pod template of each live build: a build's Deployment is only ever rendered from its own. */
  templates?: Record<string, PodTemplate>;
  timings: Timings;
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
}
