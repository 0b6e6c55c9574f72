/** What the controller reads of a resource and its Deployments: the workflow, the watcher and the activities share it. */
import type { ResourceKind } from './kinds.js';
import type { TemporalConnectionSpec } from './temporal-connection.js';
import type { NormalizedSpec } from './worker-deployment.js';

/** The resource a workflow rolls out. */
export interface Owner {
  namespace: string;
  name: string;
  uid: string;
  /** Its kind (absent: a TemporalWorkerDeployment, as in every state from before WorkerDeployments). */
  kind?: ResourceKind;
}

/** One generation of the spec as read from the apiserver (defaults applied), with what it derived. */
export interface Desired {
  generation: number;
  /** A TemporalWorkerDeployment's spec, or a WorkerDeployment's normalized into it. */
  spec: NormalizedSpec;
  /** The kind of the resource it is of (absent: a TemporalWorkerDeployment). */
  kind?: ResourceKind;
  buildId: string;
  connection: TemporalConnectionSpec;
  /** The connection object's resourceVersion: a change re-applies the live Deployments. */
  connectionVersion: string;
  /** The resource's UID (the object it was read from). */
  uid?: string;
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
  /** Orders observations: an older one never overwrites a newer one. */
  resourceVersion?: string;
  /** The UID of the resource whose Deployment it is (label `glidepath.dev/owner-uid`). */
  ownerUid?: string;
}
