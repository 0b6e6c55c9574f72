/**
 * The controller's `/metrics`: the SDK's Prometheus exporter serves the Temporal runtime's metrics (`temporal_…`)
 * and Glidepath's (`glidepath_…`) on one address. The rollout metrics come from the workflows
 * (workflows/metrics.ts); here are the ones only the process sees: activity errors, and gauges of every
 * resource's status as the watcher reads it (every replica reports the same truth, so a dashboard takes `max`).
 */
import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { ApplicationFailure, type MetricCounter, type MetricGauge } from '@temporalio/common';
import { Runtime, type ActivityInboundCallsInterceptor, type RuntimeOptions } from '@temporalio/worker';
import { refusalReason } from '../activities/authority.js';
import { TransientError } from '../activities/errors.js';
import { durationBuckets, resourceLabels, RolloutMetric, rolloutMetricDescriptions } from '../workflows/metrics.js';

export const ProcessMetric = {
  activityErrors: 'glidepath_activity_errors_total',
  activityRefusals: 'glidepath_activity_refusals_total',
  temporalRequests: 'glidepath_temporal_requests_total',
  rampPercentage: 'glidepath_rollout_ramp_percentage',
  phase: 'glidepath_rollout_phase',
} as const;

/** The runtime's metrics options for a Prometheus endpoint on `host:port`. */
export function prometheusMetrics(bind: {
  host: string;
  port: number;
}): NonNullable<NonNullable<RuntimeOptions['telemetryOptions']>['metrics']> {
  const host = bind.host.includes(':') ? `[${bind.host}]` : bind.host;
  return {
    prometheus: {
      bindAddress: `${host}:${bind.port}`,
      countersTotalSuffix: false, // our counters are named with `_total` already
      histogramBucketOverrides: {
        [RolloutMetric.phaseSeconds]: durationBuckets,
        [RolloutMetric.rolloutSeconds]: durationBuckets,
      },
    },
  };
}

/**
 * Every counter at 0 from the start: a counter that has not counted yet would be absent, and a dashboard's
 * `rate()` or `increase()` of it empty rather than 0.
 */
export function initializeCounters(): void {
  const meter = Runtime.instance().metricMeter;
  const counters = [
    RolloutMetric.started,
    RolloutMetric.completed,
    RolloutMetric.aborted,
    RolloutMetric.rolledBack,
    RolloutMetric.failed,
    RolloutMetric.stepTransitions,
    RolloutMetric.transitions,
  ];
  for (const name of counters) meter.createCounter(name, '1', rolloutMetricDescriptions[name]).add(0);
  meter.createCounter(ProcessMetric.activityErrors, '1', activityErrorsDescription).add(0);
  meter.createCounter(ProcessMetric.activityRefusals, '1', activityRefusalsDescription).add(0);
}

const activityErrorsDescription = 'Failed activity attempts, by activity and kind';
const activityRefusalsDescription =
  'Activity attempts refused because what they read (the apiserver, Temporal) did not support them, by activity and reason';

/** What kind of failure an activity ended with: its ApplicationFailure type, `transient`, or the error's name. */
export function errorKind(err: unknown): string {
  if (err instanceof ApplicationFailure && err.type) return err.type;
  if (err instanceof TransientError) return 'transient';
  if (err instanceof Error && err.name === 'CancelledFailure') return 'cancelled';
  return err instanceof Error ? err.name : typeof err;
}

/** Counts every failed activity attempt by activity type and kind, and every refusal by activity type and reason. */
export function activityErrorCounter(): (ctx: { info: { activityType: string } }) => {
  inbound: ActivityInboundCallsInterceptor;
} {
  let counter: MetricCounter | undefined;
  let refusals: MetricCounter | undefined;
  return (ctx) => ({
    inbound: {
      async execute(input, next) {
        try {
          return await next(input);
        } catch (err) {
          // A cancelled wait (a superseded spec, a ContinueAsNew) is the workflow's choice, not an error.
          if (errorKind(err) === 'cancelled') throw err;
          counter ??= Runtime.instance().metricMeter.createCounter(
            ProcessMetric.activityErrors,
            '1',
            activityErrorsDescription,
          );
          counter.add(1, { activity: ctx.info.activityType, kind: errorKind(err) });
          const reason = refusalReason(err);
          if (reason !== undefined) {
            refusals ??= Runtime.instance().metricMeter.createCounter(
              ProcessMetric.activityRefusals,
              '1',
              activityRefusalsDescription,
            );
            refusals.add(1, { activity: ctx.info.activityType, reason });
          }
          throw err;
        }
      },
    },
  });
}

/**
 * Counts every call the process's Temporal clients send (the watcher's, the CLI's and the activities'), by
 * operation: with the Temporal core's own `temporal_request` and `temporal_long_request` (the workers' polls,
 * completions and heartbeats) it is every request the controller makes, counted where it is sent. Innermost of a
 * connection's interceptors, so each retry counts, as it is sent (after its turn in ./temporal-limits.ts's pace).
 */
export function temporalRequestCounter(): Interceptor {
  let counter: MetricCounter | undefined;
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        counter ??= Runtime.instance().metricMeter.createCounter(
          ProcessMetric.temporalRequests,
          '1',
          "Temporal requests sent by the controller's clients, by operation",
        );
        const path = options.method_definition.path;
        counter.add(1, { operation: path.slice(path.lastIndexOf('/') + 1) });
        next(metadata, listener);
      },
    });
}

/** The status of a resource as the watcher sees it (absent: the resource is gone). */
export interface SeenStatus {
  phase?: string;
  targetVersion?: { rampPercentage?: number };
}

/**
 * The gauge values for one resource: its ramp (0 without a target), a 1 for its phase, and a 0 for the phase it was
 * last seen in if that was another (so a phase it left stops reporting it). Only the phases a resource has been
 * in get a series: a 0 for each of the twelve phases of each resource was 12,000 series at 1,000 resources. Pure.
 */
export function resourceGauges(
  status: SeenStatus | undefined,
  lastPhase: string | undefined,
): { ramp: number; phases: Record<string, number> } {
  const phases: Record<string, number> = {};
  if (lastPhase !== undefined && lastPhase !== status?.phase) phases[lastPhase] = 0;
  if (status?.phase !== undefined) phases[status.phase] = 1;
  return { ramp: status?.targetVersion?.rampPercentage ?? 0, phases };
}

let gauges: { ramp: MetricGauge; phase: MetricGauge } | undefined;
/** The phase each resource was last seen in, by namespace/name (what `resourceGauges` sets to 0 once it leaves it). */
const lastPhases = new Map<string, string>();

/** Sets the resource gauges on each sighting of a resource (the watcher's informer events). */
export function recordResourceGauges(
  resource: { namespace: string; name: string },
  status: SeenStatus | undefined,
): void {
  const meter = Runtime.instance().metricMeter;
  gauges ??= {
    ramp: meter.createGauge(ProcessMetric.rampPercentage, 'float', '%', "The target version's ramp, per resource"),
    phase: meter.createGauge(
      ProcessMetric.phase,
      'int',
      '1',
      'The phase each resource is in (1) and was in before (0)',
    ),
  };
  const key = `${resource.namespace}/${resource.name}`;
  const { ramp, phases } = resourceGauges(status, lastPhases.get(key));
  const labels = resourceLabels(resource);
  gauges.ramp.set(ramp, labels);
  for (const [name, value] of Object.entries(phases)) gauges.phase.set(value, { ...labels, phase: name });
  if (status?.phase !== undefined) lastPhases.set(key, status.phase);
  else lastPhases.delete(key);
}
