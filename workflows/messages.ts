/**
 * Every message RolloutWorkflow accepts, defined once and imported by the watcher, the CLI and tests.
 * Each control is also a plain signal: `temporal workflow signal --workflow-id glidepath/ns/foo --name pause`.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { DeploymentObservation, Desired, RolloutStatus } from './state.js';

/** A new generation of the resource (or of its connection), from the watcher. */
export const specChanged = defineSignal<[Desired]>('specChanged');
/** Which object a message is about: one with another UID under the same name is another lifecycle. */
export interface DeletedRequest {
  uid?: string;
}
/** The resource is being deleted: clean up Temporal and Kubernetes, then drop the finalizer. */
export const deleted = defineSignal<[DeletedRequest?]>('deleted');
/** A versioned Deployment changed (status, or deleted by hand), from the watcher. */
export const deploymentObserved = defineSignal<[DeploymentObservation]>('deploymentObserved');
/** Re-check that every live Deployment exists now, instead of at the next periodic resync. */
export const resync = defineSignal('resync');

export interface PauseRequest {
  reason?: string;
}
/** Holds the rollout where it is; a running step's pause timer stops counting. */
export const pause = defineSignal<[PauseRequest?]>('pause');
/** Lifts a `pause` (a pause set in the spec stays until the spec says otherwise). */
export const resume = defineSignal('resume');

export interface AbortRequest {
  reason?: string;
  /** The build this abort means: refused if another build is the target by then. */
  buildId?: string;
}
/** Stops the rollout: the target gets no more new work and is sunset; current stays current. */
export const abort = defineSignal<[AbortRequest?]>('abort');

export interface PromoteRequest {
  /** Make the target current now, skipping the remaining steps. */
  full?: boolean;
  /** The build this promote means: refused if another build is the target by then (a v3 that superseded v2). */
  buildId?: string;
}
/** Ends the step waiting for promotion (or, with `full`, the whole ramp); a Manual rollout's go-ahead. */
export const promote = defineSignal<[PromoteRequest?]>('promote');

/** The rollout as the workflow sees it. */
export const status = defineQuery<RolloutStatus>('status');
