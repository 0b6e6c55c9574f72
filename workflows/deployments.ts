/**
 * The versioned Deployments as a rollout knows them: applied from the spec in force, read, and folded into the
 * state (an older observation never overwrites a newer one).
 */
import type { DeploymentObservation } from '../api/resource.js';
import type { RolloutContext } from './context.js';
import { newerObservation } from './decisions.js';

/**
 * Folds a read (or an apply's answer) into the state: an older one never overwrites a newer one, and a Deployment
 * of another incarnation of the resource under the same name is not this one's.
 */
export function observe(ctx: RolloutContext, obs: DeploymentObservation): void {
  const mine = obs.exists && (!obs.ownerUid || obs.ownerUid === ctx.owner.uid);
  ctx.state.deployments[obs.buildId] = mine
    ? newerObservation(ctx.state.deployments[obs.buildId], obs)
    : { buildId: obs.buildId, name: obs.name, exists: false };
}

/** Reads the build's Deployment and folds the read into the state; returns what was read. */
export async function readDeployment(ctx: RolloutContext, buildId: string): Promise<DeploymentObservation> {
  const read = await ctx.call(`read the Deployment of ${buildId}`, () => ctx.kube.readDeployment(ctx.owner, buildId));
  observe(ctx, read);
  return read;
}

/** Server-side applies a live build's Deployment from its own template (the cluster's record of it) and the spec in force. */
export async function ensureDeployment(ctx: RolloutContext, buildId: string): Promise<void> {
  if (!ctx.state.templates?.[buildId]) {
    // Adopted from temporal-worker-controller: its settings follow the spec, its template stays (it is the build).
    if (ctx.state.foreign?.[buildId]) {
      const adopted = await ctx.call(`update the adopted Deployment of ${buildId}`, () =>
        ctx.kube.updateAdoptedDeployment({ owner: ctx.owner, buildId }),
      );
      observe(ctx, adopted);
    }
    return; // a version adopted from Temporal: not ours to render
  }
  const obs = await ctx.call(`apply the Deployment of ${buildId}`, () =>
    ctx.kube.ensureVersionedDeployment({ owner: ctx.owner, buildId }),
  );
  observe(ctx, obs);
}
