/**
 * Reading a workflow's history (tests, benchmarks): which activities it ran, whether as activities (ActivityTaskScheduled) or
 * inside a workflow task (local activities: a `core_local_activity` marker, whose data names the activity).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** What a local activity's marker says of it (its type, when it was scheduled), or undefined for any other event. */
function localActivityData(e: HistoryEvent) {
  const m = e.markerRecordedEventAttributes;
  const data = m?.markerName === 'core_local_activity' ? m.details?.data?.payloads?.[0] : undefined;
  return data ? defaultPayloadConverter.fromPayload<{ activity_type?: string; original_schedule_time?: { seconds: number; nanos: number } }>(data) : undefined;
}

/** The activity type of a local activity's marker, or undefined for any other event. */
export const localActivityType = (e: HistoryEvent): string | undefined => localActivityData(e)?.activity_type;

/** When a local activity's marker says it was scheduled (ms since the epoch, the worker's clock), or undefined. */
export function localActivityScheduledAt(e: HistoryEvent): number | undefined {
  const at = localActivityData(e)?.original_schedule_time;
  return at ? at.seconds * 1000 + at.nanos / 1e6 : undefined;
}

/** The activity type of a scheduled activity, or undefined. */
export const scheduledActivityType = (e: HistoryEvent): string | undefined => e.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined;

/** Every activity the history ran, scheduled or local, in order. */
export const activityTypes = (events: HistoryEvent[]): string[] => events.map((e) => scheduledActivityType(e) ?? localActivityType(e)).filter((n): n is string => !!n);
