/**
 * The benchmarks' results, machine-readable: a run that completes writes bench/results/<name>.json with its figures,
 * and `npm run generate` builds the table of current figures in docs/performance.md from those files
 * (scripts/docs/performance.ts). A measure lives in one file: recording it takes it out of any other, so the table
 * holds each measure's latest figure. History stays in git.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { temporalServerKind, temporalServerVersion } from '../scripts/servers/temporal-server.js';

export const resultsDir = join(dirname(fileURLToPath(import.meta.url)), 'results');

export const Figure = z.object({
  /** What is measured, the same words from run to run (the table's row). */
  measure: z.string().min(1),
  /** The figure as the table shows it; `-` when the run could not measure it (the note says why). */
  figure: z.string().min(1),
  target: z.string().min(1).optional(),
  note: z.string().min(1).optional(),
});
export type Figure = z.infer<typeof Figure>;

export const Results = z.object({
  /** The day of the run (UTC). */
  date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'expected an ISO day (YYYY-MM-DD)'),
  /** The commit measured (`git rev-parse --short HEAD`), `+dirty` when the tree had changes. */
  commit: z.string().regex(/^[0-9a-f]{7,40}(\+dirty)?$/, 'expected a short commit hash, with +dirty if changed'),
  machine: z.string().min(1),
  /** The command that ran it, as a person would type it again. */
  command: z.string().min(1),
  figures: z.array(Figure).min(1),
});
export type Results = z.infer<typeof Results>;

/** A figure, or `-` with why it could not be measured (what `compute` threw). */
export function measured(measure: string, target: string | undefined, compute: () => string, note?: string): Figure {
  const of = (figure: string, why?: string) => ({
    measure,
    figure,
    ...(target ? { target } : {}),
    ...(why ? { note: why } : {}),
  });
  try {
    return of(compute(), note);
  } catch (err) {
    return of('-', `not measured: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Prints a run's figures as the table shows them. */
export function printFigures(figures: Figure[]): void {
  console.log('\nFigures (docs/performance.md):');
  for (const f of figures)
    console.log(`  ${f.measure}: ${f.figure}${f.target ? ` (target ${f.target})` : ''}${f.note ? ` (${f.note})` : ''}`);
}

/** A results file's content, or an error naming the file and each field that is wrong. */
export function parseResults(file: string, text: string): Results {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: not JSON (${(err as Error).message})`);
  }
  const parsed = Results.safeParse(json);
  if (parsed.success) return parsed.data;
  const field = (path: PropertyKey[]) =>
    path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('') || '(the file)';
  throw new Error(`${file}: ${parsed.error.issues.map((i) => `${field(i.path)}: ${i.message}`).join('; ')}`);
}

/**
 * How a run was made: its day, commit, machine and the Temporal server it starts (`temporal: false`: none), read
 * when the run starts, before it writes anything.
 */
export function runFacts(o: { temporal?: boolean } = {}): Pick<Results, 'date' | 'commit' | 'machine'> {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dirname(resultsDir), encoding: 'utf8' }).trim();
  let commit = 'unknown';
  try {
    commit = git('rev-parse', '--short', 'HEAD');
    // No change to the code measured: results written by an earlier run, the table generated from them, and the
    // lock as `npm install` rewrites it (.ci/run: other platforms' optional binaries, the versions unchanged).
    const unchanged = [
      ':(exclude,top)bench/results',
      ':(exclude,top)docs/performance.md',
      ':(exclude,top)package-lock.json',
    ];
    if (git('status', '--porcelain', '--', ':/', ...unchanged)) commit += '+dirty';
  } catch {
    // not a git checkout: "unknown" is no commit, and recording it is refused
  }
  return {
    date: new Date().toISOString().slice(0, 10),
    commit,
    // The Temporal server the benchmark starts (GLIDEPATH_TEMPORAL_SERVER): the routing floor moves with it.
    machine: `${availableParallelism()} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB${o.temporal === false ? '' : `, Temporal ${temporalServerVersion()}`}`,
  };
}

/**
 * Where a run on the oldest supported server (`GLIDEPATH_TEMPORAL_SERVER=cli`) is recorded: beside the default
 * server's, in `<name>-temporal-<version>.json`, each measure naming the server, so the table holds both.
 */
export function forServer(
  name: string,
  figures: Figure[],
  version = temporalServerKind() === 'cli' ? temporalServerVersion() : undefined,
): { name: string; figures: Figure[] } {
  if (!version) return { name, figures };
  return {
    name: `${name}-temporal-${version}`,
    figures: figures.map((f) => ({ ...f, measure: `${f.measure} (Temporal ${version})` })),
  };
}

const quote = (s: string) => (/^[\w@%+=:,./-]*$/.test(s) && s ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * The npm command line of this run: the benchmark's BENCH_* variables (and the server chosen), `npm run <script> -- <args>`, and the build
 * a compiled run needs first.
 */
export function commandLine(script: string, args = process.argv.slice(2), env = process.env): string {
  const vars = Object.keys(env)
    .filter((k) => k.startsWith('BENCH_') || k === 'GLIDEPATH_TEMPORAL_SERVER')
    .sort()
    .map((k) => `${k}=${quote(env[k] ?? '')}`);
  const run = [...vars, 'npm', 'run', script, ...(args.length ? ['--', ...args.map(quote)] : [])].join(' ');
  return args.includes('--compiled') ? `npm run build && ${run}` : run;
}

/**
 * Writes `results` to bench/results/<name>.json and takes its measures out of the other results files (a file
 * left with none goes). Figures of the file it replaces that this run has not measured (another size, another
 * option) stay, with their run's date and commit, in <name>@<date>-<commit>.json. Returns the path written.
 */
export function recordResults(name: string, results: Results, dir = resultsDir): string {
  const valid = parseResults(`${name}.json`, JSON.stringify(results));
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.json`);
  const measures = new Set(valid.figures.map((f) => f.measure));
  const replaced = readResults(path);
  const left = replaced?.figures.filter((f) => !measures.has(f.measure)) ?? [];
  if (replaced && left.length) {
    const earlier = join(dir, `${name}@${replaced.date}-${replaced.commit}.json`);
    const figures = [
      ...(readResults(earlier)?.figures.filter((f) => !left.some((l) => l.measure === f.measure)) ?? []),
      ...left,
    ];
    writeFileSync(earlier, `${JSON.stringify({ ...replaced, figures }, null, 2)}\n`);
  }
  writeFileSync(path, `${JSON.stringify(valid, null, 2)}\n`);
  for (const file of readdirSync(dir)) {
    const other = join(dir, file);
    if (!file.endsWith('.json') || other === path) continue;
    const earlier = readResults(other);
    if (!earlier) continue;
    const kept = earlier.figures.filter((f) => !measures.has(f.measure));
    if (kept.length === earlier.figures.length) continue;
    if (kept.length) writeFileSync(other, `${JSON.stringify({ ...earlier, figures: kept }, null, 2)}\n`);
    else rmSync(other);
  }
  return path;
}

/** A results file, or `undefined` when there is none; a malformed one is said and left as it is. */
function readResults(path: string): Results | undefined {
  if (!existsSync(path)) return undefined;
  try {
    return parseResults(path, readFileSync(path, 'utf8'));
  } catch (err) {
    console.error(`${(err as Error).message}: left as it is`);
    return undefined;
  }
}
