/**
 * One rollout of the target build, top to bottom, as a person describes it: apply the versioned Deployment
 * → wait until it is available → wait until its workers poll Temporal → gate → route (AllAtOnce / Progressive /
 * Manual) → current. Every step starts from the state, so the rollout can stop anywhere (a superseding spec, an
 * abort, ContinueAsNew, a restart) and pick up where it was.
 */
import { CancellationScope, CancelledFailure } from '@temporalio/workflow';
import { formatDuration, parseDuration } from '../api/duration.js';
import type { RolloutStep } from '../api/temporal-worker-deployment.js';
import type { RegistrationCheck, Routing, VersionRegistration } from '../activities/index.js';
import { type RolloutContext } from './context.js';
import { Blocked, managerHeldBy, timedOut } from './failures.js';
import type { Target, TemporalPlace } from './state.js';
import { adoptForeignVersions } from './adoption.js';
import { analyse } from './analysis.js';
import {
  firstVersionRouting,
  gateKey,
  isPaused,
  nextRampStep,
  noPollersMessage,
  placeOf,
  stepSummary,
  versionsToMakeRoom,
} from './decisions.js';
import { passGate } from './gates.js';
import type { Sunsets } from './sunset.js';
import { observe, readDeployment, waitUntilAvailable, waitWhilePaused } from './waiting.js';

const now = () => new Date();

export async function rollOut(ctx: RolloutContext, sunsets: Sunsets): Promise<void> {
  const { state } = ctx;
  // A worker deployment temporal-worker-controller managed: its versions first (the target may become one of them).
  const appliedEarly = await adoptForeignVersions(ctx, sunsets);
  const target = state.target!;
  const { buildId } = target;
  if (target.rollback) return rollBack(ctx, sunsets, buildId, target.rollback);

  // 1. The Deployment first: it is what someone who just ran `kubectl apply` waits to see. Temporal is asked
  //    meanwhile (adopting what it already routes to: a resource migrated from temporal-worker-controller).
  target.place ??= placeOf(state.desired!);
  if (!target.applied) {
    // A new resource's Deployment may be applied already, by the adoption check, with the routing read.
    const early = appliedEarly?.buildId === buildId ? appliedEarly : undefined;
    ctx.transition('Deploying', 'Deploying', `applying the Deployment of ${buildId}`);
    if (early) stillTarget(ctx, buildId); // no await on this path to notice a superseding spec or a deletion
    const [routing] = early
      ? [early.routing]
      : await Promise.all([
          ctx.call('describe the worker deployment', () => ctx.temporal.describeRouting(ctx.temporalTarget())),
          ensureDeployment(ctx, buildId),
        ]);
    if (!state.current && routing.current)
      state.current = { buildId: routing.current, since: now().toISOString(), place: target.place };
    if (state.current?.buildId === buildId) return makeCurrent(ctx, sunsets, buildId);
    await makeRoomForVersion(ctx, buildId, routing);
    target.applied = true;
  }

  // 2. Available, 3. registered (once: a run that continued as new past them goes on from there).
  if (!target.registration) {
    await waitUntilAvailable(ctx, buildId);
    ctx.transition('WaitingForPollers', 'WaitingForPollers', `waiting for ${buildId} workers to poll Temporal`);
    const { taskQueues, unversionedPollers, workflowTaskQueues } = await awaitRegistered(ctx, buildId);
    target.registration = { taskQueues, unversionedPollers, ...(workflowTaskQueues ? { workflowTaskQueues } : {}) };
  }
  const registration = target.registration;

  // 4. The rollout's gate, once (again when a new generation changed it: see the routing loop).
  if ((await rolloutGate(ctx, registration)) === 'aborted') return abandon(ctx, sunsets, buildId);

  // AllAtOnce / Manual with `analysis.window`: the target is analysed for that long before promotion.
  const analysis = ctx.spec().rollout.analysis;
  if (
    analysis?.window &&
    ctx.spec().rollout.strategy !== 'Progressive' &&
    !target.stepAnalysed &&
    !target.promotedFully
  ) {
    const window: RolloutStep = { rampPercentage: 0, pauseDuration: analysis.window };
    target.stepStartedAt ??= now().toISOString();
    ctx.transition('Gating', 'Gating', `analysing ${buildId} for ${analysis.window} before promotion`);
    const held = await holdStep(
      ctx,
      target,
      window,
      'the analysis window',
      state.desired!.generation,
      (ms) => `analysis window of ${buildId}: ${formatDuration(ms)}`,
    );
    if (held === 'elapsed' || held === 'edited') {
      const outcome = await analyse(ctx, analysis, 'before promotion');
      if (outcome === 'aborted') return abandon(ctx, sunsets, buildId);
      if (outcome === 'promotedFully') target.promotedFully = true;
    }
    if (held === 'promoted' || held === 'promotedFully') target.promotedFully = true; // a person's go-ahead ends the window
    target.stepAnalysed = true;
  }

  // 5. Route, as the spec in force says (it may change on the way: each round reads it again).
  if (!state.current && firstVersionRouting(registration.unversionedPollers) === 'currentNow')
    return makeCurrent(ctx, sunsets, buildId);
  for (;;) {
    stillTarget(ctx, buildId);
    // A new generation that changed the gate runs it before the next routing change.
    if (ctx.spec().rollout.gate && !target.gatePassed && (await rolloutGate(ctx, registration)) === 'aborted')
      return abandon(ctx, sunsets, buildId);
    const generation = state.desired!.generation;
    const plan = nextRampStep(ctx.spec().rollout, target);
    if (plan.kind === 'current') return makeCurrent(ctx, sunsets, buildId);
    if (plan.kind === 'awaitPromotion') {
      ctx.transition('AwaitingPromotion', 'AwaitingPromotion', `${buildId} is ready; send promote to make it current`);
      if ((await awaitPromotion(ctx, generation)) !== 'edited') target.promotedFully = true;
      continue;
    }
    const steps = ctx.spec().rollout.steps ?? [];
    const step = steps[plan.index]!;
    if (plan.rampNow) {
      await waitWhilePaused(ctx);
      stillTarget(ctx, buildId);
      // Not cancellable: an abort arriving meanwhile clears the ramp after the call has landed.
      await routingWrite(ctx, { stillWanted: () => stillTarget(ctx, buildId) }, () =>
        CancellationScope.nonCancellable(async () => {
          const t = ctx.temporalTarget();
          const what = `ramp ${buildId} to ${step.rampPercentage}%`;
          ctx.routed(
            t,
            await ctx.call(
              what,
              () => ctx.routingCall((a) => a.setRamping(t, buildId, step.rampPercentage, ...ctx.routingOptions(t))),
              heldIsOurs,
            ),
          );
        }),
      );
      stillTarget(ctx, buildId);
      const at = now().toISOString();
      Object.assign(target, {
        stepIndex: plan.index,
        rampPercentage: step.rampPercentage,
        rampingSince: target.rampingSince ?? at,
        stepHeldMs: 0,
        stepDone: false,
        stepStartedAt: at,
        stepAnalysed: false,
        analysisWaitMs: 0,
      });
    }
    target.stepIndex = plan.index;
    ctx.transition('Ramping', 'Ramping', `step ${plan.index + 1}/${steps.length}: ${stepSummary(step)}`);
    const outcome = await holdStep(ctx, target, step, `step ${plan.index + 1}/${steps.length}`, generation);
    if (outcome === 'edited') continue;
    if (outcome === 'promotedFully') {
      target.promotedFully = true;
      continue;
    }
    if (outcome === 'elapsed' && analysis && !target.stepAnalysed) {
      const analysed = await analyse(ctx, analysis, `step ${plan.index + 1}/${steps.length}`);
      if (analysed === 'aborted') return abandon(ctx, sunsets, buildId);
      if (analysed === 'promotedFully') target.promotedFully = true;
      target.stepAnalysed = true;
    }
    if (outcome === 'elapsed' && step.gate) {
      const gated = await passGate(ctx, step.gate, registration, `step-${plan.index + 1}`);
      if (gated === 'aborted') return abandon(ctx, sunsets, buildId);
      if (gated === 'promotedFully') target.promotedFully = true;
    }
    target.stepDone = true;
  }
}

/** Runs the spec's rollout gate unless it passed; 'aborted' when it failed under policy Abort. */
async function rolloutGate(
  ctx: RolloutContext,
  registration: NonNullable<Target['registration']>,
): Promise<'aborted' | undefined> {
  const target = ctx.state.target!;
  const gate = ctx.spec().rollout.gate;
  if (!gate || target.gatePassed) return undefined;
  const outcome = await passGate(ctx, gate, registration, 'rollout');
  if (outcome === 'aborted') return 'aborted';
  target.gatePassed = true;
  target.gateKey = gateKey(gate);
  if (outcome === 'promotedFully') target.promotedFully = true;
  return undefined;
}

/**
 * Throws (as a cancellation) when the build is no longer the target: a superseding spec or an abort cancels
 * the rollout's scope, but code that resumes synchronously must not act for the old target before the next await.
 */
function stillTarget(ctx: RolloutContext, buildId: string): void {
  if (ctx.state.target?.buildId !== buildId || ctx.state.deleting)
    throw new CancelledFailure(`${buildId} is no longer the target`);
}

/** A failed gate or analysis with policy Abort: the target gets no more work and is sunset; the main loop clears its ramp. */
function abandon(ctx: RolloutContext, sunsets: Sunsets, buildId: string): void {
  const place = ctx.state.target?.place;
  sunsets.retire(buildId, place);
  const movePinned = ctx.spec().rollout.onAbort?.movePinned === true;
  ctx.state.rampsToClear = [
    ...(ctx.state.rampsToClear ?? []),
    { buildId, ...(place ? { place } : {}), ...(movePinned ? { movePinned } : {}) },
  ];
  ctx.state.target = undefined;
}

/**
 * Back to a build that was current moments ago and still runs (the spec went back to it, or `rollback`): current
 * at once, all at once — no gate, no steps, whatever the strategy or a pause says.
 */
async function rollBack(
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
  if (!ctx.state.deployments[buildId]?.exists || (read.availableReplicas ?? 0) === 0) {
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
  ctx.event(
    'Normal',
    'PinnedExecutionsMoved',
    `moved ${moved.moved} of ${moved.matched} executions pinned to ${from} onto ${to}`,
  );
  ctx.record(
    'transition',
    'PinnedExecutionsMoved',
    'glidepath',
    `moved ${moved.moved} of ${moved.matched} executions pinned to ${from} onto ${to}`,
    from,
  );
}

/** Server-side applies a live build's Deployment from its own template and the spec in force. */
export async function ensureDeployment(ctx: RolloutContext, buildId: string): Promise<void> {
  const template = ctx.state.templates?.[buildId];
  if (!template) {
    // Adopted from temporal-worker-controller: its settings follow the spec, its template stays (it is the build).
    if (ctx.state.foreign?.[buildId]) {
      const adopted = await ctx.call(`update the adopted Deployment of ${buildId}`, () =>
        ctx.kube.updateAdoptedDeployment({ owner: ctx.owner, desired: ctx.state.desired!, buildId }),
      );
      observe(ctx, adopted);
    }
    return; // a version adopted from Temporal: not ours to render
  }
  const obs = await ctx.call(`apply the Deployment of ${buildId}`, () =>
    ctx.kube.ensureVersionedDeployment({ owner: ctx.owner, desired: ctx.state.desired!, buildId, template }),
  );
  observe(ctx, obs);
}

/**
 * Waits for the version's workers to poll Temporal, within the progress deadline (schedule-to-close: retries
 * included); past it the phase says NoPollers with a hint, and the wait goes on (a fixed image or spec ends it).
 */
async function awaitRegistered(ctx: RolloutContext, buildId: string): Promise<VersionRegistration> {
  let budgetMs = ctx.spec().progressDeadlineSeconds * 1000;
  for (;;) {
    try {
      return await ctx.call(
        `wait for ${buildId} to poll Temporal`,
        () => ctx.waitsWithin(budgetMs).awaitVersionRegistered(ctx.temporalTarget(), buildId),
        {
          isExpected: timedOut,
        },
      );
    } catch (err) {
      if (!timedOut(err)) throw err;
      // The wait's last heartbeat says whether its last check was refused (then the server, not the workers, is news).
      const lastFailure = (err.cause.lastHeartbeatDetails as RegistrationCheck | undefined)?.lastCheckFailure;
      ctx.transition(
        'Failed',
        'NoPollers',
        noPollersMessage(
          buildId,
          ctx.spec().progressDeadlineSeconds,
          typeof lastFailure === 'string' ? lastFailure : undefined,
        ),
        'Warning',
      );
      budgetMs = 3_600_000;
      ctx.checkpoint();
    }
  }
}

/** Waits for promote (a pause shows Paused meanwhile). `edited`: the spec changed since `generation`; plan again. */
async function awaitPromotion(
  ctx: RolloutContext,
  generation: number,
): Promise<'promoted' | 'promotedFully' | 'edited'> {
  const { state } = ctx;
  for (;;) {
    await ctx.wait(() => state.promote !== undefined || isPaused(state) || state.desired!.generation !== generation);
    if (state.promote !== undefined) return takePromote(ctx);
    if (state.desired!.generation !== generation) return 'edited';
    if (isPaused(state)) await waitWhilePaused(ctx, { promoteEnds: true });
    ctx.checkpoint();
  }
}

function takePromote(ctx: RolloutContext): 'promoted' | 'promotedFully' {
  const full = ctx.state.promote?.full;
  ctx.state.promote = undefined;
  return full ? 'promotedFully' : 'promoted';
}

/**
 * Holds a Progressive step for its pause (paused time excluded), or until promoted or the spec changes. Its timer's
 * summary in the Web UI: `summary` of the time left, by default "step 1/3: ramp 25% for 2m".
 */
async function holdStep(
  ctx: RolloutContext,
  target: Target,
  step: RolloutStep,
  label: string,
  generation: number,
  summary: (remainingMs: number) => string = (ms) => `${label}: ${stepSummary(step, ms)}`,
): Promise<'elapsed' | 'promoted' | 'promotedFully' | 'edited'> {
  const { state } = ctx;
  if (!step.pauseDuration) {
    ctx.transition('AwaitingPromotion', 'AwaitingPromotion', `${label}: ${stepSummary(step)}`);
    return awaitPromotion(ctx, generation);
  }
  const pause = parseDuration(step.pauseDuration);
  for (;;) {
    await waitWhilePaused(ctx, { promoteEnds: true, leftMs: pause - (target.stepHeldMs ?? 0), label });
    if (state.promote !== undefined) return takePromote(ctx);
    if (state.desired!.generation !== generation) return 'edited';
    const remaining = pause - (target.stepHeldMs ?? 0);
    if (remaining <= 0) return 'elapsed';
    const started = Date.now();
    target.stepHeldSince = new Date(started).toISOString();
    ctx.showDetails(); // "… 1m40s left (until 14:03:20 UTC)"
    try {
      await ctx.wait(
        () => isPaused(state) || state.promote !== undefined || state.desired!.generation !== generation,
        remaining,
        summary(remaining),
      );
    } finally {
      target.stepHeldSince = undefined;
    }
    target.stepHeldMs = (target.stepHeldMs ?? 0) + (Date.now() - started);
    ctx.showDetails();
    ctx.checkpoint();
  }
}

/** How a build became current, for the status: a rollout's end (default) or a rollback. */
interface Becoming {
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
async function routingWrite(
  ctx: RolloutContext,
  o: { stillWanted: () => void; untilDeleted?: boolean },
  write: () => Promise<void>,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    let holder: string | undefined;
    try {
      await write();
      ctx.managerBack();
      return;
    } catch (err) {
      holder = managerHeldBy(err);
      if (holder === undefined) throw err;
    }
    await ctx.waitForManager(holder, attempt, o.untilDeleted === false ? { untilDeleted: false } : {});
    o.stillWanted();
  }
}

/** `call` options of a routing write: a refusal for the manager identity is the caller's to wait out (routingWrite). */
const heldIsOurs = { isExpected: (err: unknown) => managerHeldBy(err) !== undefined };

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
  await routingWrite(ctx, { stillWanted, untilDeleted: false }, async () => {
    ctx.promoting = true;
    try {
      await CancellationScope.nonCancellable(async () => {
        const t = ctx.temporalTarget();
        ctx.routed(
          t,
          await ctx.call(
            `make ${buildId} current`,
            () => ctx.temporal.setCurrent(t, buildId, ...ctx.routingOptions(t)),
            { untilDeleted: false, ...heldIsOurs },
          ),
        );
        const previous = state.current;
        const place = state.target?.buildId === buildId ? state.target.place : previous?.place;
        state.current = { buildId, since: now().toISOString(), ...(place ? { place } : {}) };
        if (state.target?.buildId === buildId) state.target = undefined;
        state.deprecated = state.deprecated.filter((v) => v.buildId !== buildId);
        if (previous && previous.buildId !== buildId) {
          sunsets.retire(previous.buildId, previous.place);
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
}

/** Makes room under the server's version cap; says so in a condition while none can be made. */
async function makeRoomForVersion(ctx: RolloutContext, buildId: string, routing?: Routing): Promise<void> {
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
