/**
 * A gate's verdict, read from the gate's own run: the routing activities give a build its first traffic only once
 * its rollout gate passed, and the next step's ramp (or current, after the last step) only once the gate of the step
 * before passed, unless a person promoted past it. Pure: the reads are the caller's.
 */
import proto from '@temporalio/proto';
import type { temporal } from '@temporalio/proto';
import type { Gate, TemporalWorkerDeploymentSpec } from '../api/temporal-worker-deployment.js';

type ExecutionInfo = temporal.api.workflow.v1.IWorkflowExecutionInfo;
type VersionInfo = temporal.api.deployment.v1.IWorkerDeploymentVersionInfo;

const { VersioningBehavior, WorkflowExecutionStatus } = proto.temporal.api.enums.v1;

/** Whether Temporal says the version ever had traffic (ramping, current, or retired from either). */
export function hadTraffic(info: VersionInfo | null | undefined): boolean {
  return !!(
    info?.firstActivationTime ??
    info?.lastDeactivationTime ??
    info?.lastCurrentTime ??
    info?.currentSinceTime ??
    info?.rampingSinceTime
  );
}

/**
 * The build an execution was pinned to: by its versioning override (any of the server's shapes of it), else the
 * version it ran on when its behavior is PINNED.
 */
export function pinnedBuildOf(info: ExecutionInfo | null | undefined): string | undefined {
  const versioning = info?.versioningInfo;
  const override = versioning?.versioningOverride;
  const pinnedBehavior = versioning?.behavior === VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
  return (
    override?.pinned?.version?.buildId ??
    override?.deployment?.buildId ??
    override?.pinnedVersion?.split('.').slice(1).join('.') ??
    (pinnedBehavior ? versioning?.deploymentVersion?.buildId : undefined) ??
    undefined
  );
}

/**
 * Why a gate run does not say the gate passed on `buildId`, or undefined when it does: it must be of the gate's
 * workflow type, have been pinned to the build, and have completed. `running`: it may still pass.
 */
export function gateRunProblem(
  workflowId: string,
  info: ExecutionInfo | null | undefined,
  workflowType: string,
  buildId: string,
): { problem: string; running: boolean } | undefined {
  const no = (problem: string, running = false) => ({ problem: `the gate run ${workflowId} ${problem}`, running });
  if (!info) return no('does not exist');
  if (info.type?.name !== workflowType)
    return no(`is a ${info.type?.name ?? 'workflow of no type'}, not ${workflowType}`);
  const pinned = pinnedBuildOf(info);
  if (pinned !== buildId) return no(`was pinned to ${pinned ?? 'no build'}, not ${buildId}`);
  const status = info.status ?? WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED;
  if (status === WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING) return no('is still running', true);
  if (status !== WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED)
    return no(`did not complete (${WorkflowExecutionStatus[status] ?? status})`);
  return undefined;
}

/**
 * The gate a routing change to the spec's build must come after, by its label (`rollout`, `step-N`): its first
 * traffic comes after the rollout gate; a ramp to step N+1, or current after the last step N, after step N's gate.
 */
export function gateBefore(
  rollout: TemporalWorkerDeploymentSpec['rollout'],
  to: { percentage: number } | 'current',
  hadTraffic: boolean,
): { label: string; gate: Gate } | undefined {
  const first = rollout.gate && { label: 'rollout', gate: rollout.gate };
  if (!hadTraffic) return first;
  const steps = rollout.strategy === 'Progressive' ? (rollout.steps ?? []) : [];
  const next = to === 'current' ? steps.length : steps.findIndex((s) => s.rampPercentage === to.percentage);
  const before = next > 0 ? steps[next - 1] : undefined;
  return before?.gate && { label: `step-${next}`, gate: before.gate };
}
