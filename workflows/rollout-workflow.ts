/**
 * RolloutWorkflow: one per TemporalWorkerDeployment, for as long as the resource exists. It reads the resource,
 * runs one rollout at a time (./rollout.ts), sunsets what is no longer routed to (./sunset.ts), heals drift
 * (./housekeeping.ts), continues as new when its history is long (from any wait: the state says where it was) and
 * cleans up on deletion (./deletion.ts). Messages only wake it (./handlers.ts); what it acts on is read.
 */
import { condition, log, workflowInfo } from '@temporalio/workflow';
import { Blocked, ContinueAsNewDue } from './failures.js';
import { rolloutPending } from './decisions.js';
import { deleteEverything, type DeletionResult } from './deletion.js';
import { registerHandlers } from './handlers.js';
import { runHousekeeping } from './housekeeping.js';
import { Resource, type FirstRead, type RolloutInput } from './resource.js';
import type { Owner } from '../api/resource.js';

export type { RolloutInput } from './resource.js';

export async function RolloutWorkflow(input: RolloutInput): Promise<DeletionResult | void> {
  const r = new Resource(input);
  const { ctx, owner } = r;
  registerHandlers(r);
  // The resource is gone, or holds another object (a status write refused): read what it is.
  void ctx.statusWriter(() => void (r.state.readDue = true));

  const first = await readFirst(r);
  if (first === 'unconfirmed') {
    log.warn('the resource this run was started for does not exist: ending without touching anything', { owner });
    return;
  }
  // A run started by hand, or one whose resource another installation rolls out, touches nothing.
  if (typeof first === 'object' && 'elsewhere' in first) {
    log.warn(`not the rollout of its resource here (${first.elsewhere}): ending without touching anything`, {
      owner,
      workflowId: workflowInfo().workflowId,
    });
    return;
  }
  if (first === 'continueAsNew') return r.continueAsNew();
  if (first !== 'read') return r.continueAsNew(first);

  runHousekeeping(r);
  r.sunsets.sync();
  for (;;) {
    await condition(() => r.state.deleting || r.rampsPending() || rolloutPending(r.state) || ctx.continueAsNewDue());
    if (r.state.deleting) break;
    try {
      if (r.rampsPending()) {
        await r.clearRamps();
        continue;
      }
    } catch (err) {
      if (!(err instanceof ContinueAsNewDue)) throw err;
      await r.continueAsNewNow();
    }
    if (rolloutPending(r.state)) {
      const outcome = await r.runRollout();
      if (outcome === 'continueAsNew') await r.continueAsNewNow();
      if (outcome instanceof Blocked) await waitWhileBlocked(r, outcome);
      continue;
    }
    await r.continueAsNewNow();
  }
  return deletion(r);
}

/** The first read, tried again after a refusal; a long outage continues as new (the next run reads first too). */
async function readFirst(r: Resource): Promise<FirstRead | 'continueAsNew'> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await r.readOwner();
    } catch (err) {
      // Never a failed workflow task: a long outage continues as new, a refusal waits.
      if (err instanceof ContinueAsNewDue) return 'continueAsNew';
      if (!(err instanceof Blocked)) throw err;
      log.warn('the resource could not be read', { error: err.message });
      await condition(() => false, Math.min(1_000 * 2 ** attempt, 60_000), {
        summary: 'read the resource again after a refusal',
      });
      if (r.ctx.continueAsNewDue()) return 'continueAsNew';
    }
  }
}

/** A rollout stopped on a permanent error: Failed until a new spec, a control, a deletion or a ramp to clear. */
async function waitWhileBlocked(r: Resource, blocked: Blocked): Promise<void> {
  r.ctx.transition('Failed', 'Blocked', `${blocked.message}; change the spec, or resume to try again`, 'Warning');
  r.unblocked = false;
  r.blocked = true;
  await condition(
    () => r.unblocked || r.state.deleting || r.rampsPending() || !rolloutPending(r.state) || r.ctx.continueAsNewDue(),
  );
  r.blocked = false;
  if (!r.unblocked && !r.state.deleting && !r.rampsPending() && rolloutPending(r.state)) await r.continueAsNewNow();
}

/** Cleans up Temporal and Kubernetes; then a new object under the name (read, never taken from a message) starts its own lifecycle. */
async function deletion(r: Resource): Promise<DeletionResult> {
  const { ctx, owner } = r;
  let result: DeletionResult;
  try {
    await r.sunsets.stopAll();
    await condition(() => r.housekeeping === 0);
    result = await deleteEverything(ctx);
  } catch (err) {
    if (err instanceof ContinueAsNewDue) return r.continueAsNewNow();
    throw err;
  }
  await ctx.settled();
  // (Bounded: a stream of hints must not grow the history; the watcher's resync wakes a missed one.)
  for (let look = 0; look < 3; look++) {
    r.state.successorHinted = false;
    let next: Owner | undefined;
    try {
      next = await ctx.call('look for a new object under the name', () => ctx.kube.findSuccessor(owner), {
        untilDeleted: false,
      });
    } catch (err) {
      if (err instanceof ContinueAsNewDue) return r.continueAsNew(); // cleans up again, then looks
      if (!(err instanceof Blocked)) throw err;
      log.warn('could not look for a new object under the name', { error: err.message });
      break;
    }
    if (next) return r.continueAsNew(next);
    if (!r.state.successorHinted) break;
  }
  if (result.problems.length) log.warn('deleted with problems', { problems: result.problems });
  return result;
}
