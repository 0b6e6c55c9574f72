/**
 * Deletion of the resource always finishes: new work goes back to unversioned workers, every version and
 * Deployment goes, then the finalizer. A step that cannot be done (the Temporal server unreachable, the
 * connection's Secret already gone) is tried for a while, then reported — in the log, an Event and the
 * workflow's result — and the cleanup goes on: a namespace must never hang Terminating because of us.
 */
import { ActivityFailure, log, type ActivityOptions } from '@temporalio/workflow';
import { parseDuration } from '../api/duration.js';
import { type RolloutContext } from './context.js';
import { ContinueAsNewDue, deadlinePassed } from './failures.js';
import { placeOf } from './decisions.js';
import type { RolloutState, TemporalPlace } from './state.js';

/** What a deletion could not do (the workflow's result). */
export interface DeletionResult {
  problems: string[];
  /** Pinned executions still open on each version when it was deleted. */
  openExecutions: Record<string, number>;
}

/** About a minute of retries per step, then it is reported and skipped. */
const bounded: ActivityOptions = {
  startToCloseTimeout: '30s',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '10s', maximumAttempts: 8 },
};
/**
 * Deleting versions: the server refuses while it remembers their pollers (`matching.PollerHistoryTTL`, 5 min by
 * default), so this is tried for a little longer than that after the pods are gone.
 */
const patient: ActivityOptions = {
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '6m',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '15s' },
};

export async function deleteEverything(ctx: RolloutContext): Promise<DeletionResult> {
  const { owner, state } = ctx;
  const result: DeletionResult = { problems: [], openExecutions: {} };
  const attempt = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await ctx.withSummary(what, fn); // the step's words are its activities' summary in the Web UI
    } catch (err) {
      if (err instanceof ContinueAsNewDue) throw err; // the next run starts the (idempotent) cleanup again
      const message =
        err instanceof ActivityFailure
          ? (err.cause?.message ?? err.message)
          : err instanceof Error
            ? err.message
            : String(err);
      result.problems.push(`${what}: ${message}`);
      log.warn('deletion step skipped', { what, error: message });
    }
  };
  // Kubernetes steps wait for the apiserver however long it takes (it is what the deletion waits on, too).
  const kube = (what: string, fn: () => Promise<unknown>) =>
    attempt(what, () => ctx.call(what, fn, { untilDeleted: false }));
  ctx.transition('Deleting', 'Deleting', 'cleaning up Temporal and Kubernetes');
  const here = state.desired ? ctx.temporalTarget() : undefined;
  if (here) {
    const builds = [state.current?.buildId, state.target?.buildId, ...state.deprecated.map((v) => v.buildId)].filter(
      (b): b is string => !!b,
    );
    // Say what is stranded: pinned executions open on a version lose their workers with its Deployment.
    await attempt('count open executions', async () => {
      result.openExecutions = await ctx.activities(bounded).countOpenExecutions(here, builds);
    });
    const stranded = Object.entries(result.openExecutions).filter(([, n]) => n > 0);
    if (stranded.length) {
      const text = stranded.map(([b, n]) => `${n} on ${b}`).join(', ');
      log.warn('deleting versions with open pinned executions', { open: result.openExecutions });
      ctx.event('Warning', 'OpenExecutionsStranded', `deleting with pinned executions still open: ${text}`);
    }
    await attempt('route new work to unversioned workers', () => ctx.activities(bounded).routeAway(here));
    // Where a version lives on another Temporal (the connection or namespace changed since), routing goes away there too.
    for (const place of otherPlaces(state)) {
      await attempt(
        `route new work to unversioned workers in ${place.temporalNamespace} at ${place.connection.hostPort}`,
        () => ctx.activities(bounded).routeAway(ctx.temporalTarget(place)),
      );
    }
    // Asked for (`sunset.drainBeforeDelete`): pinned executions get a while to finish before their workers go.
    const drainFor = state.desired?.spec.sunset.drainBeforeDelete;
    if (drainFor && stranded.length) {
      ctx.transition(
        'Deleting',
        'Deleting',
        `waiting up to ${drainFor} for pinned executions to finish (${stranded.map(([b, n]) => `${n} on ${b}`).join(', ')})`,
      );
      const deadline = Date.now() + parseDuration(drainFor);
      await attempt(`wait up to ${drainFor} for the versions to drain`, () =>
        Promise.all(
          stranded.map(([buildId]) =>
            ctx.call(
              `wait for ${buildId} to drain`,
              () => ctx.waitsWithin(deadline - Date.now()).awaitDrained(here, buildId, state.timings.drainPollMaxMs),
              { untilDeleted: false, isExpected: deadlinePassed },
            ),
          ),
        ),
      );
    }
  }
  // The pods go first: the server deletes a version only once it no longer sees its pollers.
  await kube('scale the Deployments to 0', () => ctx.kube.scaleOwnedDeployments(owner, 0));
  await kube('delete the Deployments', () => ctx.kube.deleteOwnedDeployments(owner));
  if (here && state.desired) {
    await attempt('delete the worker deployment in Temporal', () =>
      ctx.activities(patient).deleteWorkerDeployment(here),
    );
    // Versions that lived on another Temporal (the connection or namespace changed since) are deleted there.
    for (const v of state.deprecated) {
      if (v.place && JSON.stringify(v.place) !== JSON.stringify(placeOf(state.desired))) {
        await attempt(`delete version ${v.buildId}`, () =>
          ctx.activities(patient).deleteVersion(ctx.temporalTarget(v.place), v.buildId),
        );
      }
    }
  }
  if (result.problems.length) {
    ctx.event('Warning', 'CleanupIncomplete', `deleted, but could not: ${result.problems.join('; ')}`);
    await ctx.settled(); // said while the resource is there: nothing is written to one that is gone
  }
  await kube('remove the finalizer', () => ctx.kube.removeFinalizer(owner));
  return result;
}

/** The places (Temporal and namespace) of the resource's versions other than its spec's, each once. */
function otherPlaces(state: RolloutState): TemporalPlace[] {
  const here = state.desired ? JSON.stringify(placeOf(state.desired)) : undefined;
  const places = [state.current?.place, state.target?.place, ...state.deprecated.map((v) => v.place)].filter(
    (p): p is TemporalPlace => p !== undefined,
  );
  return [...new Map(places.map((p) => [JSON.stringify(p), p])).entries()]
    .filter(([key]) => key !== here)
    .map(([, p]) => p);
}
