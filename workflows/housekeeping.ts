/**
 * Housekeeping beside the rollout, each a loop in the resource's housekeeping scope (a deletion cancels it, so
 * nothing is applied after it deleted it): the resync that heals drift, the read a wake-up asks for, and the
 * re-apply a new connection or template asks for. None fails the workflow; one cut short by a ContinueAsNew asks
 * to run again in the next run.
 */
import { condition, isCancellation, log } from '@temporalio/workflow';
import { liveForeignBuilds } from './adoption.js';
import { Blocked, ContinueAsNewDue } from './failures.js';
import type { Resource } from './resource.js';
import { ensureDeployment } from './deployments.js';

export function runHousekeeping(r: Resource): void {
  void r.housekeepingScope.run(() => Promise.all([resyncLoop(r), reapplyLoop(r), readLoop(r)])).catch(() => undefined);
}

/** Housekeeping never fails the workflow; `again` is asked for when a ContinueAsNew cut it short. */
async function quietly(r: Resource, what: string, work: () => Promise<void>, again: () => void): Promise<void> {
  r.housekeeping++;
  try {
    await work();
  } catch (err) {
    if (isCancellation(err)) return;
    if (err instanceof ContinueAsNewDue) again();
    else if (err instanceof Blocked) r.ctx.event('Warning', 'Blocked', err.message);
    else log.warn(`${what} failed`, { error: String(err) });
  } finally {
    r.housekeeping--;
  }
}

/** Live Deployments, with the replicas and template each should have. */
function liveVersions(r: Resource) {
  const s = r.state;
  return [
    ...[s.current?.buildId, s.target?.buildId]
      .filter((b): b is string => !!b)
      .map((buildId) => ({ buildId, replicas: s.desired!.spec.replicas, heal: true })),
    ...s.deprecated
      .filter((v) => !r.ctx.removing.has(v.buildId))
      .map((v) => ({ buildId: v.buildId, replicas: v.scaledDown ? 0 : s.desired!.spec.replicas })),
  ].filter((v) => s.templates?.[v.buildId] !== undefined); // the builds it renders (not adopted ones)
}

/** Level-triggered self-healing: recreates a live Deployment deleted by hand, removes strays. Reads only, unless one is missing. */
async function resyncLoop(r: Resource): Promise<never> {
  const { ctx, owner } = r;
  /** The uids of the strays with pods the last round saw (the next scales them to 0 if they are strays still). */
  let strayWithPods: string[] = [];
  for (;;) {
    // No new round once a ContinueAsNew is due (a stream of resync signals must not hold it off).
    await condition(() => r.state.resyncDue === true && !ctx.continueAsNewDue(), r.state.timings.resyncIntervalMs, {
      summary: 'periodic resync',
    });
    r.state.resyncDue = false;
    if (!r.state.desired || r.state.deleting) continue;
    await quietly(
      r,
      'resync',
      async () => {
        // The spec may have changed unseen, or the resource been deleted unseen (its finalizer removed while no
        // watcher ran): it must not be healed forever.
        await r.readOwner();
        if (r.state.deleting || ctx.handedAway) return;
        const { recreated, healed } = await ctx.call(
          'reconcile the Deployments',
          () => ctx.kube.reconcileDeployments({ owner, versions: liveVersions(r) }),
          { background: true },
        );
        for (const name of recreated)
          ctx.event('Warning', 'DeploymentRecreated', `${name} was missing and is recreated`);
        for (const name of healed)
          ctx.event('Warning', 'DeploymentHealed', `${name} was changed by hand and is applied again`);
        // Deployments of ours that no version needs any more: deleted at 0 pods, scaled to 0 when seen with pods
        // two rounds running (an apply landed by a workflow task that was lost, then decided otherwise).
        const live = [...liveVersions(r).map((v) => v.buildId), ...ctx.removing, ...liveForeignBuilds(r.state)];
        const sweep = await ctx.call(
          'remove stray Deployments',
          () => ctx.kube.removeStrayDeployments(owner, live, strayWithPods),
          { background: true },
        );
        strayWithPods = sweep.withPods;
        for (const name of sweep.scaledDown)
          ctx.event('Warning', 'StrayDeploymentScaledDown', `${name} belongs to no live version: scaled to 0`);
        for (const name of sweep.deleted)
          ctx.event('Normal', 'StrayDeploymentDeleted', `${name} belongs to no live version and had no pods`);
      },
      () => void (r.state.resyncDue = true),
    );
  }
}

/** A message asked for a read. */
async function readLoop(r: Resource): Promise<never> {
  for (;;) {
    await condition(() => r.state.readDue === true && !r.state.deleting && !r.ctx.continueAsNewDue());
    let failed = false;
    await quietly(
      r,
      'read the resource',
      async () => {
        try {
          await r.readOwner();
        } catch (err) {
          if (!(err instanceof Blocked)) throw err;
          failed = true; // a refusal (RBAC still propagating…): read again after a while, the wake-up is kept
          throw err;
        }
      },
      () => void (r.state.readDue = true),
    );
    if (failed) {
      r.state.readDue = true;
      await condition(() => r.state.deleting || r.ctx.continueAsNewDue(), 30_000, {
        summary: 'read the resource again after a refusal',
      });
    }
  }
}

/** New connection, Deployment settings or template: the current and target Deployments are applied again at once. */
async function reapplyLoop(r: Resource): Promise<never> {
  for (;;) {
    await condition(() => r.state.reapplyDue === true && !r.state.deleting && !r.ctx.continueAsNewDue());
    r.state.reapplyDue = false;
    await quietly(
      r,
      're-apply',
      async () => {
        for (const buildId of [r.state.current?.buildId, r.state.target?.buildId]) {
          if (buildId) await ensureDeployment(r.ctx, buildId);
        }
      },
      () => void (r.state.reapplyDue = true),
    );
  }
}
