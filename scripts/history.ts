/**
 * Reading a workflow's history (tests, benchmarks): which activities it ran, whether as activities (ActivityTaskScheduled) or
 * inside a workflow task (local activities: a `core_local_activity` marker, whose data names the activity).
 */
import { createRequire } from 'node:module';
import { defaultPayloadConverter } from '@temporalio/common';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';
import { rolloutWorkflowId } from '../api/names.js';
import type { RolloutInput } from '../workflows/rollout-workflow.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What a local activity's marker says of it (its type, when it was scheduled), or undefined for any other event. */
function localActivityData(e: HistoryEvent) {
  const m = e.markerRecordedEventAttributes;
  const data = m?.markerName === 'core_local_activity' ? m.details?.data?.payloads?.[0] : undefined;
  return data
    ? defaultPayloadConverter.fromPayload<{
        activity_type?: string;
        original_schedule_time?: { seconds: number; nanos: number };
      }>(data)
    : undefined;
}

/** The activity type of a local activity's marker, or undefined for any other event. */
export const localActivityType = (e: HistoryEvent): string | undefined => localActivityData(e)?.activity_type;

/** When a local activity's marker says it was scheduled (ms since the epoch, the worker's clock), or undefined. */
export function localActivityScheduledAt(e: HistoryEvent): number | undefined {
  const at = localActivityData(e)?.original_schedule_time;
  return at ? at.seconds * 1000 + at.nanos / 1e6 : undefined;
}

/** An event's time on the server's clock, ms since the epoch. */
export const eventTime = (e: HistoryEvent): number =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6;

/** A payload's JSON (the default converter's encoding), or undefined. */
const decoded = (p: temporal.api.common.v1.IPayload | null | undefined): unknown =>
  p ? defaultPayloadConverter.fromPayload(p) : undefined;

/**
 * An activity that completed, scheduled or local: when it started and when the server recorded its result (its
 * completion, or the marker written with its workflow task's completion), with the Web UI's summary and, for a
 * scheduled one, its arguments (a local one's are not in the history).
 */
export interface CompletedActivity {
  type: string;
  local: boolean;
  /** On the server's clock: a scheduled one's start; a local one's workflow task's start (its call came after). */
  startedAt: number | undefined;
  /** A local one: when the worker scheduled it (the worker's clock). */
  scheduledAt?: number;
  recordedAt: number;
  /** The event that recorded its result. */
  eventId: number;
  summary: string | undefined;
  args: unknown[] | undefined;
  result: unknown;
}

/** Every completed activity of a history, scheduled or local, in the order their results were recorded. */
export function completedActivities(events: HistoryEvent[]): CompletedActivity[] {
  const byId = new Map(events.map((e) => [String(e.eventId), e]));
  const startedOf = new Map(
    events
      .filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => [String(e.activityTaskStartedEventAttributes!.scheduledEventId), e]),
  );
  const summaryOf = (e: HistoryEvent | undefined) => decoded(e?.userMetadata?.summary) as string | undefined;
  const done: CompletedActivity[] = [];
  for (const e of events) {
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed) {
      const scheduled = byId.get(String(completed.scheduledEventId));
      const started = startedOf.get(String(completed.scheduledEventId));
      done.push({
        type: (scheduled && scheduledActivityType(scheduled)) ?? '',
        local: false,
        startedAt: started ? eventTime(started) : undefined,
        recordedAt: eventTime(e),
        eventId: Number(e.eventId),
        summary: summaryOf(scheduled),
        args: scheduled?.activityTaskScheduledEventAttributes?.input?.payloads?.map(decoded),
        result: decoded(completed.result?.payloads?.[0]),
      });
    }
    const type = localActivityType(e);
    if (type && !e.markerRecordedEventAttributes?.failure) {
      const task = byId.get(String(e.markerRecordedEventAttributes?.workflowTaskCompletedEventId));
      const taskStarted = byId.get(String(task?.workflowTaskCompletedEventAttributes?.startedEventId));
      const scheduledAt = localActivityScheduledAt(e);
      done.push({
        type,
        local: true,
        startedAt: taskStarted ? eventTime(taskStarted) : undefined,
        ...(scheduledAt === undefined ? {} : { scheduledAt }),
        recordedAt: eventTime(e),
        eventId: Number(e.eventId),
        summary: summaryOf(e),
        args: undefined,
        result: decoded(e.markerRecordedEventAttributes?.details?.result?.payloads?.[0]),
      });
    }
  }
  return done;
}

/** The activity type of a scheduled activity, or undefined. */
export const scheduledActivityType = (e: HistoryEvent): string | undefined =>
  e.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined;

/** Every activity the history ran, scheduled or local, in order. */
export const activityTypes = (events: HistoryEvent[]): string[] =>
  events.map((e) => scheduledActivityType(e) ?? localActivityType(e)).filter((n): n is string => !!n);

/**
 * Proto JSON (`temporal workflow show --output json`, tests/replay/histories/*.json) → History. The SDK's
 * historyFromJSON (which the Worker also uses for JSON input) fails here with "type must be a Type":
 * @temporalio/common and @temporalio/proto each get their own copy of protobufjs 8, so its protojson does not
 * recognise the proto's types. The copy @temporalio/proto loads its types with does.
 */
export function historyFromJson(json: unknown): History {
  const protoRequire = createRequire(createRequire(import.meta.url).resolve('@temporalio/proto'));
  const root = protoRequire('./root') as { lookupType(name: string): unknown };
  const { fromJson } = protoRequire('protobufjs/ext/protojson') as {
    fromJson(type: unknown, json: unknown, options?: object): History;
  };
  return fromJson(root.lookupType('temporal.api.history.v1.History'), json, { ignoreUnknownFields: true });
}

/**
 * The workflow ID a recorded RolloutWorkflow history ran under (a history does not carry it): its owner's, read off
 * the run's input, under the installation its first read of the resource answered with. A replay must be given it:
 * a run under any other ID ends after that read, touching nothing.
 */
export function rolloutWorkflowIdOf(history: temporal.api.history.v1.IHistory): string {
  const events = history.events ?? [];
  const [input] = events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
  if (!input) throw new Error('not a RolloutWorkflow history: its first event has no input');
  const { owner } = defaultPayloadConverter.fromPayload<RolloutInput>(input);
  for (const read of completedActivities(events).filter((a) => a.type === 'readResource')) {
    const installation = (read.result as { installation?: string } | undefined)?.installation;
    if (installation) return rolloutWorkflowId(installation, owner.namespace, owner.name);
  }
  throw new Error('a RolloutWorkflow history whose reads of the resource name no installation');
}
