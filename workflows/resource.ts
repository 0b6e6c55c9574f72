/**
 * The resource as one run of RolloutWorkflow knows it: its state, read from the apiserver (the only way a spec is
 * taken or a teardown begins), the rollout in flight, the ramps to clear, the status it answers with, and the way
 * out to the next run.
 */
import {
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  workflowInfo,
} from '@temporalio/workflow';
import { forgetForeignTemplates, forgetGoneForeignBuilds, withAlias } from './adoption.js';
import { RolloutContext } from './context.js';
import { Blocked, ContinueAsNewDue } from './failures.js';
import { isPaused, notThisInstallations, placeChangeProblem, placeOf, planRead, planSpecChange } from './decisions.js';
import { movePinned } from './rollback.js';
import { rollOut } from './rollout.js';
import type { RolloutWorkflow } from './rollout-workflow.js';
import { Sunsets } from './sunset.js';
import { type RolloutState, type RolloutStatus, type Target } from './state.js';
import { defaultTimings } from '../api/timings.js';
import { type Desired, type Owner } from '../api/resource.js';

export interface RolloutInput {
  owner: Owner;
  /** Carried across ContinueAsNew: taken only from the run this one continued from. */
  state?: RolloutState;
}

/** What a first read says: read as itself; another object under the name; nothing there; not this installation's. */
export type FirstRead = 'read' | Owner | 'unconfirmed' | { elsewhere: string };

const now = () => new Date();

/**
 * A state is ours only when this run continued from one of ours; one in a start request is ignored. (A retry or a
 * cron run has a run it continued from too, and the first run's input: the watcher never sets either.)
 */
function initialState(input: RolloutInput): RolloutState {
  const info = workflowInfo();
  const forgeable = info.cronSchedule !== undefined || info.retryPolicy !== undefined || info.attempt > 1;
  const carried =
    info.continuedFromExecutionRunId !== undefined && !forgeable && input.state?.owner.uid === input.owner.uid
      ? input.state
      : undefined;
  const initial: RolloutState = carried ?? {
    owner: input.owner,
    deprecated: [],
    phase: 'Pending',
    reason: 'Deploying',
    message: 'reading the resource',
    since: now().toISOString(),
    deleting: false,
    deployments: {},
    timings: defaultTimings,
  };
  return { ...initial, timings: { ...defaultTimings, ...initial.timings } };
}

export class Resource {
  readonly ctx: RolloutContext;
  readonly owner: Owner;
  readonly sunsets: Sunsets;
  /** The resync and re-apply loops: cancelled by a deletion, so nothing is applied after it deleted it. */
  readonly housekeepingScope = new CancellationScope();
  /** Housekeeping under way: a ContinueAsNew waits until none is. */
  housekeeping = 0;
  /** A resume or promote lets a Blocked rollout try again. */
  unblocked = false;
  /** The rollout stopped on a permanent error and waits for a new spec or a control. */
  blocked = false;
  /** The run is on its way to ContinueAsNew: the rollout has stopped, so a control shows only in the next run. */
  get continuingAsNew(): boolean {
    return this.ctx.ending;
  }
  /** Controls refused in this run, for the status. */
  readonly refused: { count: number; last?: { control: string; why: string } } = { count: 0 };
  private rolloutScope?: CancellationScope;

  constructor(input: RolloutInput) {
    this.ctx = new RolloutContext(initialState(input));
    this.owner = this.ctx.owner;
    this.sunsets = new Sunsets(this.ctx);
  }

  get state(): RolloutState {
    return this.ctx.state;
  }

  rampsPending(): boolean {
    return (this.state.rampsToClear?.length ?? 0) > 0;
  }

  /** Says why a control or a message was not taken: a Warning Event and a line in the history. */
  refuse(control: string, why: string, who?: string): void {
    this.refused.count++;
    this.refused.last = { control, why };
    log.warn(`${control} refused`, { why });
    this.ctx.event('Warning', 'ControlRefused', `${control}${who ? ` by ${who}` : ''} refused: ${why}`);
    this.ctx.record('refused', control, who ?? 'unknown', why);
  }

  /** The rollout in flight stops (a superseding spec, an abort, a rollback, a deletion). */
  cancelRollout(): void {
    this.rolloutScope?.cancel();
  }

  /**
   * Reads the resource and acts on what the apiserver says: its spec, its deletion. The only way a spec is taken or
   * a teardown begins. 'unconfirmed': this run's owner was never read as itself and does not exist.
   */
  async readOwner(): Promise<FirstRead> {
    const { ctx, owner, state } = this;
    state.readDue = false;
    const read = await ctx.call('read the resource', () => ctx.kube.readResource(owner));
    const elsewhere = notThisInstallations(workflowInfo().workflowId, owner, read);
    if (elsewhere) {
      if (!ctx.handedAway)
        log.warn(`the resource is not this run's any more (${elsewhere}): continuing as new, to end there`);
      ctx.handedAway = elsewhere;
      return { elsewhere };
    }
    const hidden = state.timings.searchAttributes === false;
    state.timings = { ...defaultTimings, ...read.timings }; // the controller's, not the start request's
    if (hidden && state.timings.searchAttributes !== false) ctx.showInSearch(); // registered since: shown from now on
    const decision = planRead(state, read);
    if (decision.kind === 'unconfirmed') {
      // Another live object holds the name: it is this workflow's to serve (its next run reads it itself).
      return read.found && !read.deleting
        ? { namespace: owner.namespace, name: owner.name, uid: read.uid, kind: read.kind }
        : 'unconfirmed';
    }
    const ours = read.found && read.uid === owner.uid;
    if (ours)
      state.read = {
        resourceVersion: read.resourceVersion,
        ...(read.desired ? { connectionVersion: read.desired.connectionVersion } : {}),
      };
    if (decision.kind === 'delete') {
      if (!state.deleting) log.info('cleaning up', { why: decision.why });
      // A deletion seen first by this run cleans up Temporal too, with the spec read from the object.
      if (!state.desired && ours && read.desired) state.desired = read.desired;
      this.markDeleting();
    } else if (decision.kind === 'spec') this.acceptSpec(decision.desired);
    else if (ours && read.problem && read.generation >= (state.desired?.generation ?? 0)) {
      this.holdSpecProblem({
        generation: read.generation,
        phase: read.problemPhase ?? 'InvalidSpec',
        reason: read.problemReason ?? 'InvalidSpec',
        message: read.problem,
      });
    }
    return 'read';
  }

  /** The resource is being deleted (or is gone): everything in flight stops, then the clean-up runs. */
  markDeleting(): void {
    this.state.deleting = true;
    this.rolloutScope?.cancel();
    this.housekeepingScope.cancel();
  }

  /** A spec read from the apiserver, folded into the state. */
  private acceptSpec(read: Desired): void {
    const { ctx, state } = this;
    // An unchanged template of an adopted build is that build (./adoption.ts; nothing to do without adoption).
    forgetGoneForeignBuilds(state);
    const moved = read.generation >= (state.desired?.generation ?? 0) ? placeChangeProblem(state, read) : undefined;
    if (moved) {
      if (
        this.holdSpecProblem({
          generation: read.generation,
          phase: 'InvalidSpec',
          reason: 'InvalidSpec',
          message: moved,
        })
      )
        ctx.event('Warning', 'InvalidSpec', moved);
      return;
    }
    const decision = planSpecChange(state, withAlias(state, read), now());
    if (decision.ignored) return;
    // In place: the running rollout holds the state and its target; the same build's target stays the same object.
    const running = state.target;
    const next = decision.state.target;
    if (running && next && next !== running && next.buildId === running.buildId) {
      for (const key of Object.keys(running) as (keyof Target)[]) if (!(key in next)) delete running[key];
      decision.state.target = Object.assign(running, next);
    }
    Object.assign(ctx.state, decision.state);
    ctx.state.specProblem = undefined;
    forgetForeignTemplates(ctx.state);
    if (decision.superseded) {
      log.info('target superseded', { superseded: decision.superseded, target: read.buildId });
      this.rolloutScope?.cancel();
    }
    if (decision.reapply) ctx.state.reapplyDue = true;
    this.unblocked = true;
    this.sunsets.sync();
    ctx.markDirty(); // observedGeneration follows every accepted spec
  }

  /** A spec that cannot be taken, shown in the status; false when it is the one shown already. */
  private holdSpecProblem(problem: NonNullable<RolloutState['specProblem']>): boolean {
    if (JSON.stringify(problem) === JSON.stringify(this.state.specProblem)) return false;
    this.state.specProblem = problem;
    this.ctx.markDirty();
    return true;
  }

  status(): RolloutStatus {
    const s = this.state;
    return {
      phase: s.phase,
      reason: s.reason,
      message: s.message,
      paused: isPaused(s) || s.managerHeldBy !== undefined,
      current: s.current?.buildId,
      target: s.target,
      deprecated: s.deprecated,
      generation: s.desired?.generation,
      lastAbortReason: s.aborted?.reason,
      retrying: s.retrying,
      lastAnalysis: s.lastAnalysis,
      managerHeldBy: s.managerHeldBy,
      refused: this.refused,
      strategy: s.desired?.spec.rollout.strategy,
      steps: s.desired?.spec.rollout.steps,
      currentPlace: s.current?.place ?? (s.desired ? placeOf(s.desired) : undefined),
    };
  }

  /** Runs the rollout of the target; a permanent error or a bug shows as Blocked rather than failing the workflow task. */
  async runRollout(): Promise<'done' | 'continueAsNew' | Blocked> {
    this.rolloutScope = new CancellationScope();
    try {
      await this.rolloutScope.run(() => rollOut(this.ctx, this.sunsets));
      return 'done';
    } catch (err) {
      if (isCancellation(err)) return 'done';
      if (err instanceof ContinueAsNewDue) return 'continueAsNew';
      if (err instanceof Blocked) return err;
      log.error('rollout failed unexpectedly', { error: String(err) });
      return new Blocked('the rollout', err instanceof Error ? err.message : String(err));
    } finally {
      this.rolloutScope = undefined;
    }
  }

  /**
   * Clears the ramp of builds that may hold it (superseded, aborted), on the Temporal each lives on, until
   * Temporal confirms; then says where the rollout ended (Aborted, or Ready when the spec went back to current).
   */
  async clearRamps(): Promise<void> {
    const { ctx } = this;
    const entry = this.state.rampsToClear![0]!;
    try {
      await CancellationScope.nonCancellable(() =>
        ctx.call(
          `clear the ramp of ${entry.buildId}`,
          () => ctx.temporalActivity.clearRampIf(ctx.temporalTarget(entry.place), entry.buildId),
          { untilDeleted: false },
        ),
      );
      ctx.routed(ctx.temporalTarget(entry.place), undefined); // (it may have written: the next write describes)
    } catch (err) {
      if (!(err instanceof Blocked)) throw err;
      ctx.event('Warning', 'Blocked', `the ramp of ${entry.buildId} could not be cleared: ${err.message}`);
    }
    const current = this.state.current;
    if (entry.movePinned && current && current.buildId !== entry.buildId) {
      try {
        await CancellationScope.nonCancellable(() => movePinned(ctx, entry.buildId, current.buildId, entry.place));
      } catch (err) {
        // A permanent refusal, or a deletion meanwhile: the ramp is cleared all the same.
        if (!(err instanceof Blocked) && !(isCancellation(err) && this.state.deleting)) throw err;
        ctx.event(
          'Warning',
          'Blocked',
          `executions pinned to ${entry.buildId} could not be moved: ${err instanceof Error ? err.message : String(err)}`,
        );
      }
    }
    this.state.rampsToClear = this.state.rampsToClear!.filter((e) => e !== entry);
    this.sunsets.sync();
    const s = this.state;
    if (s.aborted?.buildId === entry.buildId)
      ctx.transition('Aborted', s.aborted.cause ?? 'Aborted', s.aborted.reason, 'Warning');
    else if (!s.target && s.current && s.current.buildId === s.desired?.buildId && s.phase !== 'Ready') {
      ctx.transition(
        'Ready',
        'RolledBack',
        `${s.current.buildId} is current (the spec went back to it; ${entry.buildId} is sunset)`,
      );
    }
  }

  /** Continues as new with the whole state, once the sunsets, the housekeeping and the handlers have stopped. */
  async continueAsNewNow(): Promise<never> {
    this.ctx.ending = true;
    await this.sunsets.stopAll();
    // One condition, nothing awaited after it: an update handler that started meanwhile is waited for, never cut off.
    // (A deletion that began meanwhile cancelled the housekeeping: the flags say what to do again.)
    await condition(() => this.housekeeping === 0 && allHandlersFinished() && this.ctx.isSettled());
    // What came in meanwhile (a promote, a resync, a new spec, a deletion) is in the state: the next run does it.
    return this.continueAsNew();
  }

  /** At once, with the whole state (nothing under way needs waiting for); or a fresh start for `next`, another object under the name. */
  continueAsNew(next?: Owner): Promise<never> {
    return continueAsNew<typeof RolloutWorkflow>(next ? { owner: next } : { owner: this.owner, state: this.state });
  }
}
