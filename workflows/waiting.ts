/**
 * Waiting on Kubernetes. Signals wake the workflow; the truth is read: the watcher's `deploymentObserved`
 * makes a wait read the Deployment at once, and a backstop read with backoff (1s, 2s, 4s … `recheckMaxMs`)
 * reads it when a signal was lost. Only reads are folded into the state, and only while something waits: an
 * idle resource costs none.
 */
import { formatDuration } from '../api/duration.js';
import type { RolloutContext } from './context.js';
import { isPaused, newerObservation, recheckDelay } from './decisions.js';
import type { DeploymentObservation } from '../api/resource.js';

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

/** The Deployment has the replicas the spec asks for now, all available, at its latest generation. */
export function isAvailable(ctx: RolloutContext, buildId: string): boolean {
  const d = ctx.state.deployments[buildId];
  const replicas = ctx.spec().replicas;
  return (
    !!d?.exists &&
    (d.observedGeneration ?? 0) >= (d.generation ?? 0) &&
    (d.replicas ?? replicas) === replicas &&
    (d.availableReplicas ?? 0) >= replicas
  );
}

/**
 * Holds while paused (by signal or spec), showing Paused — "Paused (42s left in step 1/3): why" when a step's
 * timer stopped (`leftMs`, `label`). Where a promote is taken (a step, a Manual wait), `promoteEnds` lets a
 * promote end the hold too; elsewhere it waits for the promote's turn.
 */
export async function waitWhilePaused(
  ctx: RolloutContext,
  opts: { promoteEnds?: boolean; leftMs?: number; label?: string } = {},
): Promise<void> {
  if (!isPaused(ctx.state)) return;
  const { phase, reason, message } = ctx.state;
  const over = () =>
    !isPaused(ctx.state) || ctx.state.deleting || (opts.promoteEnds === true && ctx.state.promote !== undefined);
  const why = ctx.state.pausedBy?.reason ?? 'paused by spec.rollout.paused';
  const left =
    opts.leftMs !== undefined && opts.leftMs > 0
      ? `${formatDuration(opts.leftMs)} left${opts.label ? ` in ${opts.label}` : ''}`
      : '';
  ctx.transition('Paused', 'Paused', left ? `Paused (${left}): ${why}` : why);
  for (;;) {
    await ctx.wait(over);
    if (over()) break;
    ctx.checkpoint();
  }
  ctx.transition(phase, reason, `${message} (resumed)`);
}

/**
 * Waits until the target's Deployment is available. The progress deadline (from the spec in force, paused
 * time excluded) turns the phase to Failed, and the wait goes on: the rollout continues if it becomes available.
 */
export async function waitUntilAvailable(
  ctx: RolloutContext,
  buildId: string,
  opts: { ignorePause?: boolean } = {},
): Promise<void> {
  const target = ctx.state.target!;
  let attempt = 0;
  let failed = ctx.state.reason === 'ProgressDeadlineExceeded';
  const changed = () => ctx.deploymentsChanged.has(buildId);
  const paused = () => !opts.ignorePause && isPaused(ctx.state);
  while (!isAvailable(ctx, buildId)) {
    if (paused()) {
      await waitWhilePaused(ctx);
      continue;
    }
    const deadline = ctx.spec().progressDeadlineSeconds * 1000;
    const waited = target.availableWaitMs ?? 0;
    const delay = recheckDelay(attempt, ctx.state.timings.recheckMaxMs ?? 30_000);
    const started = Date.now();
    const woken = await ctx.wait(
      () => changed() || paused(),
      failed ? delay : Math.min(delay, deadline - waited),
      `wait for ${buildId} to be available`,
    );
    target.availableWaitMs = waited + (Date.now() - started);
    if (paused()) continue;
    if (!woken) attempt++; // the backstop read backs off; a wake-up reads at once
    ctx.checkpoint();
    ctx.deploymentsChanged.delete(buildId);
    await readDeployment(ctx, buildId);
    if (!ctx.state.deployments[buildId]?.exists) ctx.state.resyncDue = true; // deleted under us: the resync recreates it
    if (!failed && !isAvailable(ctx, buildId) && target.availableWaitMs >= deadline) {
      failed = true;
      ctx.transition(
        'Failed',
        'ProgressDeadlineExceeded',
        `${buildId} not available after ${ctx.spec().progressDeadlineSeconds}s`,
        'Warning',
      );
    }
  }
}
