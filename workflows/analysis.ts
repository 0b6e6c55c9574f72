/**
 * Analysis from Temporal itself: at the end of a step, the target's failure rate (closed executions Failed /
 * TimedOut on its version, from visibility) against `analysis.maxFailurePercentage` and the current version's
 * rate. Too few executions: the step waits longer (up to `maxWait`), then `inconclusivePolicy` decides. A failed
 * analysis follows `gateFailurePolicy`, like a failed gate. The verdict is pure (`analysisVerdict`).
 */
import { formatDuration, parseDuration } from '../api/duration.js';
import type { Analysis } from '../api/temporal-worker-deployment.js';
import type { RolloutContext } from './context.js';
import { analysisVerdict, isPaused, recheckDelay, type AnalysisVerdict } from './decisions.js';
import type { GateOutcome } from './gates.js';
import { waitWhilePaused } from './waiting.js';
import { stepAt } from './state.js';

const now = () => new Date();

export async function analyse(ctx: RolloutContext, analysis: Analysis, label: string): Promise<GateOutcome> {
  const { state } = ctx;
  const target = state.target!;
  const buildId = target.buildId;
  const step = (target.step ??= stepAt(now().toISOString()));
  const maxWaitMs = parseDuration(analysis.maxWait ?? '10m');
  for (let attempt = 0; ; attempt++) {
    const verdict = await measure(ctx, analysis);
    state.lastAnalysis = `${label}: ${verdict.message}`;
    ctx.markDirty();
    if (verdict.kind === 'pass') {
      ctx.event('Normal', 'AnalysisPassed', state.lastAnalysis);
      ctx.record('transition', 'AnalysisPassed', 'glidepath', state.lastAnalysis);
      return 'passed';
    }
    const waited = step.analysisWaitMs;
    if (verdict.kind === 'inconclusive' && waited < maxWaitMs) {
      if (attempt === 0)
        ctx.transition(
          state.phase,
          state.reason,
          `${label}: ${verdict.message}; waiting up to ${formatDuration(maxWaitMs - waited)} for more`,
        );
      const delay = Math.min(recheckDelay(attempt + 2, 15_000), maxWaitMs - waited);
      const started = Date.now();
      const interrupted = () =>
        state.target?.buildId !== buildId ||
        state.desired!.spec.rollout.analysis === undefined ||
        state.promote !== undefined ||
        isPaused(state);
      await ctx.wait(interrupted, delay, `wait for executions on ${buildId} to analyse`);
      step.analysisWaitMs = waited + (Date.now() - started);
      if (state.desired!.spec.rollout.analysis === undefined) return 'passed'; // the spec no longer asks for it
      const promote = state.promote;
      if (promote) {
        state.promote = undefined; // a person's go-ahead: no need to wait for more executions
        return promote.full ? 'promotedFully' : 'passed';
      }
      if (isPaused(state)) await waitWhilePaused(ctx, { promoteEnds: true });
      ctx.checkpoint();
      continue;
    }
    const failed = verdict.kind === 'fail';
    const policy = failed ? ctx.spec().rollout.gateFailurePolicy : (analysis.inconclusivePolicy ?? 'Pause');
    const cause = failed ? 'AnalysisFailed' : 'AnalysisInconclusive';
    if (policy === 'Pass') {
      ctx.event('Warning', cause, `${state.lastAnalysis}; inconclusivePolicy is Pass: going on`);
      return 'passed';
    }
    if (policy === 'Abort') {
      state.aborted = { buildId, reason: `analysis ${label}: ${verdict.message}`, cause };
      return 'aborted';
    }
    const outcome = await pauseOnAnalysis(ctx, buildId, cause, verdict, label);
    if (outcome !== 'again') return outcome;
    step.analysisWaitMs = 0;
    step.startedAt = now().toISOString(); // `retry`: a fresh window
  }
}

/** Counts the target's (and, for the ratio, the current version's) outcomes since the step began. */
async function measure(ctx: RolloutContext, analysis: Analysis): Promise<AnalysisVerdict> {
  const { state } = ctx;
  const target = state.target!;
  const since = {
    sinceIso: target.step?.startedAt ?? target.rampingSince ?? now().toISOString(),
    ...(analysis.workflowTypes ? { workflowTypes: analysis.workflowTypes } : {}),
  };
  const where = ctx.temporalTarget(target.place);
  const mine = await ctx.call(`count the outcomes on ${target.buildId}`, () =>
    ctx.temporal.countOutcomes(where, target.buildId, since),
  );
  const current = state.current;
  const theirs =
    current && analysis.maxFailureRatioToCurrent !== undefined
      ? await ctx.call(`count the outcomes on ${current.buildId}`, () =>
          ctx.temporal.countOutcomes(ctx.temporalTarget(current.place), current.buildId, since),
        )
      : undefined;
  return analysisVerdict(
    analysis,
    { buildId: target.buildId, ...mine },
    current && theirs ? { buildId: current.buildId, ...theirs } : undefined,
  );
}

/**
 * Policy Pause: held (Paused, AnalysisFailed / AnalysisInconclusive) until a person decides. Resume or promote
 * go on (promote {full}: current now); `retry` analyses again over a fresh window; abort stops the rollout.
 */
async function pauseOnAnalysis(
  ctx: RolloutContext,
  buildId: string,
  cause: 'AnalysisFailed' | 'AnalysisInconclusive',
  verdict: AnalysisVerdict,
  label: string,
): Promise<GateOutcome | 'again'> {
  const { state } = ctx;
  state.pausedBy = { reason: `analysis ${label}: ${verdict.message}`, buildId, cause };
  ctx.transition(
    'Paused',
    cause,
    `analysis ${label}: ${verdict.message}; resume or promote to go on, retry to analyse again, abort to stop`,
    'Warning',
  );
  for (;;) {
    await ctx.wait(() => !isPaused(state) || state.promote !== undefined);
    if (!isPaused(state) || state.promote !== undefined) break;
    ctx.checkpoint();
  }
  const promote = state.promote;
  state.pausedBy = undefined;
  if (promote) {
    state.promote = undefined;
    return promote.full ? 'promotedFully' : 'passed';
  }
  // `retry` asked for another analysis; `resume` goes on.
  const again = state.target?.reanalyse === true;
  if (state.target) state.target.reanalyse = undefined;
  return again ? 'again' : 'passed';
}
