/**
 * The table of current figures in docs/performance.md (`npm run generate`): a row per figure of the benchmarks'
 * results files (bench/results/*.json), with the date, commit, machine and command of its file; a malformed file
 * is an error that names it and the field.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandLine, forServer, parseResults, recordResults, type Results } from '../../bench/record.js';
import { beginMarker, endMarker, renderFigures, withFigures } from '../../scripts/docs/performance.js';

const resultsDir = new URL('../../bench/results/', import.meta.url);
const committed = readdirSync(resultsDir)
  .filter((file) => file.endsWith('.json'))
  .map((file) => ({ file: `bench/results/${file}`, text: readFileSync(new URL(file, resultsDir), 'utf8') }));

const results = (figures: unknown[], more: Record<string, unknown> = {}) =>
  JSON.stringify({
    date: '2026-11-28',
    commit: '6a38be9',
    machine: '2 cores, 7.8 GiB',
    command: 'npm run bench',
    figures,
    ...more,
  });

describe('the table of current figures', () => {
  test('docs/performance.md holds the table the results files render, between its markers', () => {
    const page = readFileSync(new URL('../../docs/performance.md', import.meta.url), 'utf8');
    const table = renderFigures(committed);
    expect(page).toContain(`${beginMarker}\n${table}\n${endMarker}`);
    const figures = committed.flatMap(({ file, text }) => parseResults(file, text).figures);
    expect(table.split('\n').length).toBe(figures.length + 2);
  });

  test('a row per figure, with its file’s date, commit, machine and command; files by benchmark, then size', () => {
    const table = renderFigures([
      {
        file: 'scale-1000.json',
        text: results([{ measure: '1,000 at once: failures', figure: '0' }], {
          command: 'npm run bench:scale -- 1000',
        }),
      },
      {
        file: 'scale-100.json',
        text: results([{ measure: '100 at once: failures', figure: '0' }], { date: '2026-11-27' }),
      },
      {
        file: 'latency.json',
        text: results([
          { measure: 'apply', figure: 'p50 38 ms', target: 'p50 ≤ 50 ms' },
          { measure: 'rollback', figure: '-', note: 'not measured: NOT_FOUND | twice' },
        ]),
      },
    ]);
    expect(table.split('\n').slice(2)).toEqual([
      '| apply | p50 38 ms | p50 ≤ 50 ms | 2026-11-28 | 6a38be9 | 2 cores, 7.8 GiB | `npm run bench` | |',
      '| rollback | - | — | 2026-11-28 | 6a38be9 | 2 cores, 7.8 GiB | `npm run bench` | not measured: NOT_FOUND \\| twice |',
      '| 100 at once: failures | 0 | — | 2026-11-27 | 6a38be9 | 2 cores, 7.8 GiB | `npm run bench` | |',
      '| 1,000 at once: failures | 0 | — | 2026-11-28 | 6a38be9 | 2 cores, 7.8 GiB | `npm run bench:scale -- 1000` | |',
    ]);
  });

  test('a malformed results file is an error naming the file and the field', () => {
    const render = (text: string) => () => renderFigures([{ file: 'bench/results/latency.json', text }]);
    expect(render(results([{ measure: 'apply', figure: '1 ms' }], { commit: undefined }))).toThrow(
      /^bench\/results\/latency\.json: commit: /,
    );
    expect(render(results([{ measure: 'apply', figure: '1 ms' }], { date: '28 Nov 2026' }))).toThrow(
      'bench/results/latency.json: date: expected an ISO day (YYYY-MM-DD)',
    );
    expect(render(results([{ measure: 'apply', figure: '1 ms' }, { figure: '2 ms' }]))).toThrow(
      /^bench\/results\/latency\.json: figures\[1\]\.measure: /,
    );
    expect(render(results([]))).toThrow(/^bench\/results\/latency\.json: figures: /);
    expect(render('{ "date": ')).toThrow(/^bench\/results\/latency\.json: not JSON/);
  });

  test('a measure lives in one file', () => {
    const figure = { measure: 'apply', figure: '1 ms' };
    expect(() =>
      renderFigures([
        { file: 'latency.json', text: results([figure]) },
        { file: 'latency@9f6b1b5.json', text: results([figure]) },
      ]),
    ).toThrow('latency@9f6b1b5.json: "apply" is in latency.json too');
  });

  test('only the part between the markers is replaced', () => {
    const page = `# Performance\n\nhand-written\n\n${beginMarker}\nold\n${endMarker}\n\nmore\n`;
    expect(withFigures(page, 'new')).toBe(
      `# Performance\n\nhand-written\n\n${beginMarker}\nnew\n${endMarker}\n\nmore\n`,
    );
    expect(() => withFigures('# Performance\n', 'new')).toThrow(/no <!-- generated: figures/);
  });
});

test("a run's command line: its BENCH_* variables, the server chosen, its arguments, and the build a compiled run needs", () => {
  expect(commandLine('bench', [], { BENCH_VERBOSE: '1', HOME: '/root' })).toBe('BENCH_VERBOSE=1 npm run bench');
  expect(commandLine('bench', [], { GLIDEPATH_TEMPORAL_SERVER: 'cli', BENCH_VERBOSE: '1' })).toBe(
    'BENCH_VERBOSE=1 GLIDEPATH_TEMPORAL_SERVER=cli npm run bench',
  );
  expect(commandLine('bench:scale', ['100', '--compiled', '--controller-env=A=b c'], {})).toBe(
    "npm run build && npm run bench:scale -- 100 --compiled '--controller-env=A=b c'",
  );
});

describe('recording a run', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'glidepath-results-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const run = (commit: string, measures: string[]): Results => ({
    date: '2026-11-29',
    commit,
    machine: '2 cores, 7.8 GiB',
    command: 'npm run bench',
    figures: measures.map((measure) => ({ measure, figure: '1 ms' })),
  });
  const files = () =>
    Object.fromEntries(
      readdirSync(dir)
        .sort()
        .map((file) => [file, JSON.parse(readFileSync(join(dir, file), 'utf8')) as Results]),
    );

  test('a measure lives in one file: recording it takes it out of the others, and an emptied file goes', () => {
    writeFileSync(join(dir, 'latency@2026-11-27-9f6b1b5.json'), JSON.stringify(run('9f6b1b5', ['own part'])));
    writeFileSync(join(dir, 'scale-100.json'), JSON.stringify(run('46a984d', ['apply', '100 at once: failures'])));
    recordResults('latency', run('abc1234', ['apply', 'own part']), dir);
    const after = files();
    expect(Object.keys(after)).toEqual(['latency.json', 'scale-100.json']);
    expect(after['latency.json']!.figures.map((f) => f.measure)).toEqual(['apply', 'own part']);
    expect(after['scale-100.json']!.figures.map((f) => f.measure)).toEqual(['100 at once: failures']);
    expect(after['scale-100.json']!.commit).toBe('46a984d');
  });

  test('figures of the file replaced that the run did not measure stay, with their own run', () => {
    recordResults('latency', run('abc1234', ['apply', 'ten at once']), dir);
    recordResults('latency', run('def5678', ['apply', 'five at once']), dir);
    const after = files();
    expect(Object.keys(after)).toEqual(['latency.json', 'latency@2026-11-29-abc1234.json']);
    expect(after['latency.json']!.commit).toBe('def5678');
    expect(after['latency@2026-11-29-abc1234.json']!.figures.map((f) => f.measure)).toEqual(['ten at once']);
    expect(() =>
      renderFigures(Object.entries(after).map(([file, r]) => ({ file, text: JSON.stringify(r) }))),
    ).not.toThrow();
  });

  test('a run on the oldest server is recorded beside the default server’s, each measure naming it', () => {
    const figures = run('abc1234', ['apply', 'own part']).figures;
    expect(forServer('latency', figures, undefined)).toEqual({ name: 'latency', figures });
    recordResults('latency', run('abc1234', ['apply', 'own part']), dir);
    const oldest = forServer('scale-100', figures, '1.29.1');
    recordResults(oldest.name, { ...run('abc1234', []), figures: oldest.figures }, dir);
    const after = files();
    expect(Object.keys(after)).toEqual(['latency.json', 'scale-100-temporal-1.29.1.json']);
    expect(after['latency.json']!.figures.map((f) => f.measure)).toEqual(['apply', 'own part']);
    expect(after['scale-100-temporal-1.29.1.json']!.figures.map((f) => f.measure)).toEqual([
      'apply (Temporal 1.29.1)',
      'own part (Temporal 1.29.1)',
    ]);
  });

  test('results that do not fit the schema are not written', () => {
    expect(() => recordResults('latency', { ...run('unknown', ['apply']) }, dir)).toThrow(/^latency\.json: commit: /);
    expect(files()).toEqual({});
  });
});
