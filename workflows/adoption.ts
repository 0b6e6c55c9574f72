/**
 * Adoption of a worker deployment temporal-worker-controller managed, before the first rollout of
 * a lifecycle: its versioned Deployments become the resource's; the one whose pod template is the spec's template
 * unchanged is the spec's build (no new version, no ramp: it stays current if it is), the others are sunset like
 * ours once they are not current. The other controller's build IDs differ from Glidepath's (another hash of the
 * template), so the spec's computed build ID is aliased to the adopted one for as long as that build lives.
 */
import { CancellationScope } from '@temporalio/workflow';
import type { ForeignVersion, Routing } from '../activities/index.js';
import type { Control } from './controls.js';
import type { RolloutContext } from './context.js';
import { placeOf } from './decisions.js';
import type { Sunsets } from './sunset.js';
import type { RolloutState, Target, TemporalPlace } from './state.js';
import type { Desired } from '../api/resource.js';
import { observe } from './deployments.js';

/** What adopting the other controller's versions means for the state. Pure. */
export interface AdoptionPlan {
  /** Every adopted build, with its Deployment's name. */
  foreign: Record<string, string>;
  /** The adopted build that runs the spec's template: the spec's build from now on. */
  match?: string;
  /** Adopted builds neither current nor the match: sunset now (drained first, as any). */
  retire: string[];
  /** An adopted build holding the ramp that is not the match: its ramp is cleared. */
  clearRamp?: string;
  /** The match holds the ramp: the rollout goes on from the live ramp, never back to the first step. */
  liveRamp?: number;
}

/**
 * Which adopted build is the spec's (the one whose template is unchanged; Temporal's current first, then its
 * ramping one), which are sunset, and what happens to a ramp the other controller left.
 * @example planAdoption([{ buildId: 'v1-ab12', matchesTemplate: true, … }], { current: 'v1-ab12', … }).match === 'v1-ab12'
 */
export function planAdoption(
  found: Pick<ForeignVersion, 'buildId' | 'deploymentName' | 'matchesTemplate'>[],
  routing: Pick<Routing, 'current' | 'ramping' | 'rampPercentage'>,
): AdoptionPlan {
  const matching = found.filter((f) => f.matchesTemplate).map((f) => f.buildId);
  const match = [routing.current, routing.ramping].find((b) => b !== undefined && matching.includes(b)) ?? matching[0];
  const adopted = found.map((f) => f.buildId);
  return {
    foreign: Object.fromEntries(found.map((f) => [f.buildId, f.deploymentName])),
    ...(match ? { match } : {}),
    retire: adopted.filter((b) => b !== match && b !== routing.current),
    ...(routing.ramping && routing.ramping !== match && adopted.includes(routing.ramping)
      ? { clearRamp: routing.ramping }
      : {}),
    ...(match && match === routing.ramping ? { liveRamp: routing.rampPercentage } : {}),
  };
}

/** Adopted builds still in use (current, target or being sunset): their Deployments are no strays. */
export function liveForeignBuilds(state: RolloutState): string[] {
  const live = new Set([state.current?.buildId, state.target?.buildId, ...state.deprecated.map((v) => v.buildId)]);
  return Object.keys(state.foreign ?? {}).filter((b) => live.has(b));
}

/**
 * Before a new spec is folded in: adopted builds that are gone (sunset and deleted) are no longer foreign, and
 * the aliases to them go (that template gets Glidepath's own build again). In place.
 */
export function forgetGoneForeignBuilds(state: RolloutState): void {
  if (!state.foreign) return;
  const live = new Set(liveForeignBuilds(state));
  for (const b of Object.keys(state.foreign)) if (!live.has(b)) delete state.foreign[b];
  for (const [from, to] of Object.entries(state.aliases ?? {})) if (!live.has(to)) delete state.aliases![from];
}

/** A spec whose template an adopted build runs is that build. Pure. */
export function withAlias(state: Pick<RolloutState, 'aliases'>, desired: Desired): Desired {
  const alias = state.aliases?.[desired.buildId];
  return alias ? { ...desired, buildId: alias } : desired;
}

/** A control naming the spec's computed build (the watcher's annotations do) names the adopted build. Pure. */
export function withAliasedControl<C extends Control | string>(state: Pick<RolloutState, 'aliases'>, c: C): C {
  if (typeof c === 'string' || c.buildId === undefined) return c;
  const alias = state.aliases?.[c.buildId];
  return alias ? ({ ...(c as Control), buildId: alias } as C) : c;
}

/** Adopted builds are never rendered by Glidepath: no template is kept for them (after a new spec). In place. */
export function forgetForeignTemplates(state: RolloutState): void {
  for (const b of Object.keys(state.foreign ?? {})) delete state.templates?.[b];
}

/** The adoption check found nothing to adopt and applied the target's Deployment. */
export interface AppliedWithAdoption {
  buildId: string;
  /** The routing read beside it: the apply's own round would have read it. */
  routing: Routing;
}

/**
 * Looks for the other controller's Deployments once, before the first rollout of a lifecycle (nothing current yet,
 * the spec's own build the target), and adopts them (see `planAdoption`). With nothing to adopt, the same activity
 * applies the target's Deployment (`applyWithAdoption`), and says so.
 */
export async function adoptForeignVersions(
  ctx: RolloutContext,
  sunsets: Sunsets,
): Promise<AppliedWithAdoption | undefined> {
  const { state } = ctx;
  const target = state.target;
  const desired = state.desired;
  if (
    state.adoptionChecked ||
    state.current ||
    !target ||
    !desired ||
    target.stage !== 'deploying' ||
    target.rollback ||
    target.buildId !== desired.buildId
  )
    return undefined;
  if (!state.templates?.[target.buildId]) return undefined;
  const { buildId } = target;
  // The apply first (inside the task, calls take turns): it is what someone who ran `kubectl apply` waits to see.
  const calls = [
    ctx.call(`apply the Deployment of ${buildId} (adopting temporal-worker-controller's, if any)`, () =>
      ctx.kube.adoptOrApplyDeployment({ owner: ctx.owner, buildId }),
    ),
    ctx.call('describe the worker deployment', () => ctx.temporal.describeRouting(ctx.temporalTarget())),
  ] as const;
  // An apply must land before the rollout moves on (a superseding spec, a deletion): both calls settle first.
  const [{ adopted: found, applied }, routing] = await allSettled(calls);
  state.adoptionChecked = true;
  if (applied) observe(ctx, applied);
  // A new spec meanwhile (new settings, a new connection) is applied by the rollout's own round, after this apply.
  const unchanged = state.target === target && state.desired === desired;
  if (!found.length) return applied && unchanged ? { buildId, routing } : undefined;
  // A newer spec may have come meanwhile. The Deployments are taken over already (labels, owner reference), so they
  // are adopted all the same: judged against the spec now in force while it is still this build; otherwise none is
  // the spec's, and those not current are sunset.
  const sameBuild = state.target === target && state.desired?.buildId === desired.buildId;
  const inForce = sameBuild ? state.desired! : desired;
  const plan = planAdoption(sameBuild ? found : found.map((f) => ({ ...f, matchesTemplate: false })), routing);
  const place = target.place ?? placeOf(inForce);
  // The sunsets started here must outlive this rollout's scope (a superseding spec cancels it), as makeCurrent's do.
  await CancellationScope.nonCancellable(async () =>
    adopt(ctx, sunsets, plan, found, sameBuild ? target : (state.target ?? target), inForce, place),
  );
  return undefined;
}

function adopt(
  ctx: RolloutContext,
  sunsets: Sunsets,
  plan: AdoptionPlan,
  found: ForeignVersion[],
  target: Target,
  desired: Desired,
  place: TemporalPlace,
): void {
  const { state } = ctx;
  state.foreign = { ...state.foreign, ...plan.foreign };
  for (const buildId of plan.retire) sunsets.retire(buildId, place);
  if (plan.clearRamp) state.rampsToClear = [...(state.rampsToClear ?? []), { buildId: plan.clearRamp, place }];
  const names = found.map((f) => `${f.buildId} (Deployment ${f.deploymentName})`).join(', ');
  if (plan.match) {
    const computed = target.buildId;
    state.aliases = { ...state.aliases, [computed]: plan.match };
    state.desired = { ...desired, buildId: plan.match };
    delete state.templates?.[computed];
    const adopted: Target = {
      ...target,
      buildId: plan.match,
      ...(plan.liveRamp !== undefined ? { rampPercentage: plan.liveRamp, rampingSince: new Date().toISOString() } : {}),
    };
    state.target = adopted;
    ctx.event(
      'Normal',
      'Adopted',
      `adopted ${names} from temporal-worker-controller; ${plan.match} runs the spec's template: no new version`,
    );
  } else {
    ctx.event(
      'Normal',
      'Adopted',
      `adopted ${names} from temporal-worker-controller; none runs the spec's template: ${target.buildId} rolls out`,
    );
  }
  // The user should know a new version rolls out only because the template could not be compared.
  const unchecked = found.find((f) => f.templateUnchecked)?.templateUnchecked;
  if (unchecked)
    ctx.event(
      'Warning',
      'AdoptionTemplateUnchecked',
      `the pod template could not be compared with the adopted Deployments (${unchecked}): they are taken as changed`,
    );
  ctx.record('transition', 'Adopted', 'glidepath', names, plan.match ?? target.buildId);
  forgetForeignTemplates(state);
  sunsets.sync();
  ctx.markDirty();
}

/** Promise.all that waits for every promise to settle before it fails with the first failure. */
async function allSettled<T extends readonly unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
