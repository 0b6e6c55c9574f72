/**
 * Back to a build that was current moments ago: routing returns at once, and what was pinned to the build left
 * behind may follow (`rollout.onAbort.movePinned`).
 */
import type { RolloutContext } from './context.js';
import { ensureDeployment, readDeployment } from './deployments.js';
import { Blocked } from './failures.js';
import { makeCurrent } from './routing.js';
import type { TemporalPlace } from './state.js';
import type { Sunsets } from './sunset.js';
import { waitUntilAvailable } from './waiting.js';

/**
 * Back to a build that was current moments ago and still runs (the spec went back to it, or `rollback`): current
 * at once, all at once — no gate, no steps, whatever the strategy or a pause says.
 */
export async function rollBack(
  ctx: RolloutContext,
  sunsets: Sunsets,
  buildId: string,
  why: { reason: string; who: string },
): Promise<void> {
  const previous = ctx.state.current;
  const spec = ctx.state.desired!.buildId;
  const differs =
    spec !== buildId
      ? `; the spec still asks for ${spec}: routing stays on ${buildId} until the spec changes or retry`
      : '';
  const message = `${buildId} is current again (${why.reason}${why.who !== 'spec' ? `, by ${why.who}` : ''})${differs}`;
  // Its pods are read, not remembered: routing goes back only to a Deployment that serves (made whole first if not).
  const read = await readDeployment(ctx, buildId);
  // Scaled to 0 (a sunset's scale-down, perhaps in a task that was lost) is not serving, whatever pods still stop.
  if (!ctx.state.deployments[buildId]?.exists || read.replicas === 0 || (read.availableReplicas ?? 0) === 0) {
    // Not Glidepath's to render (adopted): nothing to apply, so routing does not go to it.
    if (!ctx.state.templates?.[buildId] && !ctx.state.foreign?.[buildId])
      throw new Blocked(
        `roll back to ${buildId}`,
        'its Deployment has no available pods, and it is not one Glidepath applies',
      );
    ctx.transition(
      'Deploying',
      'Deploying',
      `${buildId} has no available pods: applying its Deployment before routing goes back to it`,
    );
    await ensureDeployment(ctx, buildId);
    await waitUntilAvailable(ctx, buildId, { ignorePause: true }); // a rollback is not held by a pause
  }
  await makeCurrent(ctx, sunsets, buildId, { reason: 'RolledBack', message, ignorePause: true });
  if (previous && previous.buildId !== buildId && ctx.spec().rollout.onAbort?.movePinned) {
    try {
      await movePinned(ctx, previous.buildId, buildId, previous.place);
    } catch (err) {
      if (!(err instanceof Blocked)) throw err;
      ctx.event('Warning', 'Blocked', `executions pinned to ${previous.buildId} could not be moved: ${err.message}`); // routing is back all the same
    }
  }
}

/** Moves the executions pinned to an aborted or rolled back build onto the current one (`rollout.onAbort.movePinned`). */
export async function movePinned(ctx: RolloutContext, from: string, to: string, place?: TemporalPlace): Promise<void> {
  const moved = await ctx.call(`move executions pinned to ${from} onto ${to}`, () =>
    ctx.bulk.movePinned(ctx.temporalTarget(place), from, to, `${from} was aborted or rolled back`),
  );
  // A one-time move ends with the execution's next workflow task on `to`; a pinned one holds it there.
  const how = moved.oneTime
    ? 'with a one-time override (then they keep the behaviour their workers report)'
    : 'pinned there (the server has no one-time override)';
  const message = `moved ${moved.moved} of ${moved.matched} executions pinned to ${from} onto ${to}, ${how}`;
  ctx.event('Normal', 'PinnedExecutionsMoved', message);
  ctx.record('transition', 'PinnedExecutionsMoved', 'glidepath', message, from);
}
