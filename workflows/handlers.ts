/**
 * RolloutWorkflow's message handlers. The spec, the deletion and Deployment changes only wake the workflow: what
 * it acts on is read (Resource.readOwner). Controls (pause, resume, promote, abort, rollback, retry: each a signal
 * and an update) are checked against the state (./controls.ts) and folded into it. Each is checked, so no input
 * can fail a workflow task.
 */
import { condition, log, setHandler } from '@temporalio/workflow';
import { forgetForeignTemplates, withAliasedControl } from './adoption.js';
import {
  parseControl,
  planRetry,
  planRollback,
  problemWithControl,
  rollbackWindowMs,
  type Control,
} from './controls.js';
import { alreadyRead } from './decisions.js';
import * as messages from './messages.js';
import type { Resource } from './resource.js';
import type { RolloutStatus } from './state.js';
import type { DeploymentObservation } from '../api/resource.js';

const now = () => new Date();

/** A handler whose bad input is logged and dropped, never a failed workflow task. */
const safely =
  <A extends unknown[]>(name: string, handler: (...args: A) => void) =>
  (...args: A) => {
    try {
      handler(...args);
    } catch (err) {
      log.warn('message ignored', { name, error: err instanceof Error ? err.message : String(err) });
    }
  };

export function registerHandlers(r: Resource): void {
  registerWakeUps(r);
  registerControls(r, new Controls(r));
  setHandler(messages.status, () => r.status());
  setHandler(messages.history, () => r.state.history ?? []);
}

function registerWakeUps(r: Resource): void {
  const { owner, ctx } = r;
  setHandler(
    messages.specChanged,
    safely('specChanged', (hint?: unknown) => {
      const uid = (hint as messages.SpecChangedHint | undefined)?.uid;
      if (uid !== undefined && uid !== owner.uid) r.state.successorHinted = true;
      if (!alreadyRead(r.state, hint)) r.state.readDue = true;
    }),
  );
  setHandler(
    messages.deleted,
    safely('deleted', (req?: messages.DeletedRequest) => {
      const uid = (req as { uid?: unknown } | undefined)?.uid;
      if (typeof uid !== 'string' || uid === '')
        return r.refuse('deleted', 'it names no uid: send { "uid": "<the resource\'s uid>" }');
      if (uid !== owner.uid) return void (r.state.successorHinted = true); // another object under this name
      r.state.readDue = true;
    }),
  );
  setHandler(
    messages.deploymentObserved,
    safely('deploymentObserved', (input: unknown) => {
      const obs = input as DeploymentObservation;
      if (typeof obs?.buildId !== 'string' || typeof obs.exists !== 'boolean')
        throw new Error('not a Deployment observation');
      if (obs.ownerUid && obs.ownerUid !== owner.uid) return;
      // A wake-up: a wait on this build reads its Deployment (the same resourceVersion as last read: nothing new).
      const s = r.state;
      const known = [s.current?.buildId, s.target?.buildId, ...s.deprecated.map((v) => v.buildId)].includes(
        obs.buildId,
      );
      const read = s.deployments[obs.buildId];
      if (
        known &&
        (!read?.resourceVersion || read.resourceVersion !== obs.resourceVersion || read.exists !== obs.exists)
      )
        ctx.deploymentsChanged.add(obs.buildId);
      const live = !ctx.removing.has(obs.buildId) && known;
      if (!obs.exists && live && !s.deleting) s.resyncDue = true;
    }),
  );
  setHandler(
    messages.resync,
    safely('resync', () => void (r.state.resyncDue = true)),
  );
}

function registerControls(r: Resource, controls: Controls): void {
  const names: messages.ControlName[] = ['pause', 'resume', 'promote', 'abort', 'rollback', 'retry'];
  for (const name of names) {
    setHandler(
      messages.controlSignals[name],
      safely(name, (req?: unknown) => {
        const c = withAliasedControl(r.state, parseControl(req));
        const why = controls.problemWith(name, req);
        if (why) return r.refuse(name, why, typeof c === 'string' ? undefined : who(c, 'signal'));
        controls.take(name, c as Control, 'signal');
      }),
    );
    setHandler(
      messages.updates[name],
      async (req?: unknown): Promise<RolloutStatus> => {
        const tookEffect = controls.take(name, withAliasedControl(r.state, parseControl(req)) as Control, 'update');
        // Answer with the status once the control shows in it (routing changed, phase Paused…), or after 20 s; at
        // once when this run is continuing as new (the control is carried in the state; the next run shows it).
        await condition(() => tookEffect() || r.continuingAsNew || r.state.deleting, 20_000, {
          summary: `${name}: answer once it shows in the status`,
        });
        return r.status();
      },
      {
        validator: (req?: unknown) => {
          const why = controls.problemWith(name, req);
          if (why) throw new Error(`${name} refused: ${why}`);
        },
      },
    );
  }
}

const who = (c: Control, via: 'signal' | 'update') => c.identity || `unknown (${via})`;

/** Controls folded into the state. Each `take` returns what says the control took effect. */
class Controls {
  constructor(private readonly r: Resource) {}

  private get state() {
    return this.r.state;
  }

  private seen(c: Control): boolean {
    return c.requestId !== undefined && (this.state.recentRequests ?? []).includes(c.requestId);
  }

  /** Why this control is refused now, or undefined. */
  problemWith(name: messages.ControlName, req: unknown): string | undefined {
    const c = withAliasedControl(this.state, parseControl(req));
    if (typeof c === 'string') return c;
    if (this.seen(c)) return undefined; // a re-sent control: answered, not taken twice
    return problemWithControl(name, c, this.state, {
      promoting: this.r.ctx.promoting,
      blocked: this.r.blocked,
      now: now(),
    });
  }

  /** Takes a control that passed `problemWith`; returns what says it took effect. */
  take(name: messages.ControlName, c: Control, via: 'signal' | 'update'): () => boolean {
    const { r, state } = this;
    if (this.seen(c)) return () => true;
    if (c.requestId) state.recentRequests = [...(state.recentRequests ?? []), c.requestId].slice(-50);
    const by = who(c, via);
    const buildId = state.target?.buildId;
    r.ctx.record('control', name, by, c.reason ?? '', name === 'rollback' ? (c.toBuildId ?? buildId) : buildId);
    r.ctx.event(
      'Normal',
      `${name[0]!.toUpperCase()}${name.slice(1)}`,
      `${name}${c.full ? ' (full)' : ''} by ${by}${c.reason ? `: ${c.reason}` : ''}`,
    );
    switch (name) {
      case 'pause':
        state.pausedBy = { reason: c.reason || `paused by ${by}`, buildId, who: by };
        return () => this.state.phase === 'Paused' || this.state.target?.buildId !== buildId;
      case 'resume':
        if (state.pausedBy?.cause === 'GateFailed') this.newGateRuns();
        state.pausedBy = undefined;
        r.unblocked = true;
        this.retrySunsets();
        return () => this.state.phase !== 'Paused' || this.state.pausedBy !== undefined;
      case 'promote':
        state.promote = { full: c.full === true || state.promote?.full === true, buildId };
        r.unblocked = true;
        return () =>
          this.state.target?.buildId !== buildId ||
          (this.state.promote === undefined && !(c.full && this.state.current?.buildId !== buildId));
      case 'abort':
        this.abortTarget('Aborted', c.reason || `aborted by ${by}`);
        return () => this.rampCleared(buildId!);
      case 'rollback':
        return this.rollBackTo(c, by);
      case 'retry':
        return this.retry(c);
    }
  }

  /** Sunsets that stopped on an error start again. */
  private retrySunsets(): void {
    this.state.deprecated = this.state.deprecated.map((v) => (v.blocked ? { ...v, blocked: undefined } : v));
    this.r.sunsets.sync();
  }

  private rampCleared(buildId: string): boolean {
    return (
      this.state.target?.buildId !== buildId && !(this.state.rampsToClear ?? []).some((e) => e.buildId === buildId)
    );
  }

  /** The target gets no more new work and is sunset; its ramp is cleared first thing (Aborted, or RolledBack). */
  private abortTarget(cause: 'Aborted' | 'RolledBack', reason: string, opts: { movePinned?: boolean } = {}): void {
    const { r, state } = this;
    const target = state.target!;
    state.aborted = { buildId: target.buildId, reason, cause };
    state.pausedBy = undefined; // a pause does not outlive the rollout it held
    state.promote = undefined;
    r.sunsets.retire(target.buildId, target.place);
    const movePinned = opts.movePinned !== false && state.desired?.spec.rollout.onAbort?.movePinned === true;
    state.rampsToClear = [
      ...(state.rampsToClear ?? []),
      {
        buildId: target.buildId,
        ...(target.place ? { place: target.place } : {}),
        ...(movePinned ? { movePinned } : {}),
      },
    ];
    state.target = undefined;
    r.sunsets.sync();
    r.cancelRollout();
  }

  private rollBackTo(c: Control, by: string): () => boolean {
    const { r, state } = this;
    const reason = c.reason || `rolled back by ${by}`;
    const plan = planRollback(state, c.toBuildId, now(), rollbackWindowMs(state));
    if (plan.kind === 'refused') return () => true; // (validated before: not reached)
    if (plan.kind === 'abortTarget') {
      this.abortTarget('RolledBack', reason);
      return () => this.rampCleared(plan.buildId);
    }
    const to = plan.buildId;
    // A target in flight is abandoned too (its pinned work is not moved onto the build being rolled back from).
    if (state.target && state.aborted?.buildId !== state.target.buildId)
      this.abortTarget('RolledBack', reason, { movePinned: false });
    const spec = state.desired!;
    // Routing now differs from the spec: its build is held as rolled back until the spec changes or `retry`.
    state.aborted = spec.buildId === to ? undefined : { buildId: spec.buildId, reason, cause: 'RolledBack' };
    const version = state.deprecated.find((v) => v.buildId === to);
    state.deprecated = state.deprecated.filter((v) => v.buildId !== to);
    state.target = {
      buildId: to,
      generation: spec.generation,
      stage: 'deploying',
      rollback: { reason, who: by },
      ...(version?.place ? { place: version.place } : {}),
    };
    r.sunsets.sync();
    r.cancelRollout();
    r.unblocked = true;
    return () => this.state.current?.buildId === to;
  }

  private retry(c: Control): () => boolean {
    const { r, state } = this;
    const plan = planRetry(state, c.buildId, r.blocked);
    switch (plan.kind) {
      case 'rollOutAgain': {
        const spec = state.desired!;
        state.aborted = undefined;
        state.deprecated = state.deprecated.filter((v) => v.buildId !== plan.buildId);
        state.templates = { ...state.templates, [plan.buildId]: state.templates?.[plan.buildId] ?? spec.spec.template };
        forgetForeignTemplates(state); // an adopted build is never rendered
        state.target = { buildId: plan.buildId, generation: spec.generation, stage: 'deploying' };
        r.sunsets.sync();
        r.unblocked = true;
        return () => this.state.phase !== 'Aborted';
      }
      case 'unpause':
        if (state.pausedBy?.cause?.startsWith('Analysis') && state.target) state.target.reanalyse = true;
        if (state.pausedBy?.cause === 'GateFailed') this.newGateRuns();
        state.pausedBy = undefined;
        return () => this.state.phase !== 'Paused';
      case 'unblock':
        r.unblocked = true;
        this.retrySunsets();
        return () => !r.blocked;
      case 'refused':
        return () => true;
    }
  }

  /** A person asked for a failed gate to run again: its next run gets a workflow ID of its own. */
  private newGateRuns(): void {
    if (this.state.target) this.state.target.gateRunIds = undefined;
  }
}
