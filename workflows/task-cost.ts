/**
 * Tells the worker what a workflow's tasks cost the controller's Temporal budget (../worker/rate-budget.ts) in
 * calls no slot or interceptor of the process sees, both sent by the Temporal core:
 * - a history replayed from its start: the workflow was evicted from the worker's cache (or another replica had
 *   it), so the core fetched the history from the server before this activation (`GetWorkflowExecutionHistory`;
 *   a task from the shared queue may carry a short history itself, and is charged all the same: at most one call
 *   too many). At 1,000 rollouts and a cache of a few hundred it is several calls per rollout. Paid after the fact.
 * - a new activation's completion (`RespondWorkflowTaskCompleted`). The worker runs sink calls before it hands
 *   the activation's completion to the core, so the completion waits here for its turn: a hundred rollouts waking
 *   in the same second send their completions over the next seconds, not in one.
 *
 * A workflow interceptor module (bundled with `workflowInterceptorModules`); a sink call makes no command, so
 * adding or removing it never changes a history's replay.
 */
import { proxySinks, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

export interface TaskCostSinks extends Sinks {
  taskCost: {
    /** This workflow's first activation in this worker replays its history: the core fetched it. */
    historyFetched(): void;
    /** This activation is new (not a replay): its completion goes to the server. */
    completing(): void;
  };
}

const { taskCost } = proxySinks<TaskCostSinks>();

/** Called once per workflow instance in the worker, before its first activation. */
export const interceptors: WorkflowInterceptorsFactory = () => {
  let first = true;
  return {
    internals: [
      {
        activate(input, next) {
          if (first) {
            first = false;
            if (input.activation.isReplaying) taskCost.historyFetched();
          }
          // An activation whose jobs run in two batches (signals first) is still one completion; one that only
          // resolves local activities is part of the task that started them, completed once.
          const localOnly = (input.activation.jobs ?? []).every((j) => j.resolveActivity?.isLocal === true);
          if (!input.activation.isReplaying && input.batchIndex === 0 && !localOnly) taskCost.completing();
          return next(input);
        },
      },
    ],
  };
};
