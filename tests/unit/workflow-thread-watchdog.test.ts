import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const watchdog = fileURLToPath(new URL('../../worker/workflow-thread-watchdog.cjs', import.meta.url));

/**
 * A process preloaded with the watchdog: a worker thread makes a call into a vm context with a 100 ms timeout that
 * runs until the main thread has seen it run for 300 ms (the watchdog's reading), then one quick call; the main
 * thread reports what it read, and whether its own vm calls still time out.
 */
const scenario = `
const vm = require('node:vm');
const { Worker } = require('node:worker_threads');
const watch = globalThis[Symbol.for('glidepath.workflowThreadWatchdog')];
const seen = new Int32Array(new SharedArrayBuffer(4));
const worker = new Worker(\`
  const vm = require('node:vm');
  const { workerData, parentPort } = require('node:worker_threads');
  const context = vm.createContext({ seen: workerData });
  let outcome = 'ran past its timeout';
  try { new vm.Script('while (Atomics.load(seen, 0) === 0) {}').runInContext(context, { timeout: 100 }); }
  catch (err) { outcome = err.message; }
  const quick = vm.runInContext('1 + 1', context, { timeout: 100 });
  parentPort.postMessage({ outcome, quick });
\`, { eval: true, workerData: seen });
let longest = 0;
const poll = setInterval(() => {
  longest = Math.max(longest, watch.longestCallMs());
  if (longest > 300) Atomics.store(seen, 0, 1);
}, 10);
worker.on('message', (m) => {
  clearInterval(poll);
  let main = 'no timeout';
  try { vm.runInContext('while (true) {}', vm.createContext({}), { timeout: 50 }); } catch (err) { main = err.message; }
  console.log(JSON.stringify({ ...m, sawOver300: longest > 300, after: watch.longestCallMs(), main }));
  worker.terminate();
});
`;

test('in a worker thread a vm call runs without its timeout, watched from the main thread; the main thread keeps its timeouts', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [`--require=${watchdog}`, '-e', scenario], { timeout: 60_000 });
  expect(JSON.parse(stdout)).toEqual({
    outcome: 'ran past its timeout',
    quick: 2,
    sawOver300: true, // the call in flight, read while it ran
    after: 0, // none in flight once it returned
    main: 'Script execution timed out after 50ms',
  });
});

test('without it, the same call in a worker thread is stopped at its timeout (what the SDK does per call)', async () => {
  const plain = `
    const vm = require('node:vm');
    const { Worker } = require('node:worker_threads');
    new Worker("const vm = require('node:vm'); try { vm.runInContext('while (true) {}', vm.createContext({}), { timeout: 100 }); } catch (err) { console.log(err.message); }", { eval: true });
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', plain], { timeout: 60_000 });
  expect(stdout.trim()).toBe('Script execution timed out after 100ms');
});
