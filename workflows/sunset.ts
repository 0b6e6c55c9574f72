/**
 * Sunset of versions that are no longer current or targeted: wait until Temporal reports them drained (on
 * the Temporal they lived on; polled inside one heartbeating activity, so a long drain adds no history),
 * never an early scale-down; then `scaledownDelay` → scale to 0; `deleteDelay` → delete Deployment and version.
 * Each runs in its own scope: cancelled when the version comes back, on ContinueAsNew (the state says where it
 * was), and on deletion.
 */
import { CancellationScope, condition, isCancellation, log, sleep } from '@temporalio/workflow';
import { parseDuration } from '../api/duration.js';
import type { VersionStatus } from '../api/rollout-status.js';
import { type RolloutContext } from './context.js';
import { Blocked, ContinueAsNewDue, deadlinePassed, NotMadeInTask } from './failures.js';
import { isDrained } from '../api/version-status.js';
import { placeOf, sunsetAction } from './decisions.js';
import type { SunsetVersion, TemporalPlace } from './state.js';

const now = () => new Date();

export class Sunsets {
  private readonly running = new Map<string, CancellationScope>();
  /** Set by `stopAll` (ContinueAsNew or deletion is under way): no sunset starts in this run any more. */
  private stopped = false;
  /** Builds a set-current of this run read as draining as it retired them: their first drainage check is that read. */
  private readonly readDraining = new Set<string>();

  constructor(private readonly ctx: RolloutContext) {}

  /**
   * Retires a build: it is sunset from now on, on the Temporal it lives on (`place`; default the spec's).
   * `readDraining`: the set-current that retired it read it as draining just now (its first check is skipped).
   */
  retire(buildId: string, place?: TemporalPlace, o: { readDraining?: boolean } = {}): void {
    const { state } = this.ctx;
    if (state.deprecated.some((v) => v.buildId === buildId)) return;
    if (o.readDraining) this.readDraining.add(buildId);
    const where = place ?? (state.desired ? placeOf(state.desired) : undefined);
    state.deprecated.push({ buildId, deprecatedSince: now().toISOString(), ...(where ? { place: where } : {}) });
  }

  /** Starts a sunset for every deprecated version that has none, and stops those brought back. */
  sync(): void {
    const { state } = this.ctx;
    for (const [buildId, scope] of this.running) {
      if (!state.deprecated.some((v) => v.buildId === buildId)) {
        scope.cancel();
        this.running.delete(buildId);
      }
    }
    // A read is only for the sunset it was made for: a build brought back before its sunset ran drops it too.
    for (const buildId of this.readDraining)
      if (!state.deprecated.some((v) => v.buildId === buildId)) this.readDraining.delete(buildId);
    if (state.deleting || this.stopped) return; // the next run (or the deletion) takes the deprecated versions on
    for (const v of state.deprecated) {
      if (this.running.has(v.buildId) || v.blocked) continue;
      const scope = new CancellationScope();
      this.running.set(v.buildId, scope);
      scope
        .run(() => this.sunset(v.buildId))
        .catch((err) => {
          if (isCancellation(err) || err instanceof ContinueAsNewDue) return;
          // Never an unhandled rejection (it would fail every workflow task): the version waits for a new spec.
          log.error('sunset failed unexpectedly', { buildId: v.buildId, error: String(err) });
          const version = this.ctx.state.deprecated.find((d) => d.buildId === v.buildId);
          if (version) version.blocked = err instanceof Error ? err.message : String(err);
          this.ctx.markDirty();
        })
        .finally(() => {
          if (this.running.get(v.buildId) === scope) this.running.delete(v.buildId);
        });
    }
  }

  /** Cancels every sunset (ContinueAsNew, deletion); resolves when none runs. */
  async stopAll(): Promise<void> {
    this.stopped = true;
    this.readDraining.clear();
    for (const scope of this.running.values()) scope.cancel();
    await condition(() => this.running.size === 0);
  }

  private async sunset(buildId: string): Promise<void> {
    const ctx = this.ctx;
    const find = () => ctx.state.deprecated.find((v) => v.buildId === buildId);
    try {
      for (;;) {
        const version = find();
        if (!version || !ctx.state.desired) return;
        await this.step(version);
        if (!find()) return;
      }
    } catch (err) {
      if (!(err instanceof Blocked)) throw err;
      const version = find();
      if (version) version.blocked = err.message;
      log.warn('sunset blocked', { buildId, error: err.message });
      ctx.markDirty();
      ctx.event('Warning', 'Blocked', `sunset of ${buildId}: ${err.message}; a new spec, resume or retry tries again`);
    }
  }

  private async step(version: SunsetVersion): Promise<void> {
    const ctx = this.ctx;
    const { buildId } = version;
    const where = ctx.temporalTarget(version.place);
    const action = sunsetAction(version, ctx.spec().sunset, now());
    switch (action.kind) {
      case 'waitForDrained': {
        // One quick read says Draining in the status; then the wait happens inside one activity.
        let status: VersionStatus = this.readDraining.delete(buildId)
          ? 'Draining'
          : await ctx.call(`check drainage of ${buildId}`, () => ctx.temporal.versionStatus(where, buildId));
        if (status !== version.status) {
          version.status = status;
          ctx.markDirty();
        }
        if (!isDrained(status) && !version.openExecutions) await this.countPinned(version);
        if (!isDrained(status) && this.actsAfterMaxDrain(version)) status = await this.drainWithin(version);
        if (!isDrained(status)) {
          const readJustNow = status;
          status = await ctx.call(`wait for ${buildId} to drain`, () =>
            ctx.waits().awaitDrained(where, buildId, ctx.state.timings.drainPollMaxMs, readJustNow),
          );
        }
        version.status = status;
        version.drainedSince = now().toISOString();
        ctx.markDirty();
        ctx.event('Normal', 'VersionDrained', `${buildId} is drained`);
        return;
      }
      case 'waitUntil':
        await sleep(Math.max(0, action.atMs - now().getTime()), {
          summary:
            action.then === 'scaleDown'
              ? `scale ${buildId} to 0 after sunset.scaledownDelay`
              : `delete ${buildId} after sunset.deleteDelay`,
        });
        return;
      case 'scaleDown':
        await ctx.call(`scale ${buildId} to 0`, () => ctx.kube.scaleDeployment(ctx.owner, buildId, 0));
        version.scaledDown = true;
        ctx.markDirty();
        ctx.event('Normal', 'VersionScaledDown', `${buildId} scaled to 0`);
        return;
      case 'delete':
        // Not cancelled half-way: the Deployment and the version go together, then the state says so.
        ctx.removing.add(buildId);
        try {
          await CancellationScope.nonCancellable(async () => {
            await ctx.call(`delete the Deployment of ${buildId}`, () => ctx.kube.deleteDeployment(ctx.owner, buildId));
            // An activity: the server refuses while it remembers the version's pollers, moments after its pods
            // went, and the activity waits that out without holding a workflow task.
            await ctx.call(`delete version ${buildId}`, () => ctx.temporalActivity.deleteVersion(where, buildId), {
              background: true,
            });
          });
        } finally {
          ctx.removing.delete(buildId);
        }
        ctx.state.deprecated = ctx.state.deprecated.filter((v) => v.buildId !== buildId);
        delete ctx.state.deployments[buildId];
        delete ctx.state.templates?.[buildId];
        ctx.markDirty();
        ctx.event('Normal', 'VersionDeleted', `${buildId} deleted`);
        return;
    }
  }

  /**
   * Counts the executions pinned to a version as its draining begins, once, for the Web UI's details ("v1
   * draining, 3 pinned executions open"). Only words depend on it: a failure leaves the number out.
   */
  private async countPinned(version: SunsetVersion): Promise<void> {
    const ctx = this.ctx;
    const { buildId } = version;
    const count = () =>
      ctx.withSummary(`count executions pinned to ${buildId}`, () =>
        ctx.temporal.countOpenExecutions(ctx.temporalTarget(version.place), [buildId]),
      );
    try {
      // Not counted inside the task: once more, as an activity (no retries past that: only words depend on it).
      const open = await count().catch((err: unknown) =>
        err instanceof NotMadeInTask ? count() : Promise.reject(err),
      );
      version.openExecutions = { count: open[buildId] ?? 0, at: now().toISOString() };
      ctx.showDetails();
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('pinned executions not counted', { buildId, error: String(err) });
    }
  }

  /**
   * `sunset.maxDrainDuration` with an action other than Wait: drains until then, then acts once on what is still
   * pinned to the version (cancel, terminate or signal), counted and said before and after. Returns the status.
   */
  private actsAfterMaxDrain(version: SunsetVersion): boolean {
    const { maxDrainDuration, onMaxDrain } = this.ctx.spec().sunset;
    return !!maxDrainDuration && (onMaxDrain?.action ?? 'Wait') !== 'Wait' && !version.maxDrainActed;
  }

  private async drainWithin(version: SunsetVersion): Promise<VersionStatus> {
    const ctx = this.ctx;
    const { buildId } = version;
    const { maxDrainDuration: max, onMaxDrain } = ctx.spec().sunset;
    const maxDrainDuration = max!;
    const action = onMaxDrain!.action as 'Cancel' | 'Terminate' | 'Signal';
    const where = ctx.temporalTarget(version.place);
    const deadline = Date.parse(version.deprecatedSince) + parseDuration(maxDrainDuration);
    if (deadline > now().getTime()) {
      try {
        return await ctx.call(
          `wait for ${buildId} to drain`,
          () =>
            ctx.waitsWithin(deadline - now().getTime()).awaitDrained(where, buildId, ctx.state.timings.drainPollMaxMs),
          { isExpected: deadlinePassed },
        );
      } catch (err) {
        if (!deadlinePassed(err)) throw err;
      }
    }
    const open = async () =>
      (
        await ctx.call(`count executions pinned to ${buildId}`, () =>
          ctx.temporal.countOpenExecutions(where, [buildId]),
        )
      )[buildId] ?? 0;
    const before = await open();
    const verb = { Cancel: 'cancel', Terminate: 'terminate', Signal: `signal ${onMaxDrain?.signalName}` }[action];
    ctx.event(
      'Warning',
      'MaxDrainReached',
      `${before} executions still pinned to ${buildId} after ${maxDrainDuration} of draining: ${verb} them`,
    );
    const done = await ctx.call(`${verb} the executions pinned to ${buildId}`, () =>
      ctx.bulk.actOnPinned(
        where,
        buildId,
        { kind: action, ...(onMaxDrain?.signalName ? { signalName: onMaxDrain.signalName } : {}) },
        `${buildId} drained for longer than sunset.maxDrainDuration (${maxDrainDuration})`,
      ),
    );
    version.maxDrainActed = true;
    const after = await open();
    const said = `${verb}: ${done.acted} of ${done.matched} executions pinned to ${buildId}; ${after} still open`;
    ctx.event('Normal', 'PinnedExecutionsHandled', said);
    ctx.record('transition', 'PinnedExecutionsHandled', 'glidepath', said, buildId);
    return ctx.call(`check drainage of ${buildId}`, () => ctx.temporal.versionStatus(where, buildId));
  }

  get size(): number {
    return this.running.size;
  }
}
