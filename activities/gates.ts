/** Gate activities: a gate workflow run pinned to a version and waited on, heartbeating; its cancellation. */
import { Context } from '@temporalio/activity';
import {
  CancelledFailure,
  Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  type WorkflowHandle,
} from '@temporalio/client';
import type { GateInputReader, GateInputSource } from '../kube/gate-input.js';
import type { TemporalConnections, TemporalTarget } from '../temporal/connections.js';
import { versionNotInQueueYet } from '../temporal/errors.js';
import { heartbeating } from './heartbeats.js';

/** A gate workflow to run on a build. */
export interface GateRun {
  buildId: string;
  workflowType: string;
  taskQueue: string;
  /** Inline input (the spec's `gate.input`, which the workflow's history holds anyway). */
  input?: unknown;
  /**
   * Where the input is (the spec's `gate.inputFrom`): read by the activity, so a Secret's content never
   * enters RolloutWorkflow's history. Wins over `input`.
   */
  inputFrom?: GateInputSource;
  workflowId: string;
  timeoutMs: number;
}

/**
 * The gate activities. `readGateInput` reads a gate's input from its ConfigMap or Secret (the Kubernetes activities'
 * reader, with the same JSON rules).
 */
export function createGateActivities(connections: TemporalConnections, readGateInput: GateInputReader) {
  return {
    /** Cancels a gate workflow (an abort, a superseding spec): at once, not at the waiting activity's next heartbeat. */
    async cancelGate(t: TemporalTarget, workflowId: string): Promise<void> {
      const client = new Client({ connection: await connections.get(t), namespace: t.temporalNamespace });
      await client.workflow
        .getHandle(workflowId)
        .cancel()
        .catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err; // closed already: nothing to cancel
        });
    },

    /** Runs a gate workflow pinned to the target version and reports whether it completed. */
    async runGate(t: TemporalTarget, gate: GateRun): Promise<{ passed: boolean; message: string }> {
      const startedAt = Date.now();
      const input = gate.inputFrom ? await readGateInput(t.k8sNamespace, gate.inputFrom) : gate.input;
      const client = new Client({ connection: await connections.get(t), namespace: t.temporalNamespace });
      // One run per gate ID: a retry after a crash waits on the running one (USE_EXISTING) or reads the outcome of
      // the one that ended meanwhile (REJECT_DUPLICATE), never starts it again. `retry` and `resume` get a new ID.
      const ctx = Context.current();
      /** Starts the gate, or finds it started; a version that registered a moment ago may not be in the queue yet (server 1.32): asked again for 30 s. */
      const startGate = async (): Promise<WorkflowHandle> => {
        for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 2_000)) {
          try {
            return await client.workflow.start(gate.workflowType, {
              workflowId: gate.workflowId,
              taskQueue: gate.taskQueue,
              args: input === undefined ? [] : [input],
              versioningOverride: { pinnedTo: { deploymentName: t.deploymentName, buildId: gate.buildId } },
              workflowExecutionTimeout: gate.timeoutMs,
              workflowIdConflictPolicy: 'USE_EXISTING',
              workflowIdReusePolicy: 'REJECT_DUPLICATE',
            });
          } catch (err) {
            if (err instanceof WorkflowExecutionAlreadyStartedError) return client.workflow.getHandle(gate.workflowId);
            if (!versionNotInQueueYet(err) || Date.now() - startedAt > 30_000) throw err;
            await ctx.sleep(delayMs);
          }
        }
      };
      return heartbeating(
        ctx,
        () => true,
        async () => {
          const started = await startGate();
          try {
            await Promise.race([started.result(), ctx.cancelled]);
            return { passed: true, message: `${gate.workflowType} completed` };
          } catch (err) {
            if (err instanceof WorkflowFailedError)
              return { passed: false, message: err.cause?.message ?? err.message };
            // The workflow cancelled the gate (a new spec, an abort): the gate workflow goes too. Not on a worker
            // shutdown or a heartbeat timeout: the retry finds the same gate running (USE_EXISTING) and waits on.
            if (err instanceof CancelledFailure && ctx.cancellationDetails?.cancelRequested) {
              await started.cancel().catch((cancelErr: unknown) => {
                if (!(cancelErr instanceof WorkflowNotFoundError)) throw cancelErr; // closed already: nothing to cancel
              });
            }
            throw err;
          }
        },
        { startedAt },
      );
    },
  };
}
