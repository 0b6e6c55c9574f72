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
 * The version an execution was pinned to: by its versioning override (any of the server's shapes of it), else the
 * version it ran on when its behavior is PINNED. The deployment name is undefined where the shape has none.
 */
export function pinnedVersionOf(
  info: ExecutionInfo | null | undefined,
): { deploymentName?: string; buildId: string } | undefined {
  const versioning = info?.versioningInfo;
  const override = versioning?.versioningOverride;
  const named = (v: { deploymentName?: string | null; buildId?: string | null } | null | undefined) =>
    v?.buildId ? { ...(v.deploymentName ? { deploymentName: v.deploymentName } : {}), buildId: v.buildId } : undefined;
  const dotted = override?.pinnedVersion ?? undefined;
  const dot = dotted?.indexOf('.') ?? -1;
  return (
    named(override?.pinned?.version) ??
    named(
      override?.deployment
        ? { deploymentName: override.deployment.seriesName, buildId: override.deployment.buildId }
        : undefined,
    ) ??
    (dotted && dot > 0 ? { deploymentName: dotted.slice(0, dot), buildId: dotted.slice(dot + 1) } : undefined) ??
    (versioning?.behavior === VersioningBehavior.VERSIONING_BEHAVIOR_PINNED
      ? named(versioning.deploymentVersion)
      : undefined)
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
  version: { deploymentName: string; buildId: string },
): { problem: string; running: boolean } | undefined {
  const { buildId } = version;
  const no = (problem: string, running = false) => ({ problem: `the gate run ${workflowId} ${problem}`, running });
  if (!info) return no('does not exist');
  if (info.type?.name !== workflowType)
    return no(`is a ${info.type?.name ?? 'workflow of no type'}, not ${workflowType}`);
  const pinned = pinnedVersionOf(info);
  if (
    pinned?.buildId !== buildId ||
    (pinned.deploymentName !== undefined && pinned.deploymentName !== version.deploymentName)
  )
    return no(`was pinned to ${pinned?.buildId ?? 'no build'}, not ${buildId}`);
  const status = info.status ?? WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED;
  if (status === WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING) return no('is still running', true);
  if (status !== WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED)
    return no(`did not complete (${WorkflowExecutionStatus[status] ?? status})`);
  return undefined;
}

/**
 * The gate a routing change of the spec's build to `share` percent (100: current) must come after, named for
 * messages: its first traffic comes after the rollout gate; after that, a share comes after the gate of the highest
 * gated step below it (so no share, listed or not, skips a step's gate).
 */
export function gateBefore(
  rollout: TemporalWorkerDeploymentSpec['rollout'],
  share: number,
  hadTraffic: boolean,
): { label: string; gate: Gate } | undefined {
  if (!hadTraffic) return rollout.gate && { label: 'rollout', gate: rollout.gate };
  const steps = rollout.strategy === 'Progressive' ? (rollout.steps ?? []) : [];
  let before: { label: string; gate: Gate } | undefined;
  steps.forEach((s, i) => {
    if (s.gate && s.rampPercentage < share) before = { label: `step-${i + 1}`, gate: s.gate };
  });
  return before;
}
