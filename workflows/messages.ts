/**
 * Every message RolloutWorkflow accepts, defined once and imported by the watcher, the CLI and tests.
 * Each control is an update (validated, answered with the resulting status:
 * `temporal workflow update execute --workflow-id glidepath/ns/foo --name pause --input '{"reason":"…"}'`)
 * and, under the same name, a plain signal (`temporal workflow signal … --name pause`).
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { ResourceKind } from '../api/kinds.js';
import type { HistoryEntry, RolloutStatus } from './state.js';
import type { DeploymentObservation } from '../api/resource.js';

/** What every control may carry: who sent it and why (recorded in the history), and an ID that makes it once-only. */
export interface ControlRequest {
  reason?: string;
  /** Who asks: the CLI fills it from the OS user and kube context; the watcher names the annotation. */
  identity?: string;
  /** The same requestId twice is one control (a watcher that re-sends after a restart). */
  requestId?: string;
}

/**
 * A new generation of the resource (or of its connection), from the watcher: a wake-up, not the spec. The workflow
 * reads the resource (and its connection) from the apiserver itself before it acts.
 */
export const specChanged = defineSignal<[SpecChangedHint]>('specChanged');
/** Which object the deletion is of: the workflow reads the resource before it deletes anything. */
export interface DeletedRequest {
  uid: string;
}
/** What the watcher saw change: which object (uid, kind), and at which generation and resourceVersion. */
export interface SpecChangedHint {
  uid: string;
  kind: ResourceKind;
  generation: number;
  resourceVersion: string;
  /** The resourceVersion of the connection it names (a connection's change is a change of the spec). */
  connectionVersion?: string;
}
/**
 * The resource is being deleted, from the watcher: a wake-up. The workflow cleans up Temporal and Kubernetes, then
 * drops the finalizer, once it has read that the object is being deleted, is gone or is another object.
 */
export const deleted = defineSignal<[DeletedRequest]>('deleted');
/** A versioned Deployment changed (status, or deleted by hand), from the watcher. */
export const deploymentObserved = defineSignal<[DeploymentObservation]>('deploymentObserved');
/** Re-check that every live Deployment exists now, instead of at the next periodic resync. */
export const resync = defineSignal('resync');

export type PauseRequest = ControlRequest;
/** Holds the rollout where it is; a running step's pause timer stops counting. */
export const pause = defineSignal<[PauseRequest?]>('pause');
/** Lifts a `pause` (a pause set in the spec stays until the spec says otherwise). */
export const resume = defineSignal<[ControlRequest?]>('resume');

export interface AbortRequest extends ControlRequest {
  /** The build this abort means: refused if another build is the target by then. */
  buildId?: string;
}
/** Stops the rollout: the target gets no more new work and is sunset; current stays current. */
export const abort = defineSignal<[AbortRequest?]>('abort');

export interface PromoteRequest extends ControlRequest {
  /** Make the target current now, skipping the remaining steps. */
  full?: boolean;
  /** The build this promote means: refused if another build is the target by then (a v3 that superseded v2). */
  buildId?: string;
}
/** Ends the step waiting for promotion (or, with `full`, the whole ramp); a Manual rollout's go-ahead. */
export const promote = defineSignal<[PromoteRequest?]>('promote');

export interface RollbackRequest extends ControlRequest {
  /** The build to route to again (default: the one that was current before the current one). */
  toBuildId?: string;
}
/**
 * Routes back, at once and all at once, to a build that was current within `rollout.rollbackWindow` and still
 * runs (or, during a rollout, to the current build: the target is aborted). The spec's build is then held as
 * aborted, and the status says that routing differs from the spec, until the spec changes or `retry`.
 */
export const rollback = defineSignal<[RollbackRequest?]>('rollback');

export interface RetryRequest extends ControlRequest {
  /** The build this retry means: refused if another build is meant by then. */
  buildId?: string;
}
/** Runs an aborted (or rolled back) build's rollout again, or a failed gate or analysis again, without a spec change. */
export const retry = defineSignal<[RetryRequest?]>('retry');

/** The rollout as the workflow sees it. */
export const status = defineQuery<RolloutStatus>('status');
/** Who did what and why: the controls and transitions, newest last (bounded, carried across ContinueAsNew). */
export const history = defineQuery<HistoryEntry[]>('history');

/**
 * The controls as updates: validated first (a refusal says why and leaves no trace), answered with the status.
 * Clients pass an object (`{}` will do); a missing argument (`temporal workflow update execute` without --input) is read as `{}`.
 */
export const updates = {
  pause: defineUpdate<RolloutStatus, [PauseRequest]>('pause'),
  resume: defineUpdate<RolloutStatus, [ControlRequest]>('resume'),
  abort: defineUpdate<RolloutStatus, [AbortRequest]>('abort'),
  promote: defineUpdate<RolloutStatus, [PromoteRequest]>('promote'),
  rollback: defineUpdate<RolloutStatus, [RollbackRequest]>('rollback'),
  retry: defineUpdate<RolloutStatus, [RetryRequest]>('retry'),
};
export type ControlName = keyof typeof updates;

/** Each control as a signal, by name (the same controls as `updates`). */
export const controlSignals = { pause, resume, abort, promote, rollback, retry } satisfies Record<ControlName, unknown>;
