/**
 * The latency figures read off the rollouts' workflow histories, on the server's clock; with BENCH_VERBOSE, where
 * the time went, event by event.
 */
import type { temporal } from '@temporalio/proto';
import proto from '@temporalio/proto';
import { rolloutWorkflowId } from '../../api/names.js';
import {
  completedActivities,
  eventTime as at,
  localActivityScheduledAt,
  localActivityType,
  scheduledActivityType,
} from '../../scripts/history.js';
import { namespace, type World } from './world.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const eventType = (e: HistoryEvent) => proto.temporal.api.enums.v1.EventType[e.eventType ?? 0];
/** The event an activity's event refers to: its scheduling (a local one's is its marker). */
const refOf = (e: HistoryEvent) =>
  e.activityTaskStartedEventAttributes?.scheduledEventId ??
  e.activityTaskCompletedEventAttributes?.scheduledEventId ??
  e.eventId;

/** A v1 → v2 rollout's figures, from its workflow history (server timestamps). */
export interface RolloutFigures {
  /** The v2 Deployment available → its first ramp done. */
  availableToRouting: number[];
  /** The same from when v2 was also registered (seen by the bench). */
  readyToRouting: number[];
  /** Each step's transition beyond its pause: timer fired → the next ramp done (the last step's: set current done). */
  steps: number[];
  lastSteps: number[];
  /** Ours alone: a step's timer fired → its routing call started (the workflow task, and an activity's dispatch). */
  dispatch: number[];
}

export const merged = (all: RolloutFigures[]): RolloutFigures => ({
  availableToRouting: all.flatMap((f) => f.availableToRouting),
  readyToRouting: all.flatMap((f) => f.readyToRouting),
  steps: all.flatMap((f) => f.steps),
  lastSteps: all.flatMap((f) => f.lastSteps),
  dispatch: all.flatMap((f) => f.dispatch),
});

const historyOf = async (world: World, name: string) =>
  (
    await world.client.workflow
      .getHandle(rolloutWorkflowId(world.controller.installation, namespace, name))
      .fetchHistory()
  ).events ?? [];

export async function rolloutFigures(
  world: World,
  name: string,
  v1Build: string,
  registered: number | undefined,
  /** When the resource was created: with `verbose.apply`, its apply's events are printed from then. */
  appliedAt: number | undefined,
  verbose: { apply?: boolean; ramp?: boolean; steps?: boolean },
): Promise<RolloutFigures> {
  const figures: RolloutFigures = {
    availableToRouting: [],
    readyToRouting: [],
    steps: [],
    lastSteps: [],
    dispatch: [],
  };
  const events = await historyOf(world, name);
  // Scheduled activities by their event, and local ones (markers) by theirs.
  const activityName = new Map<string, string>();
  for (const e of events) activityName.set(String(e.eventId), scheduledActivityType(e) ?? localActivityType(e) ?? '');
  const print = (label: string, from: number, e: HistoryEvent, more = '') =>
    console.log(
      `  ${name}${label} +${(at(e) - from).toFixed(0)} ms ${eventType(e)} ${activityName.get(String(refOf(e))) ?? ''}${more}`,
    );
  // Scheduled or local (a ramp is local), with when its result was recorded.
  const done = completedActivities(events);
  const completed = (type: string) => done.filter((a) => a.type === type);
  // The last "available" signal of the v2 Deployment, then the v2 routing change.
  const v2Available = events.filter((e) => {
    const s = e.workflowExecutionSignaledEventAttributes;
    if (s?.signalName !== 'deploymentObserved') return false;
    const payload = JSON.parse(Buffer.from(s.input!.payloads![0]!.data!).toString()) as {
      buildId: string;
      availableReplicas?: number;
    };
    return payload.buildId !== v1Build && (payload.availableReplicas ?? 0) >= 1;
  })[0];
  const firstRamp = completed('setRamping')[0];
  if (verbose.apply && appliedAt !== undefined) {
    // The apply, on the server's clock from the create call: the workflow's first events until the Deployment is made.
    // A new resource's first apply: with its adoption check, else on its own (v2's comes later either way).
    const applied = completed('adoptOrApplyDeployment')[0] ?? completed('ensureVersionedDeployment')[0];
    for (const e of events.filter((e) => Number(e.eventId) <= (applied?.eventId ?? 0))) {
      // A local activity's marker is written with its task's completion; when it was scheduled is in the marker.
      const local = localActivityScheduledAt(e);
      print(' apply', appliedAt, e, local === undefined ? '' : ` (scheduled +${(local - appliedAt).toFixed(0)} ms)`);
    }
  }
  if (v2Available && firstRamp) {
    figures.availableToRouting.push(firstRamp.recordedAt - at(v2Available));
    if (registered) figures.readyToRouting.push(firstRamp.recordedAt - Math.max(at(v2Available), registered));
    if (verbose.ramp) {
      // Where the time went: every event from the v2 Deployment's availability to its first ramp.
      for (const e of events.filter(
        (e) => Number(e.eventId) >= Number(v2Available.eventId) && Number(e.eventId) <= firstRamp.eventId,
      ))
        print('', at(v2Available), e);
      if (registered)
        console.log(`  ${name} registered (seen by the bench) at +${(registered - at(v2Available)).toFixed(0)} ms`);
    }
  }
  const stepTimerStarts = new Map(
    events.filter((e) => e.timerStartedEventAttributes).map((e) => [String(e.eventId), e]),
  );
  for (const fired of events.filter((e) => e.timerFiredEventAttributes)) {
    const started = stepTimerStarts.get(String(fired.timerFiredEventAttributes!.startedEventId));
    const summary = started?.userMetadata?.summary?.data
      ? Buffer.from(started.userMetadata.summary.data).toString()
      : '';
    if (!summary.includes('ramp ')) continue; // only the steps' pause timers
    const next = completed('setRamping')
      .concat(completed('setCurrent'))
      .filter((a) => a.recordedAt >= at(fired))
      .sort((a, b) => a.recordedAt - b.recordedAt)[0];
    if (!next) continue;
    const callStarted = next.scheduledAt ?? next.startedAt;
    if (callStarted !== undefined) figures.dispatch.push(callStarted - at(fired));
    (next.type === 'setCurrent' ? figures.lastSteps : figures.steps).push(next.recordedAt - at(fired));
    if (verbose.steps)
      for (const e of events.filter(
        (e) => Number(e.eventId) >= Number(fired.eventId) && Number(e.eventId) <= next.eventId,
      ))
        print(' step', at(fired), e);
  }
  return figures;
}

/** A rollback on the server's clock: its update accepted → set-current done; `undefined` without either. */
export function rollbackOnServerClock(name: string, events: HistoryEvent[], verbose: boolean): number | undefined {
  const accepted = events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).at(-1);
  if (!accepted) return undefined;
  if (verbose) {
    // Where the time went: every event from the update's acceptance on.
    const names = new Map(events.map((e) => [String(e.eventId), scheduledActivityType(e) ?? localActivityType(e)]));
    for (const e of events.filter((e) => Number(e.eventId) >= Number(accepted.eventId)))
      console.log(
        `  ${name} +${(at(e) - at(accepted)).toFixed(0)} ms ${eventType(e)} ${names.get(String(refOf(e))) ?? ''}`,
      );
  }
  const done = completedActivities(events)
    .filter((a) => a.type === 'setCurrent')
    .at(-1);
  if (!done) return undefined;
  // A local set-current's marker is written with the task that accepted the update: from that task's start then.
  return (
    done.recordedAt -
    (done.local && done.startedAt !== undefined ? Math.min(done.startedAt, at(accepted)) : at(accepted))
  );
}

export interface HistoryEvents {
  /** From one step's setRamping to the next routing call, per resource. */
  perStep: number[];
  /** A new version's bring-up: from the routing call before its first ramp (v1 made current) to that ramp. */
  perBringUp: number[];
}

export async function historyEvents(world: World, names: string[]): Promise<HistoryEvents> {
  const out: HistoryEvents = { perStep: [], perBringUp: [] };
  for (const name of names) {
    const events = await historyOf(world, name);
    // Scheduled, by their scheduling; local, by their marker (written with the task that made the call).
    const routing = events
      .map((e) => ({ id: Number(e.eventId), type: scheduledActivityType(e) ?? localActivityType(e) ?? '' }))
      .filter((e) => e.type === 'setRamping' || e.type === 'setCurrent');
    for (let k = 1; k < routing.length; k++) {
      const [from, to] = [routing[k - 1]!, routing[k]!];
      if (from.type === 'setRamping') out.perStep.push(to.id - from.id);
      else if (to.type === 'setRamping') out.perBringUp.push(to.id - from.id);
    }
  }
  return out;
}
