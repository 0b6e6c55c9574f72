/**
 * What the Temporal Web UI shows of a RolloutWorkflow, in words: the static summary and details the watcher
 * starts it with, and its current details (Temporal's workflow metadata), which say where the rollout stands:
 * "v2 ramping 25 % — step 1 of 3, 1m40s left (until 14:03:20 UTC); v1 current; v0 draining, 3 pinned
 * executions open at 13:58:02 UTC". Pure: the state and the time in, text out (tests/unit/details.test.ts).
 */
import { formatDuration, parseDuration } from '../api/duration.js';
import { sunsetAction } from './decisions.js';
import type { RolloutState, SunsetVersion, Target } from './state.js';
import type { Owner } from '../api/resource.js';
import type { KubeEvent } from '../activities/index.js';
import type { Phase } from '../api/rollout-status.js';

/** The workflow's one-line summary in the Web UI: the resource it rolls out. */
export function staticSummary(owner: Pick<Owner, 'namespace' | 'name' | 'kind'>): string {
  return `Rollouts of ${owner.kind ?? 'TemporalWorkerDeployment'} ${owner.namespace}/${owner.name}`;
}

/** The resource's kind and the short name `kubectl` takes for it. */
const shortNames: Record<NonNullable<Owner['kind']>, string> = {
  TemporalWorkerDeployment: 'twd',
  WorkerDeployment: 'gwd',
};

/** The workflow's fixed details in the Web UI (Temporal markdown): the resource, and where Kubernetes shows it. */
export function staticDetails(owner: Owner): string {
  // One short paragraph: the UI shows about three lines of it.
  const kind = owner.kind ?? 'TemporalWorkerDeployment';
  return `${kind} **${owner.namespace}/${owner.name}** (uid ${owner.uid}): \`kubectl -n ${owner.namespace} describe ${shortNames[kind]} ${owner.name}\``;
}

/**
 * The workflow's current details (Temporal markdown): the headline in bold (target, current, each version being
 * sunset), then the phase with its message, then what else the status knows (retries, analysis, abort).
 *
 * @example
 * currentDetails(state, workflowNow) // "**v2 ramping 25 % — step 1 of 3, 1m40s left (until 14:03:20 UTC); v1 current**\n\nRamping: step 1 of 3: …"
 */
export function currentDetails(state: RolloutState, now: Date): string {
  const reason = state.reason === state.phase ? '' : ` (${state.reason})`;
  const lines = [`**${headline(state, now)}**`, `${state.phase}${reason}: ${noFractions(state.message)}`];
  if (state.managerHeldBy) lines.push(`manager identity held by ${state.managerHeldBy}`);
  if (state.retrying)
    lines.push(`retrying ${state.retrying.what} since ${moment(state.retrying.since, now)}: ${state.retrying.message}`);
  if (state.lastAnalysis) lines.push(`last analysis: ${noFractions(state.lastAnalysis)}`);
  if (state.aborted)
    lines.push(
      `${state.aborted.cause === 'RolledBack' ? 'rolled back' : 'aborted'}: ${state.aborted.buildId}: ${state.aborted.reason}`,
    );
  for (const v of state.deprecated) if (v.blocked) lines.push(`the sunset of ${v.buildId} is blocked: ${v.blocked}`);
  return lines.join('\n\n');
}

/** "step 1/3" as "step 1 of 3": the Web UI typesets digit/digit as a fraction. */
const noFractions = (text: string) => text.replace(/(\d+)\/(\d+)/g, '$1 of $2');

/** One sentence, the versions in the order people ask about them: the one coming, the one serving, the ones leaving. */
export function headline(state: RolloutState, now: Date): string {
  if (state.deleting || state.phase === 'Deleting') return 'deleting: Deployments and versions are cleaned up';
  const parts: string[] = [];
  if (state.target) parts.push(targetWords(state, state.target, now));
  else if (state.phase === 'Aborted' && state.aborted)
    parts.push(`${state.aborted.buildId} ${state.aborted.cause === 'RolledBack' ? 'rolled back' : 'aborted'}`);
  if (state.current)
    parts.push(`${state.current.buildId} current${state.target ? '' : ` since ${moment(state.current.since, now)}`}`);
  for (const v of state.deprecated) parts.push(sunsetWords(state, v, now));
  if (parts.length) return parts.join('; ');
  return state.phase === 'Pending' ? 'no version yet: waiting for a spec' : `no version yet: ${state.phase}`;
}

function targetWords(state: RolloutState, t: Target, now: Date): string {
  const b = t.buildId;
  if (t.rollback) return `${b} becoming current again (rollback: ${t.rollback.reason})`;
  const at = t.rampPercentage !== undefined ? ` at ${t.rampPercentage} %` : '';
  const left = timeLeft(state, t, now);
  const leftWords =
    left &&
    `${left.left} left${left.until ? ` (until ${left.until})` : state.phase === 'Paused' ? ' when resumed' : ''}`;
  const tail = (...bits: (string | undefined)[]) => {
    const said = bits.filter(Boolean).join(', ');
    return said ? ` — ${said}` : '';
  };
  const step = stepWords(state, t);
  switch (state.phase) {
    case 'Deploying':
      return state.reason === 'VersionLimitReached'
        ? `${b} waiting for room under the version cap`
        : `${b} deploying: waiting for its Deployment to be available`;
    case 'WaitingForPollers':
      return `${b} waiting for its workers to poll Temporal`;
    case 'Ramping':
      return `${b} ramping ${t.rampPercentage ?? 0} %${tail(step, leftWords)}`;
    case 'Gating':
      return `${b}${at} being checked${tail(step, leftWords)}`;
    case 'AwaitingPromotion':
      return `${b}${at} awaiting promote${tail(step)}`;
    case 'Paused':
      return `${b} paused${at}${tail(step, leftWords)}`;
    case 'Failed':
      return `${b} failed (${state.reason})`;
    default:
      return `${b} ${state.phase === 'Ready' ? 'becoming current' : state.phase}`;
  }
}

/** "step 1 of 3", for a Progressive rollout that has reached a step. */
function stepWords(state: RolloutState, t: Target): string | undefined {
  const steps = state.desired?.spec.rollout.steps ?? [];
  const index = t.step?.index;
  if (state.desired?.spec.rollout.strategy !== 'Progressive' || index === undefined || !steps.length) return undefined;
  return `step ${index + 1} of ${steps.length}`;
}

/**
 * What is left of the step (or analysis window) being held: while its timer runs, with the time it fires (so the
 * text stays true while the page is open); else from the time held so far (a paused step's clock stands still).
 */
function timeLeft(state: RolloutState, t: Target, now: Date): { left: string; until?: string } | undefined {
  const rollout = state.desired?.spec.rollout;
  const step = t.step;
  if (!step || step.done) return undefined;
  const pause =
    rollout?.strategy === 'Progressive'
      ? step.index !== undefined
        ? rollout.steps?.[step.index]?.pauseDuration
        : undefined
      : t.stage === 'analysing'
        ? rollout?.analysis?.window
        : undefined;
  if (!pause) return undefined;
  const unheld = parseDuration(pause) - step.heldMs;
  if (step.heldSince) {
    const endsAt = Date.parse(step.heldSince) + unheld;
    return { left: seconds(endsAt - now.getTime()), until: moment(new Date(endsAt).toISOString(), now) };
  }
  return unheld > 0 ? { left: seconds(unheld) } : undefined;
}

function sunsetWords(state: RolloutState, v: SunsetVersion, now: Date): string {
  const b = v.buildId;
  if (v.blocked) return `${b} sunset blocked`;
  if (!v.drainedSince) {
    if (v.status === undefined) return `${b} retiring`;
    if (v.status !== 'Draining') return `${b} ${v.status.toLowerCase()}`;
    const open = v.openExecutions;
    if (!open) return `${b} draining`;
    const n =
      open.count === 0 ? 'no pinned executions' : `${open.count} pinned execution${open.count === 1 ? '' : 's'}`;
    return `${b} draining, ${n} open at ${moment(open.at, now)}`;
  }
  const sunset = state.desired?.spec.sunset;
  const action = sunset ? sunsetAction(v, sunset, now) : undefined;
  const when = action?.kind === 'waitUntil' ? `in ${seconds(action.atMs - now.getTime())}` : 'now';
  return v.scaledDown ? `${b} scaled to 0, deleting ${when}` : `${b} drained, scaling to 0 ${when}`;
}

/** Longest summary of an activity or timer: the Web UI shows one line. */
export const maxSummaryLength = 200;

/** `text` as one line of at most `maxSummaryLength` characters (an Event's message can be long). */
export function summaryLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > maxSummaryLength ? `${line.slice(0, maxSummaryLength - 1)}…` : line;
}

/** A span in whole seconds, rounded up ("1m40s", never "0ms" or "99.5s"). */
function seconds(ms: number): string {
  return ms <= 0 ? '0s' : formatDuration(Math.ceil(ms / 1000) * 1000);
}

/** A moment as people read it beside the page: the time of day in UTC, with the date when it is not today. */
function moment(iso: string, now: Date): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const [date, time] = d.toISOString().split('T') as [string, string];
  const hms = time.slice(0, 8);
  return date === now.toISOString().slice(0, 10) ? `${hms} UTC` : `${date} ${hms.slice(0, 5)} UTC`;
}

/** The Web UI's summary of a report: "write the status: Ramping, with Event RampStarted". */
export function reportSummary(phase: Phase | undefined, events: KubeEvent[]): string {
  if (phase === undefined && events.length === 1)
    return `${events[0]!.type} Event ${events[0]!.reason}: ${events[0]!.message}`;
  const reasons =
    events.length === 0
      ? ''
      : `${events.length === 1 ? 'Event' : `${events.length} Events:`} ${events.map((e) => e.reason).join(', ')}`;
  if (phase === undefined) return reasons;
  return `write the status: ${phase}${reasons ? `, with ${reasons}` : ''}`;
}
