/**
 * The table of current figures in docs/performance.md, rendered from the benchmarks' results files
 * (bench/results/*.json, see bench/record.ts): a row per measure, with the date, commit, machine and command of the
 * file it is in. Only the part between the markers is generated; the rest of the page is written by hand. Pure.
 */
import { basename } from 'node:path';
import { parseResults, type Results } from '../../bench/record.js';

export const beginMarker = '<!-- generated: figures (npm run generate, from bench/results/*.json) -->';
export const endMarker = '<!-- end generated -->';

/** The benchmarks in the table's order; a file's benchmark is its name up to the first `-`, `@` or `.`. */
const benchmarks = ['latency', 'scale', 'replay', 'chaos'];

/** Files in the table's order: by benchmark, then by the number of resources in the name, then by name. */
function order(a: string, b: string): number {
  const key = (file: string) => {
    const name = basename(file, '.json');
    const bench = /^[^-@.]*/.exec(name)![0];
    const index = benchmarks.indexOf(bench);
    return { index: index < 0 ? benchmarks.length : index, n: Number(/^[a-z]+-(\d+)\b/.exec(name)?.[1] ?? 0), name };
  };
  const [x, y] = [key(a), key(b)];
  return x.index - y.index || x.n - y.n || (x.name < y.name ? -1 : x.name > y.name ? 1 : 0);
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The table from the results files' names and texts; an error names a malformed file and its field. */
export function renderFigures(files: { file: string; text: string }[]): string {
  const seen = new Map<string, string>();
  const rows: string[] = [];
  for (const { file, text } of [...files].sort((a, b) => order(a.file, b.file))) {
    const results: Results = parseResults(file, text);
    for (const f of results.figures) {
      const earlier = seen.get(f.measure);
      if (earlier) throw new Error(`${file}: "${f.measure}" is in ${earlier} too (a measure lives in one file)`);
      seen.set(f.measure, file);
      const cells = [
        f.measure,
        f.figure,
        f.target ?? '—',
        results.date,
        results.commit,
        results.machine,
        `\`${results.command}\``,
        f.note ?? '',
      ];
      rows.push(`|${cells.map((c) => (c ? ` ${cell(c)} ` : ' ')).join('|')}|`);
    }
  }
  return [
    '| measure | figure | target | date | commit | machine | command | note |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** `page` with the table between its markers replaced by `table`. */
export function withFigures(page: string, table: string): string {
  const begin = page.indexOf(beginMarker);
  const end = page.indexOf(endMarker, begin);
  if (begin < 0 || end < 0) throw new Error(`docs/performance.md: no ${beginMarker} … ${endMarker} around the table`);
  return `${page.slice(0, begin + beginMarker.length)}\n${table}\n${page.slice(end)}`;
}
