/**
 * `npm run bench:replay [-- HISTORY [N]]`: how long the workflow thread takes to replay a rollout's history, the
 * work a workflow task does when its rollout was evicted from the cache (at 1,000 rollouts, most of them). Replays
 * a committed history (default `tests/replay/histories/all-at-once-v1-v2.json`) N times (default 60) in a worker
 * thread, as the controller's workflow thread does, and prints the time per replay. A run of the default history
 * writes bench/results/replay.json, which docs/performance.md's table is generated from (--no-record: not).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker as Thread, isMainThread, workerData } from 'node:worker_threads';
import { Worker } from '@temporalio/worker';
import { installRuntime, rolloutBundle } from '../worker/controller.js';
import { historyFromJson, rolloutWorkflowIdOf } from '../scripts/history.js';
import { commandLine, recordResults, runFacts } from './record.js';

const root = fileURLToPath(new URL('../', import.meta.url));
const self = fileURLToPath(import.meta.url);

/** In the worker thread: replays `file` `n` times after three to warm up; the ms per replay. */
async function replay(file: string, n: number): Promise<number> {
  installRuntime('WARN');
  const history = historyFromJson(JSON.parse(readFileSync(file, 'utf8')));
  const options = { workflowBundle: await rolloutBundle() };
  const workflowId = rolloutWorkflowIdOf(history); // a run under another ID ends at once (not its owner's workflow)
  const run = async (count: number) => {
    const started = performance.now();
    for await (const result of Worker.runReplayHistories(
      options,
      Array.from({ length: count }, () => ({ workflowId, history })),
    )) {
      if (result.error) throw result.error;
    }
    return (performance.now() - started) / count;
  };
  await run(3);
  return run(n);
}

const mode = process.argv[2];
if (mode === '--thread' && !isMainThread) {
  const { file, n } = workerData as { file: string; n: number };
  console.log(JSON.stringify({ msPerReplay: await replay(file, n) }));
} else if (mode === '--child') {
  // One replay run in a worker thread of this process.
  const load = `import('tsx/esm/api').then(({ register }) => (register(), import(${JSON.stringify(pathToFileURL(self).href)})))`;
  const thread = new Thread(load, {
    eval: true,
    argv: ['--thread'],
    workerData: { file: process.argv[3], n: Number(process.argv[4]) },
  });
  await new Promise((resolve, reject) => thread.on('exit', resolve).on('error', reject));
} else {
  const facts = runFacts({ temporal: false });
  const record = !process.argv.includes('--no-record');
  const [history, count] = process.argv.slice(2).filter((a) => a !== '--no-record');
  const file = history ?? `${root}tests/replay/histories/all-at-once-v1-v2.json`;
  const n = Number(count ?? 60);
  const events = (JSON.parse(readFileSync(file, 'utf8')) as { events: unknown[] }).events.length;
  console.log(
    `replaying ${file} (${events} events) ${n} times in a worker thread, as the controller's workflow thread does:`,
  );
  const out = execFileSync(process.execPath, ['--import', 'tsx', self, '--child', file, String(n)], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '' },
    encoding: 'utf8',
  });
  const { msPerReplay } = JSON.parse(out.trim().split('\n').at(-1)!) as { msPerReplay: number };
  console.log(`  ${msPerReplay.toFixed(1)} ms per replay (the SDK's timeout on each call into the sandbox)`);
  if (record && !history) {
    const figures = [
      {
        measure: 'replay of a committed rollout history, in a worker thread',
        figure: `${msPerReplay.toFixed(1)} ms per replay`,
      },
    ];
    console.log(`written to ${recordResults('replay', { ...facts, command: commandLine('bench:replay'), figures })}`);
  }
}
