/**
 * Where a controller's memory is: `node --import ./bench/memory-probe.mjs …` with GLIDEPATH_MEMORY_PROBE=FILE
 * appends a JSON line to FILE every 2 s: the process's RSS, and the V8 heap of its main thread and of each worker
 * thread (the SDK runs the workflows in one), read through the inspector (node:inspector, in the process itself).
 * The scale benchmark loads it into the controllers it starts; the product never does.
 */
import { appendFileSync, readFileSync } from 'node:fs';
import inspector from 'node:inspector';
import process from 'node:process';
import { setInterval, setTimeout } from 'node:timers';
import { isMainThread } from 'node:worker_threads';

const file = process.env.GLIDEPATH_MEMORY_PROBE;
// Worker threads inherit `--import`: only the main thread samples.
if (file && isMainThread) {
  const session = new inspector.Session();
  session.connect();
  /** Worker threads by inspector session id. */
  const threads = new Map();
  const pending = new Map();
  let nextId = 1;
  session.on('NodeWorker.attachedToWorker', ({ params }) => threads.set(params.sessionId, params.workerInfo.title));
  session.on('NodeWorker.detachedFromWorker', ({ params }) => threads.delete(params.sessionId));
  session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
    const message = JSON.parse(params.message);
    if (message.id === undefined) return;
    pending.get(message.id)?.(message.result?.result?.value);
    pending.delete(message.id);
  });
  session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  const memoryOf = (sessionId) =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      const message = {
        id,
        method: 'Runtime.evaluate',
        params: { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true },
      };
      session.post('NodeWorker.sendMessageToWorker', { sessionId, message: JSON.stringify(message) });
      // A thread that does not answer in time is left out of this sample rather than holding up the next.
      setTimeout(() => pending.delete(id) && resolve(undefined), 1000).unref();
    });
  const kb = (bytes) => Math.round(bytes / 1024);
  const heapOf = (m) => ({ heapUsedKb: kb(m.heapUsed), heapTotalKb: kb(m.heapTotal), externalKb: kb(m.external) });
  const sample = async () => {
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
    const workers = [];
    for (const [sessionId, title] of threads) {
      const text = await memoryOf(sessionId);
      if (text) workers.push({ title, ...heapOf(JSON.parse(text)) });
    }
    appendFileSync(
      file,
      JSON.stringify({ at: Date.now(), rssKb: rss, main: heapOf(process.memoryUsage()), workers }) + '\n',
    );
  };
  setInterval(() => void sample().catch(() => {}), 2000).unref();
}
