/**
 * How the CLI's answers look in a terminal: pure functions from views to lines, so what a person sees is
 * unit-tested without a terminal. Tables are cli-table3 without borders (kubectl's look), bars cli-progress's.
 */
import cliProgress from 'cli-progress';
import Table from 'cli-table3';
import pc from 'picocolors';
import { stringify as toYaml } from 'yaml';
import { formatDuration } from '../api/duration.js';
import type { HistoryEntry } from '../workflows/state.js';
import type { RolloutView, VersionView } from './view.js';

/** picocolors' functions; `plain` when the output is not a colour terminal. */
export type Colors = ReturnType<typeof pc.createColors>;
export const plain: Colors = pc.createColors(false);

export type OutputFormat = 'table' | 'json' | 'yaml';
export const outputFormats: readonly OutputFormat[] = ['table', 'json', 'yaml'];

/** Machine-readable output: indented JSON, or YAML. */
export function formatData(data: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? JSON.stringify(data, null, 2) : toYaml(data).trimEnd();
}

/** cli-table3 without borders: columns three spaces apart, no padding, trailing blanks trimmed. */
export function borderlessTable(
  head: string[],
  rows: (string | { content: string; hAlign: 'right' })[][],
  colors: Colors = plain,
): string {
  const table = new Table({
    head: head.map((h) => colors.bold(h)),
    chars: {
      top: '',
      'top-mid': '',
      'top-left': '',
      'top-right': '',
      bottom: '',
      'bottom-mid': '',
      'bottom-left': '',
      'bottom-right': '',
      left: '',
      'left-mid': '',
      mid: '',
      'mid-mid': '',
      right: '',
      'right-mid': '',
      middle: '   ',
    },
    style: { 'padding-left': 0, 'padding-right': 0, head: [], border: [], compact: true },
  });
  table.push(...rows);
  return table
    .toString()
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n');
}

const barPreset = cliProgress.Presets.shades_classic;

/**
 * A bar of `percentage` (0-100), `size` cells wide, drawn by cli-progress's bar formatter.
 * @example progressBar(25, 8) === '██░░░░░░'
 */
export function progressBar(percentage: number, size = 40): string {
  const progress = Math.min(1, Math.max(0, percentage / 100));
  return cliProgress.Format.BarFormat(progress, {
    barsize: size,
    barCompleteString: barPreset.barCompleteChar!.repeat(size + 1),
    barIncompleteString: barPreset.barIncompleteChar!.repeat(size + 1),
    barGlue: '',
  } as cliProgress.Options);
}

/** A phase in the colour that says how it is going. */
export function colorPhase(phase: string, colors: Colors): string {
  if (phase === 'Ready') return colors.green(phase);
  if (phase === 'Aborted' || phase === 'Failed' || phase === 'InvalidSpec') return colors.red(phase);
  if (phase === 'Paused' || phase === 'AwaitingPromotion' || phase === 'Deleting') return colors.yellow(phase);
  return colors.cyan(phase);
}

/** How long ago, kubectl's way: seconds under a minute, then whole minutes (`5m`, `1h20m`). */
export function age(sinceIso: string | undefined, now: number): string {
  const since = sinceIso ? Date.parse(sinceIso) : NaN;
  if (Number.isNaN(since)) return '';
  const ms = Math.max(0, now - since);
  if (ms < 60_000) return `${Math.floor(ms / 1000)}s`;
  return formatDuration(Math.floor(ms / 60_000) * 60_000);
}

/** `12 open`, `?` when they could not be counted, empty when not counted. */
function openCell(v: VersionView): string {
  if (v.openExecutions === undefined) return '';
  return v.openExecutions === null ? '?' : String(v.openExecutions);
}

function statusCell(v: VersionView): string {
  return [v.status, v.scaledDown ? '(scaled down)' : '', v.blocked ? `(blocked: ${v.blocked})` : '']
    .filter(Boolean)
    .join(' ');
}

/** The step track: `10% ✔ › 25% ◀ › 50% › 100%` (done, in force, to come; 100% is being made current). */
export function stepTrack(view: RolloutView): string {
  if (!view.steps?.length) return '';
  const index = view.step ? view.step.number - 1 : -1;
  const marks = view.steps.map((p, i) =>
    i < index || (i === index && view.step?.leftMs === 0) ? `${p}% ✔` : i === index ? `${p}% ◀` : `${p}%`,
  );
  return [...marks, '100%'].join(' › ');
}

/** `step 2 of 3 · 1m40s left of 5m` / `… paused with 1m40s left` / `… until promoted`. */
export function stepLine(view: RolloutView): string {
  const step = view.step;
  if (!step) return '';
  const which = `step ${step.number} of ${step.count}`;
  if (step.pauseMs === undefined) return `${which} · until promoted`;
  const left = formatDuration(Math.round((step.leftMs ?? 0) / 1000) * 1000);
  if (step.leftMs === 0) return `${which} · pause over`;
  if (view.paused) return `${which} · paused with ${left} left of ${formatDuration(step.pauseMs)}`;
  return `${which} · ${left} left of ${formatDuration(step.pauseMs)}`;
}

/**
 * One resource's rollout, as `status` shows it:
 * ```
 * default/orders   Ramping   Progressive, generation 2
 *   ramp    ██████████░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░   25%   step 2 of 3 · 1m40s left of 5m
 *   steps   10% ✔ › 25% ◀ › 50% › 100%
 *   step 2/3: ramp 25% for 5m
 *
 *   BUILD   ROLE      STATUS     TRAFFIC   OPEN   SINCE
 *   v2-…    target    Ramping        25%      0   1m
 *   v1-…    current   Current        75%      3
 * ```
 */
export function renderRollout(view: RolloutView, opts: { colors?: Colors; now: number; barSize?: number }): string[] {
  const c = opts.colors ?? plain;
  const about = [view.strategy, view.generation !== undefined ? `generation ${view.generation}` : '']
    .filter(Boolean)
    .join(', ');
  const lines = [
    `${c.bold(`${view.namespace}/${view.name}`)}   ${colorPhase(view.phase, c)}${view.paused && view.phase !== 'Paused' ? `   ${c.yellow('(paused)')}` : ''}${about ? `   ${c.dim(about)}` : ''}`,
  ];
  if (view.rampPercentage !== undefined) {
    const ramp = `${String(view.rampPercentage).padStart(3)}%`;
    const step = stepLine(view) || (view.phase === 'AwaitingPromotion' ? 'awaiting promote' : '');
    lines.push(
      `  ramp    ${c.cyan(progressBar(view.rampPercentage, opts.barSize))}   ${c.bold(ramp)}${step ? `   ${step}` : ''}`,
    );
    const track = stepTrack(view);
    if (track) lines.push(`  steps   ${track}`);
  }
  if (view.message) lines.push(`  ${view.message}`);
  if (view.retrying) lines.push(`  ${c.yellow('retrying')} ${view.retrying.what}: ${view.retrying.message}`);
  if (view.managerHeldBy)
    lines.push(`  ${c.yellow('held')}: ${view.managerHeldBy} holds the worker deployment's manager identity`);
  if (view.lastAbortReason && (view.phase === 'Aborted' || view.reason === 'RolledBack'))
    lines.push(`  ${c.red('aborted')}: ${view.lastAbortReason}`);
  if (view.lastAnalysis) lines.push(`  analysis: ${view.lastAnalysis}`);
  if (view.refused?.last)
    lines.push(`  ${c.dim(`last refused: ${view.refused.last.control}: ${view.refused.last.why}`)}`);
  if (view.versions.length) {
    const right = (content: string) => ({ content, hAlign: 'right' as const });
    const rows = view.versions.map((v) => [
      v.buildId,
      v.role,
      statusCell(v),
      right(`${v.traffic}%`),
      right(openCell(v)),
      age(v.since, opts.now),
    ]);
    lines.push(
      '',
      ...borderlessTable(['BUILD', 'ROLE', 'STATUS', 'TRAFFIC', 'OPEN', 'SINCE'], rows, c)
        .split('\n')
        .map((l) => `  ${l}`),
    );
  }
  return lines;
}

/** A resource whose rollout could not be read: its name, and why (listed among the others). */
export function renderUnavailable(
  ref: { namespace: string; name: string },
  why: string,
  colors: Colors = plain,
): string[] {
  return [`${colors.bold(`${ref.namespace}/${ref.name}`)}   ${colors.dim(why)}`];
}

/** History as aligned columns: at, who, what, why. */
export function renderHistory(entries: HistoryEntry[], colors: Colors = plain): string {
  if (!entries.length) return 'no history yet';
  const rows = entries.map((e) => [
    e.at,
    e.who,
    `${e.kind === 'refused' ? colors.red('refused ') : ''}${e.what}${e.buildId ? ` ${e.buildId}` : ''}`,
    e.why,
  ]);
  return borderlessTable(['AT', 'WHO', 'WHAT', 'WHY'], rows, colors);
}

/** One running rollout, as `list` shows it (from Temporal's visibility: no query per rollout). */
export interface ListRow {
  /** The installation whose workflow it is (its ID is in the workflow ID). */
  installation?: string;
  namespace: string;
  name: string;
  phase?: string;
  current?: string;
  target?: string;
  started?: string;
}

export function renderList(rows: ListRow[], opts: { colors?: Colors; now: number }): string {
  const c = opts.colors ?? plain;
  if (!rows.length) return 'no rollouts running';
  return borderlessTable(
    ['NAMESPACE', 'NAME', 'PHASE', 'CURRENT', 'TARGET', 'AGE'],
    rows.map((r) => [
      r.namespace,
      r.name,
      r.phase ? colorPhase(r.phase, c) : '',
      r.current ?? '',
      r.target ?? '',
      age(r.started, opts.now),
    ]),
    c,
  );
}
