/**
 * RolloutWorkflow: one per TemporalWorkerDeployment, for as long as the resource exists. It folds messages
 * into its state, runs one rollout at a time (./flow.ts), sunsets what is no longer routed to (./sunset.ts),
 * heals drift (resync), continues as new when its history is long (from any wait: the state says where it
 * was) and cleans up on deletion (./deletion.ts). Signals wake it; what it waits on is also read.
 */
import { CancellationScope, allHandlersFinished, condition, continueAsNew, isCancellation, log, setHandler, workflowInfo } from '@temporalio/workflow';
import { forgetForeignTemplates, forgetGoneForeignBuilds, liveForeignBuilds, withAlias, withAliasedControl } from './adoption.js';
import { Blocked, ContinueAsNewDue, RolloutContext } from './context.js';
import { parseControl, planRetry, planRollback, problemWithControl, rollbackWindowMs, type Control } from './controls.js';
import { alreadyRead, isPaused, notThisInstallations, placeChangeProblem, placeOf, planRead, planSpecChange, rolloutPending } from './decisions.js';
import { deleteEverything, type DeletionResult } from './deletion.js';
import { ensureDeployment, movePinned, rollOut } from './flow.js';
import * as messages from './messages.js';
import { Sunsets } from './sunset.js';
import { defaultTimings, type DeploymentObservation, type Desired, type Owner, type RolloutState, type RolloutStatus, type Target } from './state.js';

export interface RolloutInput {
  owner: Owner;
  /** Carried across ContinueAsNew: taken only from the run this one continued from. */
  state?: RolloutState;
}

const now = () => new Date();

export async function RolloutWorkflow(input: RolloutInput): Promise<DeletionResult | void> {
  // A state is ours only when this run continued from one of ours; one in a start request is ignored.
  // (A retry or a cron run has a run it continued from too, and the first run's input: the watcher never sets either.)
  const info = workflowInfo();
  const forgeable = info.cronSchedule !== undefined || info.retryPolicy !== undefined || info.attempt > 1;
  const carried = info.continuedFromExecutionRunId !== undefined && !forgeable && input.state?.owner.uid === input.owner.uid ? input.state : undefined;
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
  const ctx = new RolloutContext({ ...initial, timings: { ...defaultTimings, ...initial.timings } });
  const { owner } = ctx;
  const state = () => ctx.state;
  const sunsets = new Sunsets(ctx);
  let rolloutScope: CancellationScope | undefined;
  /** The resync and re-apply loops: cancelled by a deletion, so nothing is applied after it deleted it. */
  const housekeepingScope = new CancellationScope();
  /** A resume or promote lets a Blocked rollout try again. */
  let unblocked = false;
  /** The rollout stopped on a permanent error and waits for a new spec or a control. */
  let blocked = false;
  /** The run is on its way to ContinueAsNew: the flow has stopped, so a control shows only in the next run. */
  let continuingAsNew = false;
  let housekeeping = 0;

  // ---- messages: each checked, so no input can fail a workflow task ----
  const safely =
    <A extends unknown[]>(name: string, handler: (...args: A) => void) =>
    (...args: A) => {
      try {
        handler(...args);
      } catch (err) {
        log.warn('message ignored', { name, error: err instanceof Error ? err.message : String(err) });
      }
    };
  const refused: { count: number; last?: { control: string; why: string } } = { count: 0 };
  const refuse = (control: string, why: string, who?: string) => {
    refused.count++;
    refused.last = { control, why };
    log.warn(`${control} refused`, { why });
    ctx.event('Warning', 'ControlRefused', `${control}${who ? ` by ${who}` : ''} refused: ${why}`);
    ctx.record('refused', control, who ?? 'unknown', why);
  };
  // The spec and the deletion are read from the apiserver (`readOwner`): these two messages only wake the workflow.
  setHandler(
    messages.specChanged,
    safely('specChanged', (hint?: unknown) => {
      const uid = (hint as messages.SpecChangedHint | undefined)?.uid;
      if (uid !== undefined && uid !== owner.uid) state().successorHinted = true;
      if (!alreadyRead(state(), hint)) state().readDue = true;
    }),
  );
  setHandler(
    messages.deleted,
    safely('deleted', (req?: messages.DeletedRequest) => {
      const uid = (req as { uid?: unknown } | undefined)?.uid;
      if (typeof uid !== 'string' || uid === '') return refuse('deleted', 'it names no uid: send { "uid": "<the resource\'s uid>" }');
      if (uid !== owner.uid) return void (state().successorHinted = true); // another object under this name
      state().readDue = true;
    }),
  );
  setHandler(
    messages.deploymentObserved,
    safely('deploymentObserved', (input: unknown) => {
      const obs = input as DeploymentObservation;
      if (typeof obs?.buildId !== 'string' || typeof obs.exists !== 'boolean') throw new Error('not a Deployment observation');
      if (obs.ownerUid && obs.ownerUid !== owner.uid) return;
      // A wake-up: a wait on this build reads its Deployment (the same resourceVersion as last read: nothing new).
      const known = [state().current?.buildId, state().target?.buildId, ...state().deprecated.map((v) => v.buildId)].includes(obs.buildId);
      const read = state().deployments[obs.buildId];
      if (known && (!read?.resourceVersion || read.resourceVersion !== obs.resourceVersion || read.exists !== obs.exists)) ctx.deploymentsChanged.add(obs.buildId);
      const live = !ctx.removing.has(obs.buildId) && known;
      if (!obs.exists && live && !state().deleting) state().resyncDue = true;
    }),
  );
  setHandler(messages.resync, safely('resync', () => void (state().resyncDue = true)));
  // Controls: each is a signal and an update of the same name.
  const who = (c: Control, via: 'signal' | 'update') => c.identity || `unknown (${via})`;
  const seen = (c: Control) => c.requestId !== undefined && (state().recentRequests ?? []).includes(c.requestId);
  /** Why this control is refused now, or undefined. */
  const problemWith = (name: messages.ControlName, req: unknown): string | undefined => {
    const c = withAliasedControl(state(), parseControl(req));
    if (typeof c === 'string') return c;
    if (seen(c)) return undefined; // a re-sent control: answered, not taken twice
    return problemWithControl(name, c, state(), { promoting: ctx.promoting, blocked, now: now() });
  };
  /** Takes a control that passed `problemWith`; returns what says it took effect. */
  function take(name: messages.ControlName, c: Control, via: 'signal' | 'update'): () => boolean {
    if (seen(c)) return () => true;
    if (c.requestId) state().recentRequests = [...(state().recentRequests ?? []), c.requestId].slice(-50);
    const by = who(c, via);
    const buildId = state().target?.buildId;
    ctx.record('control', name, by, c.reason ?? '', name === 'rollback' ? c.toBuildId ?? buildId : buildId);
    ctx.event('Normal', `${name[0]!.toUpperCase()}${name.slice(1)}`, `${name}${c.full ? ' (full)' : ''} by ${by}${c.reason ? `: ${c.reason}` : ''}`);
    switch (name) {
      case 'pause':
        state().pausedBy = { reason: c.reason || `paused by ${by}`, buildId, who: by };
        return () => state().phase === 'Paused' || state().target?.buildId !== buildId;
      case 'resume':
        if (state().pausedBy?.cause === 'GateFailed') newGateRuns();
        state().pausedBy = undefined;
        unblocked = true;
        retrySunsets();
        return () => state().phase !== 'Paused' || state().pausedBy !== undefined;
      case 'promote':
        state().promote = { full: c.full === true || state().promote?.full === true, buildId };
        unblocked = true;
        return () => state().target?.buildId !== buildId || (state().promote === undefined && !(c.full && state().current?.buildId !== buildId));
      case 'abort':
        abortTarget('Aborted', c.reason || `aborted by ${by}`);
        return () => rampCleared(buildId!);
      case 'rollback':
        return rollBackTo(c, by);
      case 'retry':
        return retry(c);
    }
  }
  /** Sunsets that stopped on an error start again. */
  function retrySunsets() {
    state().deprecated = state().deprecated.map((v) => (v.blocked ? { ...v, blocked: undefined } : v));
    sunsets.sync();
  }
  /** A person asked for a failed gate to run again: its next run gets a workflow ID of its own. */
  const newGateRuns = () => void (state().target && (state().target!.gateRunIds = undefined));
  const rampCleared = (buildId: string) => state().target?.buildId !== buildId && !(state().rampsToClear ?? []).some((e) => e.buildId === buildId);
  /** The target gets no more new work and is sunset; its ramp is cleared first thing (Aborted, or RolledBack). */
  function abortTarget(cause: 'Aborted' | 'RolledBack', reason: string, opts: { movePinned?: boolean } = {}) {
    const target = state().target!;
    state().aborted = { buildId: target.buildId, reason, cause };
    state().pausedBy = undefined; // a pause does not outlive the rollout it held
    state().promote = undefined;
    sunsets.retire(target.buildId, target.place);
    const movePinned = opts.movePinned !== false && state().desired?.spec.rollout.onAbort?.movePinned === true;
    state().rampsToClear = [...(state().rampsToClear ?? []), { buildId: target.buildId, ...(target.place ? { place: target.place } : {}), ...(movePinned ? { movePinned } : {}) }];
    state().target = undefined;
    sunsets.sync();
    rolloutScope?.cancel();
  }
  function rollBackTo(c: Control, by: string): () => boolean {
    const reason = c.reason || `rolled back by ${by}`;
    const plan = planRollback(state(), c.toBuildId, now(), rollbackWindowMs(state()));
    if (plan.kind === 'refused') return () => true; // (validated before: not reached)
    if (plan.kind === 'abortTarget') {
      abortTarget('RolledBack', reason);
      return () => rampCleared(plan.buildId);
    }
    const to = plan.buildId;
    // A target in flight is abandoned too (its pinned work is not moved onto the build being rolled back from).
    if (state().target && state().aborted?.buildId !== state().target!.buildId) abortTarget('RolledBack', reason, { movePinned: false });
    const spec = state().desired!;
    // Routing now differs from the spec: its build is held as rolled back until the spec changes or `retry`.
    state().aborted = spec.buildId === to ? undefined : { buildId: spec.buildId, reason, cause: 'RolledBack' };
    const version = state().deprecated.find((v) => v.buildId === to);
    state().deprecated = state().deprecated.filter((v) => v.buildId !== to);
    state().target = { buildId: to, generation: spec.generation, rollback: { reason, who: by }, ...(version?.place ? { place: version.place } : {}) };
    sunsets.sync();
    rolloutScope?.cancel();
    unblocked = true;
    return () => state().current?.buildId === to;
  }
  function retry(c: Control): () => boolean {
    const plan = planRetry(state(), c.buildId, blocked);
    switch (plan.kind) {
      case 'rollOutAgain': {
        const spec = state().desired!;
        state().aborted = undefined;
        state().deprecated = state().deprecated.filter((v) => v.buildId !== plan.buildId);
        state().templates = { ...state().templates, [plan.buildId]: state().templates?.[plan.buildId] ?? spec.spec.template };
        forgetForeignTemplates(state()); // an adopted build is never rendered
        state().target = { buildId: plan.buildId, generation: spec.generation };
        sunsets.sync();
        unblocked = true;
        return () => state().phase !== 'Aborted';
      }
      case 'unpause':
        if (state().pausedBy?.cause?.startsWith('Analysis') && state().target) state().target!.reanalyse = true;
        if (state().pausedBy?.cause === 'GateFailed') newGateRuns();
        state().pausedBy = undefined;
        return () => state().phase !== 'Paused';
      case 'unblock':
        unblocked = true;
        retrySunsets();
        return () => !blocked;
      case 'refused':
        return () => true;
    }
  }
  const controlNames: messages.ControlName[] = ['pause', 'resume', 'promote', 'abort', 'rollback', 'retry'];
  const signals = { pause: messages.pause, resume: messages.resume, abort: messages.abort, promote: messages.promote, rollback: messages.rollback, retry: messages.retry };
  for (const name of controlNames) {
    setHandler(
      signals[name],
      safely(name, (req?: unknown) => {
        const c = withAliasedControl(state(), parseControl(req));
        const why = problemWith(name, req);
        if (why) return refuse(name, why, typeof c === 'string' ? undefined : who(c, 'signal'));
        take(name, c as Control, 'signal');
      }),
    );
    setHandler(
      messages.updates[name],
      async (req?: unknown): Promise<RolloutStatus> => {
        const tookEffect = take(name, withAliasedControl(state(), parseControl(req)) as Control, 'update');
        // Answer with the status once the control shows in it (routing changed, phase Paused…), or after 20 s; at
        // once when this run is continuing as new (the control is carried in the state; the next run shows it).
        await condition(() => tookEffect() || continuingAsNew || state().deleting, 20_000, { summary: `${name}: answer once it shows in the status` });
        return statusNow();
      },
      {
        validator: (req?: unknown) => {
          const why = problemWith(name, req);
          if (why) throw new Error(`${name} refused: ${why}`);
        },
      },
    );
  }

  /** A spec read from the apiserver, folded into the state. */
  function acceptSpec(read: Desired) {
    // An unchanged template of an adopted build is that build (./adoption.ts; nothing to do without adoption).
    forgetGoneForeignBuilds(state());
    const moved = read.generation >= (state().desired?.generation ?? 0) ? placeChangeProblem(state(), read) : undefined;
    if (moved) {
      const problem = { generation: read.generation, phase: 'InvalidSpec' as const, reason: 'InvalidSpec' as const, message: moved };
      if (JSON.stringify(problem) !== JSON.stringify(state().specProblem)) {
        state().specProblem = problem;
        ctx.event('Warning', 'InvalidSpec', moved);
        ctx.markDirty();
      }
      return;
    }
    const decision = planSpecChange(state(), withAlias(state(), read), now());
    if (decision.ignored) return;
    // In place: the running flow holds the state and its target; the same build's target stays the same object.
    const running = state().target;
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
      rolloutScope?.cancel();
    }
    if (decision.reapply) state().reapplyDue = true;
    unblocked = true;
    sunsets.sync();
    ctx.markDirty(); // observedGeneration follows every accepted spec
  }

  /**
   * Reads the resource and acts on what the apiserver says: its spec, its deletion. The only way a spec is taken or
   * a teardown begins. 'unconfirmed': this run's owner was never read as itself and does not exist.
   */
  async function readOwner(): Promise<'read' | Owner | 'unconfirmed' | { elsewhere: string }> {
    state().readDue = false;
    // An activity, never a local one: a local read beside a local report, in a task that timed out under load, was
    // replayed in another order than it ran (a nondeterminism error).
    const read = await ctx.call('read the resource', () => ctx.kube.readResource(owner));
    const elsewhere = notThisInstallations(workflowInfo().workflowId, owner, read);
    if (elsewhere) {
      if (!ctx.handedAway) log.warn(`the resource is not this run's any more (${elsewhere}): continuing as new, to end there`);
      ctx.handedAway = elsewhere;
      return { elsewhere };
    }
    const hidden = state().timings.searchAttributes === false;
    state().timings = { ...defaultTimings, ...read.timings }; // the controller's, not the start request's
    if (hidden && state().timings.searchAttributes !== false) ctx.showInSearch(); // registered since: shown from now on
    const decision = planRead(state(), read);
    if (decision.kind === 'unconfirmed') {
      // Another live object holds the name: it is this workflow's to serve (its next run reads it itself).
      return read.found && !read.deleting ? { namespace: owner.namespace, name: owner.name, uid: read.uid, kind: read.kind } : 'unconfirmed';
    }
    if (read.found && read.uid === owner.uid) state().read = { resourceVersion: read.resourceVersion, ...(read.desired ? { connectionVersion: read.desired.connectionVersion } : {}) };
    if (decision.kind === 'delete') {
      if (!state().deleting) log.info('cleaning up', { why: decision.why });
      // A deletion seen first by this run cleans up Temporal too, with the spec read from the object.
      if (!state().desired && read.found && read.uid === owner.uid && read.desired) state().desired = read.desired;
      markDeleting();
    } else if (decision.kind === 'spec') acceptSpec(decision.desired);
    else if (read.found && read.uid === owner.uid && read.problem && read.generation >= (state().desired?.generation ?? 0)) {
      const problem = { generation: read.generation, phase: read.problemPhase ?? 'InvalidSpec', reason: read.problemReason ?? 'InvalidSpec', message: read.problem };
      if (JSON.stringify(problem) !== JSON.stringify(state().specProblem)) {
        state().specProblem = problem;
        ctx.markDirty();
      }
    }
    return 'read';
  }

  const statusNow = (): RolloutStatus => ({
    phase: state().phase,
    reason: state().reason,
    message: state().message,
    paused: isPaused(state()) || state().managerHeldBy !== undefined,
    current: state().current?.buildId,
    target: state().target,
    deprecated: state().deprecated,
    generation: state().desired?.generation,
    lastAbortReason: state().aborted?.reason,
    retrying: state().retrying,
    lastAnalysis: state().lastAnalysis,
    managerHeldBy: state().managerHeldBy,
    refused,
    strategy: state().desired?.spec.rollout.strategy,
    steps: state().desired?.spec.rollout.steps,
    currentPlace: state().current?.place ?? (state().desired ? placeOf(state().desired!) : undefined),
  });
  setHandler(messages.status, statusNow);
  setHandler(messages.history, () => state().history ?? []);

  // ---- housekeeping, beside the rollout ----
  /** Housekeeping beside the rollout: never fails the workflow; `again` is asked for when a ContinueAsNew cut it short. */
  const quietly = async (what: string, work: () => Promise<void>, again: () => void) => {
    housekeeping++;
    try {
      await work();
    } catch (err) {
      if (isCancellation(err)) return;
      if (err instanceof ContinueAsNewDue) again();
      else if (err instanceof Blocked) ctx.event('Warning', 'Blocked', err.message);
      else log.warn(`${what} failed`, { error: String(err) });
    } finally {
      housekeeping--;
    }
  };
  /** The resource is being deleted (or is gone): everything in flight stops, then the clean-up runs. */
  function markDeleting() {
    state().deleting = true;
    rolloutScope?.cancel();
    housekeepingScope.cancel();
  }

  /** Live Deployments, with the replicas and template each should have. */
  const liveVersions = () => {
    const s = state();
    return [
      ...[s.current?.buildId, s.target?.buildId].filter((b): b is string => !!b).map((buildId) => ({ buildId, replicas: s.desired!.spec.replicas, heal: true })),
      ...s.deprecated.filter((v) => !ctx.removing.has(v.buildId)).map((v) => ({ buildId: v.buildId, replicas: v.scaledDown ? 0 : s.desired!.spec.replicas })),
    ].flatMap((v) => {
      const template = s.templates?.[v.buildId];
      return template ? [{ ...v, template }] : [];
    });
  };

  /** Level-triggered self-healing: recreates a live Deployment deleted by hand, removes strays. Reads only, unless one is missing. */
  async function resyncLoop(): Promise<never> {
    for (;;) {
      // No new round once a ContinueAsNew is due (a stream of resync signals must not hold it off).
      await condition(() => state().resyncDue === true && !ctx.continueAsNewDue(), state().timings.resyncIntervalMs, { summary: 'periodic resync' });
      state().resyncDue = false;
      if (!state().desired || state().deleting) continue;
      await quietly('resync', async () => {
        // The spec may have changed unseen, or the resource been deleted unseen (its finalizer removed while no
        // watcher ran): it must not be healed forever.
        await readOwner();
        if (state().deleting || ctx.handedAway) return;
        const { recreated, healed } = await ctx.localFirst('reconcile the Deployments', (kube) => kube.reconcileDeployments({ owner, desired: state().desired!, versions: liveVersions() }));
        for (const name of recreated) ctx.event('Warning', 'DeploymentRecreated', `${name} was missing and is recreated`);
        for (const name of healed) ctx.event('Warning', 'DeploymentHealed', `${name} was changed by hand and is applied again`);
        // Deployments of ours that no version needs any more, already at 0 pods. One with pods is left alone.
        const live = [...liveVersions().map((v) => v.buildId), ...ctx.removing, ...liveForeignBuilds(state())];
        const removed = await ctx.localFirst('delete stray Deployments', (kube) => kube.deleteStrayDeployments(owner, live));
        for (const name of removed) ctx.event('Normal', 'StrayDeploymentDeleted', `${name} belongs to no live version and had no pods`);
      }, () => void (state().resyncDue = true));
    }
  }

  /** A message asked for a read. */
  async function readLoop(): Promise<never> {
    for (;;) {
      await condition(() => state().readDue === true && !state().deleting && !ctx.continueAsNewDue());
      let failed = false;
      await quietly('read the resource', async () => {
        try {
          await readOwner();
        } catch (err) {
          if (!(err instanceof Blocked)) throw err;
          failed = true; // a refusal (RBAC still propagating…): read again after a while, the wake-up is kept
          throw err;
        }
      }, () => void (state().readDue = true));
      if (failed) {
        state().readDue = true;
        await condition(() => state().deleting || ctx.continueAsNewDue(), 30_000, { summary: 'read the resource again after a refusal' });
      }
    }
  }

  /** New connection, Deployment settings or template: the current and target Deployments are applied again at once. */
  async function reapplyLoop(): Promise<never> {
    for (;;) {
      await condition(() => state().reapplyDue === true && !state().deleting && !ctx.continueAsNewDue());
      state().reapplyDue = false;
      await quietly('re-apply', async () => {
        for (const buildId of [state().current?.buildId, state().target?.buildId]) {
          if (buildId) await ensureDeployment(ctx, buildId);
        }
      }, () => void (state().reapplyDue = true));
    }
  }

  /** Runs the rollout of the target; a permanent error or a bug shows as Blocked rather than failing the workflow task. */
  async function runRollout(): Promise<'done' | 'continueAsNew' | Blocked> {
    rolloutScope = new CancellationScope();
    try {
      await rolloutScope.run(() => rollOut(ctx, sunsets));
      return 'done';
    } catch (err) {
      if (isCancellation(err)) return 'done';
      if (err instanceof ContinueAsNewDue) return 'continueAsNew';
      if (err instanceof Blocked) return err;
      log.error('rollout failed unexpectedly', { error: String(err) });
      return new Blocked('the rollout', err instanceof Error ? err.message : String(err));
    } finally {
      rolloutScope = undefined;
    }
  }

  /**
   * Clears the ramp of builds that may hold it (superseded, aborted), on the Temporal each lives on, until
   * Temporal confirms; then says where the rollout ended (Aborted, or Ready when the spec went back to current).
   */
  async function clearRamps(): Promise<void> {
    const entry = state().rampsToClear![0]!;
    try {
      await CancellationScope.nonCancellable(() =>
        ctx.call(`clear the ramp of ${entry.buildId}`, () => ctx.temporal.clearRampIf(ctx.temporalTarget(entry.place), entry.buildId), { untilDeleted: false }),
      );
      ctx.routed(ctx.temporalTarget(entry.place), undefined); // (it may have written: the next write describes)
    } catch (err) {
      if (!(err instanceof Blocked)) throw err;
      ctx.event('Warning', 'Blocked', `the ramp of ${entry.buildId} could not be cleared: ${err.message}`);
    }
    const current = state().current;
    if (entry.movePinned && current && current.buildId !== entry.buildId) {
      try {
        await CancellationScope.nonCancellable(() => movePinned(ctx, entry.buildId, current.buildId, entry.place));
      } catch (err) {
        // A permanent refusal, or a deletion meanwhile: the ramp is cleared all the same.
        if (!(err instanceof Blocked) && !(isCancellation(err) && state().deleting)) throw err;
        ctx.event('Warning', 'Blocked', `executions pinned to ${entry.buildId} could not be moved: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    state().rampsToClear = state().rampsToClear!.filter((e) => e !== entry);
    sunsets.sync();
    const s = state();
    if (s.aborted?.buildId === entry.buildId) ctx.transition('Aborted', s.aborted.cause ?? 'Aborted', s.aborted.reason, 'Warning');
    else if (!s.target && s.current && s.current.buildId === s.desired?.buildId && s.phase !== 'Ready') {
      ctx.transition('Ready', 'RolledBack', `${s.current.buildId} is current (the spec went back to it; ${entry.buildId} is sunset)`);
    }
  }

  async function continueAsNewNow(): Promise<never> {
    continuingAsNew = true;
    await sunsets.stopAll();
    // One condition, nothing awaited after it: an update handler that started meanwhile is waited for, never cut off.
    // (A deletion that began meanwhile cancelled the housekeeping: the flags say what to do again.)
    await condition(() => housekeeping === 0 && allHandlersFinished() && ctx.isSettled());
    // What came in meanwhile (a promote, a resync, a new spec, a deletion) is in the state: the next run does it.
    return continueAsNew<typeof RolloutWorkflow>({ owner, state: ctx.state });
  }

  // ---- main loop ----
  // The resource is gone, or holds another object (a status write refused): read what it is.
  void ctx.statusWriter(() => void (state().readDue = true));
  for (let attempt = 0; ; attempt++) {
    let first: Awaited<ReturnType<typeof readOwner>>;
    try {
      first = await readOwner();
    } catch (err) {
      // Never a failed workflow task: a long outage continues as new (the next run reads first too), a refusal waits.
      if (err instanceof ContinueAsNewDue) return continueAsNew<typeof RolloutWorkflow>({ owner, state: ctx.state });
      if (!(err instanceof Blocked)) throw err;
      log.warn('the resource could not be read', { error: err.message });
      await condition(() => false, Math.min(1_000 * 2 ** attempt, 60_000), { summary: 'read the resource again after a refusal' });
      if (ctx.continueAsNewDue()) return continueAsNew<typeof RolloutWorkflow>({ owner, state: ctx.state });
      continue;
    }
    if (first === 'unconfirmed') {
      log.warn('the resource this run was started for does not exist: ending without touching anything', { owner });
      return;
    }
    // A run started by hand, or one whose resource another installation rolls out, touches nothing.
    if (typeof first === 'object' && 'elsewhere' in first) {
      log.warn(`not the rollout of its resource here (${first.elsewhere}): ending without touching anything`, { owner, workflowId: workflowInfo().workflowId });
      return;
    }
    if (first !== 'read') return continueAsNew<typeof RolloutWorkflow>({ owner: first });
    break;
  }
  void housekeepingScope.run(() => Promise.all([resyncLoop(), reapplyLoop(), readLoop()])).catch(() => undefined);
  sunsets.sync();
  const rampsPending = () => (state().rampsToClear?.length ?? 0) > 0;
  for (;;) {
    await condition(() => state().deleting || rampsPending() || rolloutPending(state()) || ctx.continueAsNewDue());
    if (state().deleting) break;
    try {
      if (rampsPending()) {
        await clearRamps();
        continue;
      }
    } catch (err) {
      if (!(err instanceof ContinueAsNewDue)) throw err;
      await continueAsNewNow();
    }
    if (rolloutPending(state())) {
      const outcome = await runRollout();
      if (outcome === 'continueAsNew') await continueAsNewNow();
      if (outcome instanceof Blocked) {
        ctx.transition('Failed', 'Blocked', `${outcome.message}; change the spec, or resume to try again`, 'Warning');
        unblocked = false;
        blocked = true;
        await condition(() => unblocked || state().deleting || rampsPending() || !rolloutPending(state()) || ctx.continueAsNewDue());
        blocked = false;
        if (!unblocked && !state().deleting && !rampsPending() && rolloutPending(state())) await continueAsNewNow();
      }
      continue;
    }
    await continueAsNewNow();
  }

  // ---- deletion ----
  let result: DeletionResult;
  try {
    await sunsets.stopAll();
    await condition(() => housekeeping === 0);
    result = await deleteEverything(ctx);
  } catch (err) {
    if (err instanceof ContinueAsNewDue) return continueAsNewNow();
    throw err;
  }
  await ctx.settled();
  // The old object is cleaned up; a new one under its name (read, never taken from a message) starts its own lifecycle.
  // (Bounded: a stream of hints must not grow the history; the watcher's resync wakes a missed one.)
  for (let look = 0; look < 3; look++) {
    state().successorHinted = false;
    let next: Owner | undefined;
    try {
      next = await ctx.call('look for a new object under the name', () => ctx.kube.findSuccessor(owner), { untilDeleted: false });
    } catch (err) {
      if (err instanceof ContinueAsNewDue) return continueAsNew<typeof RolloutWorkflow>({ owner, state: ctx.state }); // cleans up again, then looks
      if (!(err instanceof Blocked)) throw err;
      log.warn('could not look for a new object under the name', { error: err.message });
      break;
    }
    if (next) return continueAsNew<typeof RolloutWorkflow>({ owner: next });
    if (!state().successorHinted) break;
  }
  if (result.problems.length) log.warn('deleted with problems', { problems: result.problems });
  return result;
}
