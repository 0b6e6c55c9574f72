/**
 * One rollout of the target build, top to bottom, as a person describes it: apply the versioned Deployment
 * → wait until it is available → wait until its workers poll Temporal → gate → route (AllAtOnce / Progressive /
 * Manual) → current. Every step starts from the state, so the rollout can stop anywhere (a superseding spec, an
 * abort, ContinueAsNew, a restart) and pick up where it was.
 */
import { ActivityFailure, ApplicationFailure, CancellationScope } from '@temporalio/workflow';
import { formatDuration, parseDuration } from '../api/duration.js';
import { promotedPastGate } from '../api/names.js';
import { limitCheckAfterMs } from '../api/timings.js';
import type { RolloutStep } from '../api/temporal-worker-deployment.js';
import type { RegistrationCheck, VersionRegistration } from '../activities/index.js';
import { type RolloutContext } from './context.js';
import { deadlinePassed, rootCause } from './failures.js';
import { stepAt, type StepProgress, type Target } from './state.js';
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
} from './decisions.js';
import { ensureDeployment } from './deployments.js';
import { gateEvidence, passGate } from './gates.js';
import { rollBack } from './rollback.js';
import { heldIsOurs, makeCurrent, makeRoomForVersion, routingWrite, stillTarget } from './routing.js';
import type { Sunsets } from './sunset.js';
import { waitUntilAvailable, waitWhilePaused } from './waiting.js';

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
  if (target.stage === 'deploying') {
    // A new resource's Deployment may be applied already, by the adoption check, with the routing read.
    const early = appliedEarly?.buildId === buildId ? appliedEarly : undefined;
    ctx.transition('Deploying', 'Deploying', `applying the Deployment of ${buildId}`);
    if (early) stillTarget(ctx, buildId); // no await on this path to notice a superseding spec or a deletion
    // The apply first: inside the task, calls take turns.
    const [, routing] = early
      ? [undefined, early.routing]
      : await Promise.all([
          ensureDeployment(ctx, buildId),
          ctx.call('describe the worker deployment', () => ctx.temporal.describeRouting(ctx.temporalTarget())),
        ]);
    if (!state.current && routing.current)
      state.current = { buildId: routing.current, since: now().toISOString(), place: target.place };
    if (state.current?.buildId === buildId) return makeCurrent(ctx, sunsets, buildId);
    await makeRoomForVersion(ctx, buildId, routing);
    target.stage = 'registering';
  }

  // 2. Available, 3. registered.
  if (target.stage === 'registering') {
    await waitUntilAvailable(ctx, buildId);
    ctx.transition('WaitingForPollers', 'WaitingForPollers', `waiting for ${buildId} workers to poll Temporal`);
    const { taskQueues, unversionedPollers, workflowTaskQueues } = await awaitRegistered(ctx, buildId);
    target.registration = { taskQueues, unversionedPollers, ...(workflowTaskQueues ? { workflowTaskQueues } : {}) };
    target.stage = 'gating';
  }
  const registration = target.registration!;

  // 4. The rollout's gate (again when a new generation changed it: see the routing loop).
  if (target.stage === 'gating') {
    if ((await rolloutGate(ctx, registration)) === 'aborted') return abandon(ctx, sunsets, buildId);
    target.stage = analysisWindow(ctx) ? 'analysing' : 'routing';
  }

  // AllAtOnce / Manual with `analysis.window`: the target is analysed for that long before promotion.
  // An edited spec holds the window again with what it says now (the time held so far counts).
  while (target.stage === 'analysing') {
    const analysis = ctx.spec().rollout.analysis;
    if (analysisWindow(ctx) && !target.promotedFully) {
      const window: RolloutStep = { rampPercentage: 0, pauseDuration: analysis!.window };
      const step = (target.step ??= stepAt(now().toISOString()));
      ctx.transition('Gating', 'Gating', `analysing ${buildId} for ${analysis!.window} before promotion`);
      const held = await holdStep(
        ctx,
        step,
        window,
        'the analysis window',
        state.desired!.generation,
        (ms) => `analysis window of ${buildId}: ${formatDuration(ms)}`,
      );
      if (held === 'edited') continue;
      if (held === 'elapsed') {
        const outcome = await analyse(ctx, analysis!, 'before promotion');
        if (outcome === 'aborted') return abandon(ctx, sunsets, buildId);
        if (outcome === 'promotedFully') target.promotedFully = true;
      } else target.promotedFully = true; // a person's go-ahead ends the window
    }
    target.step = undefined;
    target.stage = 'routing';
  }

  // 5. Route, as the spec in force says (it may change on the way: each round reads it again).
  if (!state.current && firstVersionRouting(registration.unversionedPollers) === 'currentNow')
    return makeCurrent(ctx, sunsets, buildId);
  for (;;) {
    stillTarget(ctx, buildId);
    // A new generation that changed the gate runs it before the next routing change.
    if (ctx.spec().rollout.gate && target.gateKey === undefined && (await rolloutGate(ctx, registration)) === 'aborted')
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
      // From one ramp to the next: the change is recorded first, its report follows (design/calls-inside-the-task.md).
      const stepping = target.rampPercentage !== undefined;
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
              () =>
                ctx.routingCall(
                  (a) =>
                    a.setRamping(
                      t,
                      buildId,
                      step.rampPercentage,
                      ...ctx.routingOptions(t, gateEvidence(state, target)),
                    ),
                  {
                    reportInNextTask: stepping,
                  },
                ),
              heldIsOurs,
            ),
          );
        }),
      );
      stillTarget(ctx, buildId);
      const at = now().toISOString();
      target.rampPercentage = step.rampPercentage;
      target.rampingSince ??= at;
      target.step = stepAt(at, plan.index);
    }
    // The step at the live ramp (after a ContinueAsNew, an adoption, or steps edited around it).
    const progress = (target.step = { ...(target.step ?? stepAt(now().toISOString())), index: plan.index });
    ctx.transition('Ramping', 'Ramping', `step ${plan.index + 1}/${steps.length}: ${stepSummary(step)}`);
    const outcome = await holdStep(ctx, progress, step, `step ${plan.index + 1}/${steps.length}`, generation);
    if (outcome === 'edited') continue;
    if (outcome === 'promotedFully') {
      target.promotedFully = true;
      continue;
    }
    const analysis = ctx.spec().rollout.analysis;
    if (outcome === 'elapsed' && analysis && !progress.analysed) {
      const analysed = await analyse(ctx, analysis, `step ${plan.index + 1}/${steps.length}`);
      if (analysed === 'aborted') return abandon(ctx, sunsets, buildId);
      if (analysed === 'promotedFully') target.promotedFully = true;
      progress.analysed = true;
    }
    if (outcome === 'promoted' && step.gate) target.stepGatePassedBy = promotedPastGate; // it ends the step, gate and all
    if (outcome === 'elapsed' && step.gate) {
      const label = `step-${plan.index + 1}`;
      const gated = await passGate(ctx, step.gate, registration, label);
      if (gated === 'aborted') return abandon(ctx, sunsets, buildId);
      if (gated === 'promotedFully') target.promotedFully = true;
      target.stepGatePassedBy = gated === 'passed' ? target.gateRunIds?.[label] : promotedPastGate;
    }
    progress.done = true;
  }
}

/** Runs the spec's rollout gate unless it passed; 'aborted' when it failed under policy Abort. */
async function rolloutGate(
  ctx: RolloutContext,
  registration: NonNullable<Target['registration']>,
): Promise<'aborted' | undefined> {
  const target = ctx.state.target!;
  const gate = ctx.spec().rollout.gate;
  if (!gate || target.gateKey !== undefined) return undefined;
  const outcome = await passGate(ctx, gate, registration, 'rollout');
  if (outcome === 'aborted') return 'aborted';
  if (gateKey(ctx.spec().rollout.gate) !== gateKey(gate)) {
    // The spec's gate changed while this one ran: the new one runs, under a run ID of its own.
    if (target.gateRunIds) delete target.gateRunIds.rollout;
    return undefined;
  }
  target.gateKey = gateKey(gate);
  target.gatePassedBy = outcome === 'passed' ? target.gateRunIds?.rollout : promotedPastGate;
  if (outcome === 'promotedFully') target.promotedFully = true;
  return undefined;
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
 * Waits for the version's workers to poll Temporal, within the progress deadline (a wait made again keeps it); past
 * it the phase says NoPollers with a hint, and the wait goes on (a fixed image or spec ends it).
 */
async function awaitRegistered(ctx: RolloutContext, buildId: string): Promise<VersionRegistration> {
  let deadline = Date.now() + ctx.spec().progressDeadlineSeconds * 1000;
  // Why the last attempt that failed did (a server's refusals): a wait made again starts without it. A limit the
  // server named stays news until an attempt fails otherwise: the attempts it cuts short end before any heartbeat.
  let refused: string | undefined;
  let limited: string | undefined;
  let attemptStartedAt = Date.now();
  for (;;) {
    try {
      return await ctx.call(
        `wait for ${buildId} to poll Temporal`,
        () =>
          ctx
            .waitsWithin(deadline - (attemptStartedAt = Date.now()))
            .awaitVersionRegistered(ctx.temporalTarget(), buildId)
            .catch((err: unknown) => {
              if (err instanceof ActivityFailure && err.cause instanceof ApplicationFailure) {
                refused = rootCause(err);
                limited = err.cause.type === 'WorkerDeploymentLimit' ? refused : undefined;
              }
              throw err;
            }),
        { isExpected: deadlinePassed },
      );
    } catch (err) {
      if (!deadlinePassed(err)) throw err;
      // The wait's last heartbeat says whether its last check was refused (then the server, not the workers, is news);
      // an attempt that timed out before its first heartbeat says nothing, and the attempt before it speaks.
      const details = err.cause.lastHeartbeatDetails as RegistrationCheck | undefined;
      // A limit is news only if the attempt that timed out ended before its own limit check could have passed.
      const stillLimited = Date.now() - attemptStartedAt < limitCheckAfterMs ? limited : undefined;
      const lastFailure = stillLimited ?? (details ? details.lastCheckFailure : refused);
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
      deadline = Date.now() + 3_600_000;
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
  progress: StepProgress,
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
    await waitWhilePaused(ctx, { promoteEnds: true, leftMs: pause - progress.heldMs, label });
    if (state.promote !== undefined) return takePromote(ctx);
    if (state.desired!.generation !== generation) return 'edited';
    const remaining = pause - progress.heldMs;
    if (remaining <= 0) return 'elapsed';
    const started = Date.now();
    progress.heldSince = new Date(started).toISOString();
    ctx.showDetails(); // "… 1m40s left (until 14:03:20 UTC)"
    try {
      await ctx.wait(
        () => isPaused(state) || state.promote !== undefined || state.desired!.generation !== generation,
        remaining,
        summary(remaining),
      );
    } finally {
      progress.heldSince = undefined;
    }
    progress.heldMs += Date.now() - started;
    ctx.showDetails();
    ctx.checkpoint();
  }
}

/** Whether the spec asks for an analysis window before promotion (AllAtOnce and Manual; Progressive analyses its steps). */
function analysisWindow(ctx: RolloutContext): boolean {
  return ctx.spec().rollout.analysis?.window !== undefined && ctx.spec().rollout.strategy !== 'Progressive';
}
