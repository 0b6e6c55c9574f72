/**
 * Tells the worker when a workflow's history is replayed from its start: the workflow was evicted from the
 * worker's cache (or another replica had it), so the Temporal core fetched the history from the server before
 * this activation (`GetWorkflowExecutionHistory`, a call no slot or interceptor of the process sees; a task from
 * the shared queue may carry a short history itself, and is charged all the same: at most one call too many). The
 * controller pays that call from its Temporal budget after the fact (../worker/rate-budget.ts). At 1,000
 * rollouts and a cache of a few hundred it is several calls per rollout.
 *
 * A workflow interceptor module (bundled with `workflowInterceptorModules`); a sink call makes no command, so
 * adding or removing it never changes a history's replay.
 */
import { proxySinks, type Sinks, type WorkflowInterceptorsFactory } from '@temporalio/workflow';

export interface ReplayCostSinks extends Sinks {
  replayCost: {
    /** This workflow's first activation in this worker replays its history: the core fetched it. */
    historyFetched(): void;
  };
}

const { replayCost } = proxySinks<ReplayCostSinks>();

/** Called once per workflow instance in the worker, before its first activation. */
export const interceptors: WorkflowInterceptorsFactory = () => {
  let first = true;
  return {
    internals: [
      {
        activate(input, next) {
          if (first) {
            first = false;
            if (input.activation.isReplaying) replayCost.historyFetched();
          }
          return next(input);
        },
      },
    ],
  };
};
