/**
 * What every part of a rollout shares: the state, the activities, the status writer, and the one way to wait.
 * Waiting is where history grows, so every wait goes through `wait` + `checkpoint`: it wakes when a
 * ContinueAsNew is due, and the caller saves its progress in the state before `checkpoint` throws.
 */
import {
  ActivityFailure,
  CancelledFailure,
  condition,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  type ActivityInterfaceFor,
  type ActivityOptions,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  Activities,
  KubeEvent,
  RoutingCallOptions,
  RoutingCallResult,
  TemporalTarget,
} from '../activities/index.js';
import { workerDeploymentName } from '../api/names.js';
import type { Phase, Reason } from '../api/rollout-status.js';
import { recheckDelay, renderStatus } from './decisions.js';
import { currentDetails, summaryLine } from './details.js';
import { emitMetrics, transitionMetrics } from './metrics.js';
import { currentBuildKey, phaseKey, targetBuildKey } from './search-attributes.js';
import type { HistoryEntry, RolloutState, TemporalPlace } from './state.js';
import type { Owner } from '../api/resource.js';
import { waitsTaskQueue } from './task-queues.js';
import {
  bulkOptions,
  gateWaitOptions,
  kubeOptions,
  localOptions,
  localReportingOptions,
  localRoutingWriteOptions,
  reportingOptions,
  temporalOptions,
  waitOptions,
  waitWithinOptions,
} from './activity-options.js';
import { Blocked, ContinueAsNewDue, managerHeldBy, permanentCause, rootCause } from './failures.js';

const now = () => new Date();

/** Entries `history` keeps (the oldest go first): enough for a rollout's story, bounded across ContinueAsNew. */
export const historyLimit = 100;

/** Which worker deployment a conflict token is of: the server, the namespace, the name. */
const routingTokenKey = (t: TemporalTarget) =>
  JSON.stringify([t.connection.hostPort, t.temporalNamespace, t.deploymentName]);

/** At most this many Events in one report (the rest go in the next): an activity's input stays small. */
const reportBatch = 20;
/** The Web UI's summary of a report: "write the status: Ramping, with Event RampStarted". */
function reportSummary(phase: Phase | undefined, events: KubeEvent[]): string {
  if (phase === undefined && events.length === 1)
    return `${events[0]!.type} Event ${events[0]!.reason}: ${events[0]!.message}`;
  const reasons =
    events.length === 0
      ? ''
      : `${events.length === 1 ? 'Event' : `${events.length} Events:`} ${events.map((e) => e.reason).join(', ')}`;
  if (phase === undefined) return reasons;
  return `write the status: ${phase}${reasons ? `, with ${reasons}` : ''}`;
}
export class RolloutContext {
  readonly owner: Owner;
  /**
   * The summary the Web UI shows for the activities scheduled now: the `what` of the `call` (or `withSummary`)
   * running. Set only while its function runs synchronously, which is when the activity proxies below are read.
   */
  private summaryNow?: string;
  /** Kubernetes writes: a cancelled one is waited for, so nothing is applied after a deletion deleted it. */
  get kube(): ActivityInterfaceFor<Activities> {
    return this.activities(kubeOptions);
  }
  /** Temporal API calls (routing, versions, counts). */
  get temporal(): ActivityInterfaceFor<Activities> {
    return this.activities(temporalOptions);
  }
  /** Acting on every execution pinned to a version (thousands of calls): bounded by its heartbeat, not a budget. */
  get bulk(): ActivityInterfaceFor<Activities> {
    return this.activities(bulkOptions);
  }
  /**
   * The resync's reads (and its rare repair), as local activities: an idle round is then one workflow task (its
   * timer) instead of three activities and their tasks, a few Temporal calls per hour.
   */
  get local() {
    return proxyLocalActivities<Activities>({ ...localOptions, ...this.summary() });
  }
  /**
   * A report inside the workflow task: two quick attempts within 3 s, then it goes as an activity.
   * The task holds its commands and its worker slot meanwhile: an apiserver outage must not hold them long.
   */
  private get localReporting() {
    return proxyLocalActivities<Activities>({ ...localReportingOptions, ...this.summary() });
  }
  /**
   * A routing write inside the workflow task (`routingCall`): two attempts within 10 s, then it goes as an activity.
   * The task holds its worker slot meanwhile, as long as the server takes to change the routing; while the budget
   * would make the call wait, the activity answers `deferred` at once.
   */
  private get localRoutingWrites() {
    return proxyLocalActivities<Activities>({ ...localRoutingWriteOptions, ...this.summary() });
  }
  /** Status writes and Events: retried until they land (Events never fail: they are best effort). */
  private get reporting(): ActivityInterfaceFor<Activities> {
    return this.activities(reportingOptions);
  }
  /** Versions whose sunset is deleting them: their Deployment going away is not a reason to recreate it. */
  readonly removing = new Set<string>();
  /** Builds whose Deployment the watcher says changed since the last read: a wait reads them (the word is not the truth). */
  readonly deploymentsChanged = new Set<string>();
  /** The final routing change of a rollout is in flight: an abort now is refused. */
  promoting = false;
  private statusDirty = false;
  /** Events waiting for the next `report`. */
  private pendingEvents: KubeEvent[] = [];
  /** Events of this run so far: with the run ID, each Event's name, so a retried report records it once. */
  private eventCount = 0;
  /** A local routing write failed: the next goes as an activity, whose retries outlast an outage. */
  private routingAsActivity = false;
  /** The workflow task (by its history length) in which an activity was last scheduled. */
  private scheduledInTask = -1;
  /** A local report failed: the next goes as an activity, whose retries outlast an outage. */
  private reportAsActivity = false;
  private writing = false;

  constructor(public state: RolloutState) {
    this.owner = state.owner;
  }

  /**
   * The extra argument of a routing write on `t`: our last write's conflict token there (no describe first while
   * nobody else wrote), and the claim of the manager identity on the way.
   */
  routingOptions(t: TemporalTarget): [RoutingCallOptions] {
    const last = this.state.routingToken;
    return [{ ...(last?.of === routingTokenKey(t) ? { conflictToken: last.token } : {}), claim: true }];
  }

  /** Keeps a routing write's token on `t` for the next write; none after another write (the next describes). */
  routed(t: TemporalTarget, result: RoutingCallResult | undefined): void {
    this.state.routingToken = result?.conflictToken
      ? { of: routingTokenKey(t), token: result.conflictToken }
      : undefined;
  }

  /**
   * A ramp (`write` with the activities to make it with), inside the workflow task that decided it: no completion of
   * that task, activity dispatch and task after it. When the local write was deferred (a busy budget) or failed, it
   * goes as an activity; a local write that landed but did not answer in time is harmless again: the activity finds
   * the routing done. Not for a set-current: a local write lands before its task is recorded, and a task lost then
   * (a controller killed) runs again with what came meanwhile first; an abort accepted there would leave the build it
   * aborted current. A stray ramp is undone by the abort's own read of the routing (`clearRampIf`); a set-current,
   * the point of no return, stays an activity, recorded before it is made (`promoting`).
   */
  async routingCall(
    write: (activities: ActivityInterfaceFor<Activities>) => Promise<RoutingCallResult>,
  ): Promise<RoutingCallResult> {
    // Not once the run is due to continue as new: as for reports (see `statusWriter`), a local marker and a signal
    // arriving in its task could be replayed in another order than they happened.
    if (this.routingAsActivity || this.continueAsNewDue()) return this.routingByActivity(write);
    const summary = this.summaryNow; // read synchronously by the proxies, gone after the first await
    try {
      const result = await write(this.localRoutingWrites);
      if (!result.deferred) return result;
    } catch (err) {
      if (isCancellation(err)) throw err;
      // A refusal too (permanent, the manager identity held) goes again as an activity: a local activity's failure
      // can come unwrapped, and the activity's is the one the callers read (`call`).
      log.warn('routing write not made inside the workflow task: again as an activity', { error: String(err) });
      this.routingAsActivity = true; // until one succeeds: an outage's retries belong to an activity
    }
    return summary === undefined
      ? this.routingByActivity(write)
      : this.withSummary(summary, () => this.routingByActivity(write));
  }

  private async routingByActivity(
    write: (activities: ActivityInterfaceFor<Activities>) => Promise<RoutingCallResult>,
  ): Promise<RoutingCallResult> {
    const result = await write(this.temporal);
    this.routingAsActivity = false;
    return result;
  }

  /** Activities with `options`, each call summarised by the `call` or `withSummary` it is made in. */
  activities(options: ActivityOptions): ActivityInterfaceFor<Activities> {
    const proxy = proxyActivities<Activities>({ ...options, ...this.summary() });
    // Notes the task each activity is scheduled in (see `statusWriter`).
    const noteTask = () => void (this.scheduledInTask = workflowInfo().historyLength);
    return new Proxy(proxy, {
      get: (target, name: string) => {
        type Call = ((...args: unknown[]) => Promise<unknown>) & {
          executeWithOptions(options: ActivityOptions, args: unknown[]): Promise<unknown>;
        };
        const call = target[name as keyof Activities] as unknown as Call;
        const noted = (...args: unknown[]) => (noteTask(), call(...args));
        noted.executeWithOptions = (options: ActivityOptions, args: unknown[]) => (
          noteTask(),
          call.executeWithOptions(options, args)
        );
        return noted;
      },
    });
  }

  private summary(): { summary?: string } {
    return this.summaryNow ? { summary: this.summaryNow } : {};
  }

  /**
   * A call as a local activity (in the workflow task: no extra task on the quiet path), made again as an activity
   * when the local one failed within its bound.
   */
  async localFirst<T>(summary: string, call: (a: ActivityInterfaceFor<Activities>) => Promise<T>): Promise<T> {
    try {
      return await this.withSummary(summary, () => call(this.local));
    } catch (err) {
      if (isCancellation(err)) throw err;
      return this.withSummary(summary, () => call(this.kube));
    }
  }

  /**
   * Runs `fn` with `summary` as the Web UI's summary of the activities it schedules (read synchronously: the
   * activity must be called before `fn`'s first await, as `() => ctx.kube.scaleDeployment(…)` does).
   */
  withSummary<T>(summary: string, fn: () => T): T {
    const outer = this.summaryNow;
    this.summaryNow = summary;
    try {
      return fn();
    } finally {
      this.summaryNow = outer;
    }
  }

  /** Long-waiting activities (registration, gates, drainage), heartbeating, up to a day per attempt. */
  waits() {
    return this.activities(waitOptions(waitsTaskQueue(workflowInfo().taskQueue)));
  }

  /**
   * The wait on a gate workflow, with a short heartbeat timeout: a controller that died during a gate is replaced
   * within seconds, and the retry waits on the same gate run (gates are few: their heartbeats cost little).
   */
  gateWaits() {
    return this.activities(gateWaitOptions(waitsTaskQueue(workflowInfo().taskQueue)));
  }

  /** A long-waiting activity that must be done within `budgetMs`, retries included (else a TimeoutFailure). */
  waitsWithin(budgetMs: number) {
    return this.activities(waitWithinOptions(waitsTaskQueue(workflowInfo().taskQueue), budgetMs));
  }

  spec() {
    return this.state.desired!.spec;
  }

  /** The resource's worker deployment, on the Temporal of `place` (default: the spec's). */
  temporalTarget(place?: TemporalPlace): TemporalTarget {
    const d = this.state.desired!;
    return {
      connection: place?.connection ?? d.connection,
      k8sNamespace: this.owner.namespace,
      temporalNamespace: place?.temporalNamespace ?? d.spec.workerOptions.temporalNamespace,
      deploymentName: workerDeploymentName(this.owner.namespace, this.owner.name),
    };
  }

  /** Records a transition: status on the resource, a Kubernetes Event, search attributes. Does not wait for them. */
  transition(phase: Phase, reason: Reason, message: string, type: 'Normal' | 'Warning' = 'Normal'): void {
    const at = now();
    const s = this.state;
    const target = s.target ? { buildId: s.target.buildId, stepIndex: s.target.stepIndex } : undefined;
    const phaseSince = s.phaseSince ?? s.since;
    const { points, measured } = transitionMetrics({
      before: { phase: s.phase, reason: s.reason, phaseSince, measured: s.measured },
      phase,
      reason,
      target,
      now: at,
    });
    emitMetrics(points, this.owner); // a sink, not a command: replay-safe
    Object.assign(s, {
      phase,
      reason,
      message,
      since: at.toISOString(),
      phaseSince: phase === s.phase ? phaseSince : at.toISOString(),
      measured,
    });
    this.showInSearch();
    this.markDirty();
    this.event(type, reason, message);
    this.record('transition', reason, 'glidepath', `${phase}: ${message}`);
  }

  /** The phase and builds as search attributes (when the controller says they are registered). */
  showInSearch(): void {
    if (this.state.timings.searchAttributes === false) return;
    upsertSearchAttributes([
      { key: phaseKey, value: this.state.phase },
      { key: targetBuildKey, value: this.state.target?.buildId ?? '' },
      { key: currentBuildKey, value: this.state.current?.buildId ?? '' },
    ]);
  }

  /** Adds a line to `history` (bounded: the oldest go). */
  record(
    kind: HistoryEntry['kind'],
    what: string,
    who: string,
    why: string,
    buildId = this.state.target?.buildId,
  ): void {
    const history = (this.state.history ??= []);
    history.push({ at: now().toISOString(), kind, what, who, why, ...(buildId ? { buildId } : {}) });
    if (history.length > historyLimit) history.splice(0, history.length - historyLimit);
  }

  /**
   * Someone else holds the worker deployment's manager identity: the phase says who, and the caller tries again
   * after a backoff (attempt 0, 1, … : 1 s doubling to 1 min).
   */
  async waitForManager(
    holder: string,
    attempt: number,
    opts: { untilDeleted?: boolean; background?: boolean } = {},
  ): Promise<void> {
    // Background work (a sunset's version delete) waits too, but the phase is the rollout's to say.
    if (!opts.background && this.state.managerHeldBy !== holder) {
      this.state.managerHeldBy = holder;
      this.transition(
        'Paused',
        'ManagerIdentityHeld',
        `the worker deployment's manager identity is held by ${holder}: the rollout goes on when it is handed back (temporal worker deployment manager-identity unset)`,
        'Warning',
      );
    }
    await this.wait(
      () => this.state.deleting,
      recheckDelay(attempt, 60_000),
      'wait for the manager identity to be handed back',
    );
    if (this.state.deleting) {
      // The deletion's own steps (untilDeleted: false) go on, reporting it; the rollout's stop.
      if (opts.untilDeleted === false)
        throw new Blocked('a routing change', `the worker deployment's manager identity is held by ${holder}`);
      throw new CancelledFailure('the resource is being deleted');
    }
    this.checkpoint();
  }

  /** The manager identity is ours again (or nobody's). */
  managerBack(): void {
    if (this.state.managerHeldBy === undefined) return;
    this.record(
      'transition',
      'ManagerIdentityHandedBack',
      'glidepath',
      `${this.state.managerHeldBy} no longer holds the manager identity`,
    );
    this.event(
      'Normal',
      'ManagerIdentityHandedBack',
      `${this.state.managerHeldBy} no longer holds the manager identity: the rollout goes on`,
    );
    this.state.managerHeldBy = undefined;
    if (this.state.target) this.state.target.managerClaimed = false; // claimed again before its next routing change
    this.markDirty();
  }

  /** A Kubernetes Event on the resource (best effort: the activity never fails). */
  event(type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.pendingEvents.push({ type, reason, message, id: `${workflowInfo().runId}.${++this.eventCount}` });
  }

  /** The status on the resource is out of date: the writer writes the latest state, one write at a time. */
  markDirty(): void {
    this.statusDirty = true;
    this.showDetails();
  }

  /** Says where the rollout stands in the Web UI's current details (no command: nothing to replay). */
  showDetails(): void {
    setCurrentDetails(currentDetails(this.state, now()));
  }

  /**
   * Writes the status (when it changed) and the Events since the last report, in one activity; serial, so an older
   * write never lands after a newer one. A report that failed for good is dropped with a warning. A report runs as a
   * local activity when nothing else of the workflow task waits for it (no activity scheduled in the same task),
   * saving the activity's poll and completion and the workflow task its completion would wake; a task that
   * schedules a routing call or a Deployment write keeps it an activity (a task holding a local activity sends its
   * other commands only once it is done). `onGone`: the resource is gone (deleted unseen, or another object now
   * has its name).
   */
  async statusWriter(onGone: () => void): Promise<never> {
    for (;;) {
      // Nothing is written about a resource this run has not read as itself (a run started by hand touches nothing).
      await condition(() => (this.statusDirty || this.pendingEvents.length > 0) && this.state.read !== undefined);
      await restOfActivation();
      const status = this.statusDirty
        ? renderStatus(this.state, {
            workflowId: workflowInfo().workflowId,
            temporalNamespace: workflowInfo().namespace,
          })
        : undefined;
      this.statusDirty = false;
      const events = this.pendingEvents.splice(0, reportBatch);
      this.writing = true;
      // Never local once the run is to continue as new: a signal arriving while it does fails that task, and on the
      // replay that follows, a local report's marker resolves before the signal, so the run continued without it.
      const local =
        !this.reportAsActivity && this.scheduledInTask !== workflowInfo().historyLength && !this.continueAsNewDue();
      try {
        const summary = summaryLine(reportSummary(status ? this.state.phase : undefined, events));
        const report = { ...(status ? { status } : {}), events };
        const written = await this.withSummary(summary, () =>
          (local ? this.localReporting : this.reporting).report(this.owner, report),
        );
        if (!local) this.reportAsActivity = false;
        if (written === false && !this.state.deleting) onGone();
      } catch (err) {
        if (isCancellation(err)) throw err;
        if (local) {
          // Again, as an activity: its retries outlast an apiserver outage that a workflow task should not wait on.
          log.warn('report not written inside the workflow task: again as an activity', { error: String(err) });
          if (status) this.statusDirty = true;
          this.pendingEvents.unshift(...events);
          this.reportAsActivity = true;
          continue;
        }
        log.warn('status not written', { error: String(err) });
      } finally {
        this.writing = false;
      }
    }
  }

  /**
   * Why the resource is no longer this run's (another installation claimed it), once a read said so: every wait
   * then ends as for a ContinueAsNew, and the next run ends at its first read, touching nothing.
   */
  handedAway?: string;

  /** Status written and Events recorded: nothing of ours in flight outside the main flow. */
  settled(): Promise<void> {
    return condition(() => this.isSettled());
  }

  isSettled(): boolean {
    return !this.statusDirty && !this.writing && this.pendingEvents.length === 0;
  }

  continueAsNewDue(): boolean {
    if (this.handedAway) return true;
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength > (this.state.timings.historyLimit ?? 10_000);
  }

  /**
   * Waits for `ready` (or `timeoutMs`, a timer that the Web UI shows with `summary`); also wakes when a
   * ContinueAsNew is due. Returns whether `ready` holds.
   */
  async wait(ready: () => boolean): Promise<boolean>;
  async wait(ready: () => boolean, timeoutMs: number, summary: string): Promise<boolean>;
  async wait(ready: () => boolean, timeoutMs?: number, summary?: string): Promise<boolean> {
    const woke = () => ready() || this.continueAsNewDue();
    if (timeoutMs === undefined) await condition(woke);
    else await condition(woke, Math.max(1, timeoutMs), summary ? { summary: summaryLine(summary) } : {});
    return ready();
  }

  /** Call after saving progress in the state: continues as new if due. */
  checkpoint(): void {
    if (this.continueAsNewDue()) throw new ContinueAsNewDue();
  }

  /**
   * Runs an activity call. A permanent failure (non-retryable) becomes `Blocked`; a transient one that
   * outlasted its retry policy is said in the status, and the call is made again after a backoff (durable
   * timers, with checkpoints, so the history stays bounded however long it takes).
   */
  async call<T>(
    what: string,
    fn: () => Promise<T>,
    opts: { untilDeleted?: boolean; isExpected?: (err: unknown) => boolean; background?: boolean } = {},
  ): Promise<T> {
    const untilDeleted = opts.untilDeleted ?? true;
    let held = false;
    try {
      for (let round = 0; ; round++) {
        try {
          const result = await this.withSummary(summaryLine(what), fn);
          if (held && !opts.background) this.managerBack();
          return result;
        } catch (err) {
          if (isCancellation(err) || opts.isExpected?.(err)) throw err;
          const holder = managerHeldBy(err);
          if (holder !== undefined && !(this.state.deleting && !untilDeleted)) {
            held = true;
            await this.waitForManager(holder, round, {
              untilDeleted,
              ...(opts.background ? { background: true } : {}),
            });
            continue;
          }
          const permanent = permanentCause(err);
          if (permanent !== undefined) throw new Blocked(what, permanent);
          if (!(err instanceof ActivityFailure)) throw err;
          const message = rootCause(err);
          if (this.state.retrying?.message !== message) {
            this.state.retrying = { what, message, since: now().toISOString() };
            this.markDirty();
            this.event('Warning', 'Retrying', `${what}: ${message}`);
            log.warn('retrying', { what, error: message });
          }
          // A deletion stops the retries of the rollout's calls (its own steps go on: `untilDeleted: false`).
          const stop = () => untilDeleted && this.state.deleting;
          await this.wait(stop, Math.min(5_000 * 2 ** Math.min(round, 10), 300_000), `retry ${what}`);
          if (stop()) throw new CancelledFailure('the resource is being deleted');
          this.checkpoint();
        }
      }
    } finally {
      if (this.state.retrying?.what === what) {
        this.state.retrying = undefined;
        this.markDirty();
      }
    }
  }
}

/**
 * Resolves once the rest of the current activation has run: the handlers and flows woken with the caller, and the
 * activities they schedule on the way (a condition registered false, then made true, unblocks in the SDK's next
 * pass, after the microtasks of this one).
 */
async function restOfActivation(): Promise<void> {
  let passed = false;
  const next = condition(() => passed);
  passed = true;
  await next;
}
