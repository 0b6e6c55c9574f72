/**
 * Routing changes: each claims the manager identity on the way, waits out another holder outside its
 * non-cancellable write, and makes room under the server's version cap before a new version registers.
 */
import { CancellationScope, CancelledFailure } from '@temporalio/workflow';
import type { Routing, TemporalRef } from '../activities/index.js';
import type { RolloutContext } from './context.js';
import { managerHeldBy } from './failures.js';
import { managerBack, waitForManager } from './manager-identity.js';
import { versionsToMakeRoom } from './decisions.js';
import { gateEvidence } from './gates.js';
import type { Sunsets } from './sunset.js';
import { waitWhilePaused } from './waiting.js';

const now = () => new Date();

const sameWorkerDeployment = (a: TemporalRef, b: TemporalRef) =>
  a.hostPort === b.hostPort &&
  a.temporalNamespace === b.temporalNamespace &&
  a.owner.namespace === b.owner.namespace &&
  a.owner.name === b.owner.name;

/**
 * Throws (as a cancellation) when the build is no longer the target: a superseding spec or an abort cancels
 * the rollout's scope, but code that resumes synchronously must not act for the old target before the next await.
 */
export function stillTarget(ctx: RolloutContext, buildId: string): void {
  if (ctx.state.target?.buildId !== buildId || ctx.state.deleting)
    throw new CancelledFailure(`${buildId} is no longer the target`);
}

/** How a build became current, for the status: a rollout's end (default) or a rollback. */
export interface Becoming {
  reason?: 'RolloutComplete' | 'RolledBack';
  message?: string;
  /** A rollback is what a person in an incident needs now: a pause does not hold it. */
  ignorePause?: boolean;
}

/**
 * Runs a routing write. The write claims the manager identity itself, so while someone else holds it the write is
 * refused (`heldIsOurs`) and the wait for the hand-back runs here, outside the write's non-cancellable scope and
 * with `promoting` off: an abort, a rollback or a new target during it takes effect. `stillWanted` throws when the
 * write is no longer wanted after the wait.
 */
export async function routingWrite(
  ctx: RolloutContext,
  o: { stillWanted: () => void; untilDeleted?: boolean },
  write: () => Promise<void>,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    let holder: string | undefined;
    try {
      await write();
      managerBack(ctx);
      return;
    } catch (err) {
      holder = managerHeldBy(err);
      if (holder === undefined) throw err;
    }
    await waitForManager(ctx, holder, attempt, o.untilDeleted === false ? { untilDeleted: false } : {});
    o.stillWanted();
  }
}

/** `call` options of a routing write: a refusal for the manager identity is the caller's to wait out (routingWrite). */
export const heldIsOurs = { isExpected: (err: unknown) => managerHeldBy(err) !== undefined };

/** Makes the build current. Once asked, Temporal does it whatever happens here: the step is finished and recorded. */
export async function makeCurrent(
  ctx: RolloutContext,
  sunsets: Sunsets,
  buildId: string,
  how: Becoming = {},
): Promise<void> {
  const { state } = ctx;
  if (!how.ignorePause) await waitWhilePaused(ctx);
  if (state.current?.buildId !== buildId) stillTarget(ctx, buildId);
  const stillWanted = () => (state.current?.buildId !== buildId ? stillTarget(ctx, buildId) : undefined);
  let propagating = false;
  await routingWrite(ctx, { stillWanted, untilDeleted: false }, async () => {
    ctx.promoting = true;
    try {
      await CancellationScope.nonCancellable(async () => {
        const t = ctx.temporalTarget();
        const result = await ctx.call(
          `make ${buildId} current`,
          () =>
            ctx.temporalActivity.setCurrent(
              t,
              buildId,
              ...ctx.routingOptions(
                t,
                state.target?.buildId === buildId ? gateEvidence(state, state.target) : undefined,
              ),
            ),
          { untilDeleted: false, ...heldIsOurs },
        );
        ctx.routed(t, result);
        propagating = !!result?.propagating;
        const previous = state.current;
        const place = state.target?.buildId === buildId ? state.target.place : previous?.place;
        state.current = { buildId, since: now().toISOString(), ...(place ? { place } : {}) };
        if (state.target?.buildId === buildId) state.target = undefined;
        state.deprecated = state.deprecated.filter((v) => v.buildId !== buildId);
        if (previous && previous.buildId !== buildId) {
          // Read as draining by the set-current, on the Temporal it lives on: its sunset starts from that read.
          const readDraining =
            !!result?.draining?.includes(previous.buildId) &&
            sameWorkerDeployment(ctx.temporalTarget(previous.place), t);
          sunsets.retire(previous.buildId, previous.place, { readDraining });
          // It may be rolled back to, within rollout.rollbackWindow.
          const retired = state.deprecated.find((v) => v.buildId === previous.buildId);
          if (retired) retired.currentUntil = now().toISOString();
        }
        sunsets.sync();
      });
    } finally {
      ctx.promoting = false;
    }
  });
  ctx.transition('Ready', how.reason ?? 'RolloutComplete', how.message ?? `${buildId} is current`);
  if (propagating)
    ctx.event(
      'Warning',
      'RoutingPropagating',
      `${buildId} is current; Temporal was still passing the routing to its task queues when the set-current stopped reading: new executions may start on the previous version for a while`,
    );
}

/** Makes room under the server's version cap; says so in a condition while none can be made. */
export async function makeRoomForVersion(ctx: RolloutContext, buildId: string, routing?: Routing): Promise<void> {
  const { state } = ctx;
  for (;;) {
    const r =
      routing ??
      (await ctx.call('describe the worker deployment', () => ctx.temporal.describeRouting(ctx.temporalTarget())));
    routing = undefined;
    if (r.versions.some((v) => v.buildId === buildId)) return;
    const keep = [buildId, ...[state.current?.buildId, r.current, r.ramping].filter((b): b is string => !!b)];
    const plan = versionsToMakeRoom(r.versions, keep, state.timings.maxVersions);
    for (const b of plan.remove)
      await ctx.call(`delete version ${b}`, () => ctx.temporal.deleteVersion(ctx.temporalTarget(), b));
    if (!plan.atCap) return;
    ctx.transition(
      'Deploying',
      'VersionLimitReached',
      `the worker deployment has ${r.versions.length} versions (the server allows ${state.timings.maxVersions}); waiting for old ones to drain`,
      'Warning',
    );
    await ctx.wait(() => false, 60_000, 'wait for room under the version cap');
    ctx.checkpoint();
  }
}
