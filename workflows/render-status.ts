/**
 * The resource's status, rendered from the state: a pure function, covered by tests/unit/decisions.test.ts.
 */
import { versionedDeploymentName } from '../api/names.js';
import type { Condition } from '../api/common.js';
import type { TemporalWorkerDeploymentStatus } from '../api/rollout-status.js';
import type { RolloutState } from './state.js';

const progressingPhases = new Set([
  'Pending',
  'Deploying',
  'WaitingForPollers',
  'Gating',
  'Ramping',
  'AwaitingPromotion',
  'Deleting',
]);

/** Where a resource's RolloutWorkflow runs: its ID and Temporal namespace. */
export interface RolloutWorkflowRef {
  workflowId: string;
  temporalNamespace: string;
}

/** The resource's status, rendered from the state: conditions, versions, phase, and the workflow that writes it. */
export function renderStatus(state: RolloutState, workflow?: RolloutWorkflowRef): TemporalWorkerDeploymentStatus {
  // An adopted build's Deployment keeps the name temporal-worker-controller gave it.
  const deploymentName = (buildId: string) =>
    state.foreign?.[buildId] ?? versionedDeploymentName(state.owner.name, buildId);
  const generation = state.desired?.generation;
  const condition = (type: string, ok: boolean): Condition => ({
    type,
    status: ok ? 'True' : 'False',
    reason: state.reason,
    message: state.message,
    lastTransitionTime: state.since,
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
  });
  // Cleared when a spec is taken; a connection's change keeps the generation, so it is said at the same one too.
  const problem =
    state.specProblem && state.specProblem.generation >= (generation ?? 0) ? state.specProblem : undefined;
  if (problem) {
    // As the watcher says it: the spec in force goes on meanwhile, the versions below are what runs.
    const refused = (type: string): Condition => ({
      type,
      status: 'False',
      reason: problem.reason,
      message: problem.message,
      lastTransitionTime: state.since,
      observedGeneration: problem.generation,
    });
    return {
      ...renderStatus({ ...state, specProblem: undefined }, workflow),
      observedGeneration: problem.generation,
      phase: problem.phase,
      message: problem.message,
      conditions: [refused('Ready'), refused('Progressing')],
    };
  }
  const target = state.target;
  const retrying = state.retrying
    ? ` (retrying ${state.retrying.what} since ${state.retrying.since}: ${state.retrying.message})`
    : '';
  const blocked = state.deprecated
    .filter((v) => v.blocked)
    .map((v) => `; the sunset of ${v.buildId} is blocked: ${v.blocked}`)
    .join('');
  return {
    observedGeneration: generation,
    phase: state.phase,
    message: `${state.message}${retrying}${blocked}`,
    conditions: [
      condition('Ready', state.phase === 'Ready'),
      condition('Progressing', progressingPhases.has(state.phase)),
    ],
    currentVersion: state.current
      ? {
          buildID: state.current.buildId,
          deploymentName: deploymentName(state.current.buildId),
          status: 'Current',
          since: state.current.since,
        }
      : undefined,
    targetVersion: target
      ? {
          buildID: target.buildId,
          deploymentName: deploymentName(target.buildId),
          status: target.rampPercentage !== undefined ? 'Ramping' : 'Inactive',
          rampPercentage: target.rampPercentage,
          stepIndex: target.step?.index,
          rampingSince: target.rampingSince,
        }
      : undefined,
    deprecatedVersions: state.deprecated.length
      ? state.deprecated.map((v) => ({
          buildID: v.buildId,
          deploymentName: deploymentName(v.buildId),
          status: v.status,
          deprecatedSince: v.deprecatedSince,
          drainedSince: v.drainedSince,
        }))
      : undefined,
    lastAbortReason: state.aborted?.reason,
    ...(state.lastAnalysis ? { lastAnalysis: state.lastAnalysis } : {}),
    ...(routingDiffers(state) ?? {}),
    ...(workflow ? { rolloutWorkflow: workflow } : {}),
  };
}

/** After the rollback control, Temporal routes to another build than the spec's: the status says so until the spec changes. */
function routingDiffers(
  state: RolloutState,
): { routing: { currentBuildID: string; specBuildID: string; reason?: string } } | undefined {
  const spec = state.desired?.buildId;
  const current = state.current?.buildId;
  if (!spec || !current || spec === current || state.aborted?.buildId !== spec || state.aborted.cause !== 'RolledBack')
    return undefined;
  return {
    routing: {
      currentBuildID: current,
      specBuildID: spec,
      reason: `rolled back: ${state.aborted.reason}; routing stays on ${current} until the spec changes or retry`,
    },
  };
}
