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
  setCurrentDetails,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { KubeEvent, RoutingCallOptions, RoutingCallResult, TemporalRef } from '../activities/index.js';
import type { Phase, Reason } from '../api/rollout-status.js';
import { ActivityCalls, restOfActivation } from './calls.js';
import { managerBack, waitForManager } from './manager-identity.js';
import { renderStatus } from './render-status.js';
import { currentDetails, reportSummary, summaryLine } from './details.js';
import { emitMetrics, transitionMetrics } from './metrics.js';
import { currentBuildKey, phaseKey, targetBuildKey } from './search-attributes.js';
import type { HistoryEntry, RolloutState, TemporalPlace } from './state.js';
import type { Owner } from '../api/resource.js';
import {
  Blocked,
  ContinueAsNewDue,
  managerHeldBy,
  NotMadeInTask,
  permanentCause,
  rootCause,
  workerLost,
} from './failures.js';

const now = () => new Date();

/** Entries `history` keeps (the oldest go first): enough for a rollout's story, bounded across ContinueAsNew. */
export const historyLimit = 100;

/** Which worker deployment a conflict token is of: the server, the namespace, the name. */
const routingTokenKey = (t: TemporalRef) =>
  JSON.stringify([t.hostPort, t.temporalNamespace, t.owner.namespace, t.owner.name]);

/** At most this many Events in one report (the rest go in the next): an activity's input stays small. */
const reportBatch = 20;
export class RolloutContext extends ActivityCalls {
  readonly owner: Owner;
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
  /** A local report failed: the next goes as an activity, whose retries outlast an outage. */
  private reportAsActivity = false;
  private writing = false;

  constructor(public state: RolloutState) {
    super();
    this.owner = state.owner;
  }

  /**
   * The extra argument of a routing write on `t`: our last write's conflict token there (no describe first while
   * nobody else wrote), the claim of the manager identity on the way, and what let the build past its rollout gate.
   */
  routingOptions(t: TemporalRef, gate?: string): [RoutingCallOptions] {
    const last = this.state.routingToken;
    return [
      {
        ...(last?.of === routingTokenKey(t) ? { conflictToken: last.token } : {}),
        claim: true,
        ...(gate !== undefined ? { gate } : {}),
      },
    ];
  }

  /** Keeps a routing write's token on `t` for the next write; none after another write (the next describes). */
  routed(t: TemporalRef, result: RoutingCallResult | undefined): void {
    this.state.routingToken = result?.conflictToken
      ? { of: routingTokenKey(t), token: result.conflictToken }
      : undefined;
  }

  spec() {
    return this.state.desired!.spec;
  }

  /**
   * The resource's worker deployment, on the Temporal of `place` (default: the spec's): a reference, which the
   * activity resolves against the apiserver (the connection is never the workflow's to give).
   */
  temporalTarget(place?: TemporalPlace): TemporalRef {
    const d = this.state.desired!;
    return {
      owner: this.owner,
      temporalNamespace: place?.temporalNamespace ?? d.spec.workerOptions.temporalNamespace,
      hostPort: (place?.connection ?? d.connection).hostPort,
    };
  }

  /** Records a transition: status on the resource, a Kubernetes Event, search attributes. Does not wait for them. */
  transition(phase: Phase, reason: Reason, message: string, type: 'Normal' | 'Warning' = 'Normal'): void {
    const at = now();
    const s = this.state;
    const target = s.target ? { buildId: s.target.buildId, stepIndex: s.target.step?.index } : undefined;
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
   * write never lands after a newer one. A report that failed for good is dropped with a warning. A report runs
   * inside the workflow task (`reportsInTask`), saving the activity's poll and completion and the workflow task its
   * completion would wake; it goes as an activity after a local one failed. `onGone`: the resource is gone (deleted unseen, or another object now
   * has its name).
   */
  async statusWriter(onGone: () => void): Promise<never> {
    for (;;) {
      // Nothing is written about a resource this run has not read as itself (a run started by hand touches nothing).
      await condition(() => (this.statusDirty || this.pendingEvents.length > 0) && this.state.read !== undefined);
      await restOfActivation();
      if (this.reportInNextTask) {
        this.reportInNextTask = false;
        // A timer ends the routing write's task (its marker recorded); the report runs in the task the timer wakes.
        if (!this.reportAsActivity && this.reportsInTask()) await sleep(1, { summary: 'report in the next task' });
      }
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
      const local = !this.reportAsActivity && this.reportsInTask();
      try {
        const summary = summaryLine(reportSummary(status ? this.state.phase : undefined, events));
        const report = { ...(status ? { status } : {}), events };
        const written = await this.withSummary(summary, () => this.reporter(local).report(this.owner, report));
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

  /** Set when the run continues as new: what it still does (its last reports) goes as activities. */
  ending = false;

  runEnding(): boolean {
    return this.ending || this.handedAway !== undefined;
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
   * Runs an activity call, the one place a call is tried again. A permanent failure (non-retryable) becomes
   * `Blocked`. A call that failed inside the workflow task is made again at once as an activity; one whose worker
   * died, at once too; any other transient failure after a durable backoff (200 ms doubling to 30 s, with
   * checkpoints, so the history stays bounded however long it takes). Past `retryShownAfterMs` of failing, the
   * status says what is retried and why.
   */
  async call<T>(
    what: string,
    fn: () => Promise<T>,
    opts: { untilDeleted?: boolean; isExpected?: (err: unknown) => boolean; background?: boolean } = {},
  ): Promise<T> {
    const untilDeleted = opts.untilDeleted ?? true;
    let held = false;
    let failures = 0;
    let failingSince: number | undefined;
    let announced: string | undefined; // the failure this call's Warning Event told
    let retriedAtOnce = false;
    try {
      for (let round = 0; ; round++) {
        const attemptStarted = Date.now();
        try {
          const result = await this.withSummary(summaryLine(what), fn);
          if (held && !opts.background) managerBack(this);
          return result;
        } catch (err) {
          if (isCancellation(err) || opts.isExpected?.(err)) throw err;
          const holder = managerHeldBy(err);
          if (holder !== undefined && !(this.state.deleting && !untilDeleted)) {
            held = true;
            await waitForManager(this, holder, round, {
              untilDeleted,
              ...(opts.background ? { background: true } : {}),
            });
            continue;
          }
          const permanent = permanentCause(err);
          if (permanent !== undefined) throw new Blocked(what, permanent);
          const failure = err instanceof NotMadeInTask ? err.failure : err;
          if (!(failure instanceof ActivityFailure) && !(err instanceof NotMadeInTask)) throw err;
          const message = failure instanceof ActivityFailure ? rootCause(failure) : String(failure);
          log.warn('retrying', { what, error: message });
          // Made again at once: as an activity, after it failed inside the task; on a live worker, after one died.
          const atOnce: boolean = (err instanceof NotMadeInTask || workerLost(failure)) && !retriedAtOnce;
          retriedAtOnce = atOnce;
          const shownAfterMs = this.state.timings.retryShownAfterMs ?? 30_000;
          // An attempt that ran that long before it failed (a long wait's timeout, a blip hours in) was no failing:
          // the failing, and its backoff, start again from its end.
          if (Date.now() - attemptStarted >= shownAfterMs) {
            [failingSince, failures, announced] = [undefined, 0, undefined];
            this.doneRetrying(what);
          }
          failingSince ??= Date.now();
          if (Date.now() - failingSince >= shownAfterMs) {
            this.showRetrying(what, message, failingSince);
            // Once per failure and call: calls failing side by side share the status, not each other's Events.
            if (announced !== message) this.event('Warning', 'Retrying', `${what}: ${(announced = message)}`);
          }
          if (atOnce) {
            this.checkpoint();
            continue;
          }
          // A deletion stops the retries of the rollout's calls (its own steps go on: `untilDeleted: false`).
          const stop = () => untilDeleted && this.state.deleting;
          await this.wait(stop, Math.min(200 * 2 ** Math.min(failures++, 8), 30_000), `retry ${what}`);
          if (stop()) throw new CancelledFailure('the resource is being deleted');
          this.checkpoint();
        }
      }
    } finally {
      this.doneRetrying(what);
    }
  }

  private doneRetrying(what: string): void {
    if (this.state.retrying?.what !== what) return;
    this.state.retrying = undefined;
    this.markDirty();
  }

  /** Says in the status what is retried and why (the latest of calls failing side by side). */
  private showRetrying(what: string, message: string, since: number): void {
    if (this.state.retrying?.what === what && this.state.retrying.message === message) return;
    this.state.retrying = { what, message, since: new Date(since).toISOString() };
    this.markDirty();
  }
}
