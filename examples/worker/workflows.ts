/**
 * The example worker's workflows: ordinary PINNED work whose length and failure rate the pod's env sets,
 * and a gate that checks the version it runs on.
 */
import {
  ApplicationFailure,
  condition,
  defineSignal,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ExampleActivities } from './activities.js';

const { behaviour } = proxyActivities<ExampleActivities>({ startToCloseTimeout: '10s' });

/** Ends an `exampleWork` early. */
export const finish = defineSignal('finish');

/**
 * Stays open for the pod's `EXAMPLE_WORKFLOW_HOLD` (or until `finish`), fails for the pod's
 * `EXAMPLE_FAILURE_SHARE` of executions, and returns the build ID it ran on.
 */
export async function exampleWork(): Promise<string> {
  let finished = false;
  setHandler(finish, () => void (finished = true));
  const { holdMs, failureShare } = await behaviour();
  if (holdMs > 0) await condition(() => finished, holdMs);
  if (Math.random() < failureShare) throw ApplicationFailure.nonRetryable('failed on purpose (EXAMPLE_FAILURE_SHARE)');
  return workflowInfo().currentDeploymentVersion?.buildId ?? '';
}

/** A gate: passes unless the pod's env says `EXAMPLE_GATE_FAIL=true`. */
export async function exampleGate(input?: unknown): Promise<{ buildId: string; input?: unknown }> {
  const { gateFails } = await behaviour();
  if (gateFails) throw ApplicationFailure.nonRetryable('gate failed on purpose (EXAMPLE_GATE_FAIL)');
  return { buildId: workflowInfo().currentDeploymentVersion?.buildId ?? '', input };
}
