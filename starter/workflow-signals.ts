/**
 * The watcher's messages to RolloutWorkflows, each named by installation, namespace and name. They wake a workflow;
 * they are not the truth (it reads the resource itself). Only a spec, or a deletion a workflow must clean up after,
 * starts one; the other messages are for a running workflow alone.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { rolloutWorkflowId } from '../api/names.js';
import type { DeploymentObservation, Owner } from '../api/resource.js';
import {
  deleted,
  deploymentObserved,
  specChanged,
  type DeletedRequest,
  type SpecChangedHint,
} from '../workflows/messages.js';
import { staticDetails, staticSummary } from '../workflows/details.js';
import type { RolloutWorkflow } from '../workflows/rollout-workflow.js';

/**
 * What the Temporal Web UI shows of a RolloutWorkflow from its start: the resource it rolls out. (Set at start
 * only: the server does not carry it over a ContinueAsNew, where the workflow ID still names the resource.)
 */
const webUiMetadata = (owner: Owner) => ({ staticSummary: staticSummary(owner), staticDetails: staticDetails(owner) });

export class RolloutSignals {
  constructor(private readonly o: { client: Client; taskQueue: string; installation: string }) {}

  /** A wake-up with the spec's hint, starting the workflow on first sight (signalWithStart). */
  async specChanged(owner: Owner, hint: SpecChangedHint): Promise<void> {
    await this.o.client.workflow.signalWithStart<typeof RolloutWorkflow, [SpecChangedHint]>('RolloutWorkflow', {
      workflowId: rolloutWorkflowId(this.o.installation, owner.namespace, owner.name),
      taskQueue: this.o.taskQueue,
      args: [{ owner }],
      ...webUiMetadata(owner),
      signal: specChanged,
      signalArgs: [hint],
    });
  }

  /** The same wake-up for a running workflow only (none running: nothing to wake). */
  async wake(namespace: string, name: string, hint: SpecChangedHint): Promise<void> {
    try {
      await this.o.client.workflow
        .getHandle(rolloutWorkflowId(this.o.installation, namespace, name))
        .signal(specChanged, hint);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }

  /**
   * Tells the workflow to clean up and end; `start` when it must run even if it is not running now. The uid
   * lets the workflow ignore the deletion of a namesake. Whether it was told: not when none runs and none is started.
   */
  async deleted(owner: Owner, start: boolean): Promise<boolean> {
    const workflowId = rolloutWorkflowId(this.o.installation, owner.namespace, owner.name);
    if (start) {
      await this.o.client.workflow.signalWithStart<typeof RolloutWorkflow, [DeletedRequest]>('RolloutWorkflow', {
        workflowId,
        taskQueue: this.o.taskQueue,
        args: [{ owner }],
        ...webUiMetadata(owner),
        signal: deleted,
        signalArgs: [{ uid: owner.uid }],
      });
      return true;
    }
    try {
      await this.o.client.workflow.getHandle(workflowId).signal(deleted, { uid: owner.uid });
      return true;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      return false; // no workflow running: nothing to clean up
    }
  }

  /** A Deployment of the resource `name` changed, for a running workflow that may be waiting on it. */
  async deploymentObserved(namespace: string, name: string, observation: DeploymentObservation): Promise<void> {
    try {
      await this.o.client.workflow
        .getHandle(rolloutWorkflowId(this.o.installation, namespace, name))
        .signal(deploymentObserved, observation);
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
  }
}
