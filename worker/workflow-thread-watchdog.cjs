/**
 * One watchdog for the Temporal SDK's workflow thread instead of one per call into it. Preloaded into every thread
 * of the controller process (`--require`, worker/process-settings.ts).
 *
 * The SDK runs each call into the workflow sandbox under `vm`'s `timeout` (its isolateExecutionTimeout, 5 s), and
 * Node enforces a vm timeout with a thread it creates and joins for that one call (nodejs/node#47739). An
 * activation makes three or more such calls; at 1,000 rollouts, where most workflow tasks replay a history, the one
 * workflow thread spent most of its time starting threads (`npm run bench:replay`: a 308-event rollout's replay
 * in a worker thread 132 ms with them, 85 ms without on a quiet machine; README, "Scale").
 *
 * In a worker thread, a call with a timeout runs without it instead, and notes when it started in memory the main
 * thread reads: `globalThis[Symbol.for('glidepath.workflowThreadWatchdog')].longestCallMs()` there says how long the
 * longest call in flight has run. The controller's liveness fails past a minute (worker/controller.ts), and
 * Kubernetes restarts the process: a workflow stuck in a loop holds up the others until then, where the SDK's
 * timeout would have failed its task after 5 s. The main thread's own vm calls keep their timeouts.
 */
'use strict';
const vm = require('node:vm');
const { BroadcastChannel, isMainThread } = require('node:worker_threads');

const channelName = 'glidepath:workflow-thread-watchdog';
const now = () => performance.timeOrigin + performance.now();

if (isMainThread) {
  /** Each worker thread's start of its call in flight (ms since the epoch; 0 while none), in shared memory. */
  const starts = [];
  const channel = new BroadcastChannel(channelName);
  channel.onmessage = (e) => starts.push(new Float64Array(e.data));
  channel.unref();
  globalThis[Symbol.for('glidepath.workflowThreadWatchdog')] = {
    longestCallMs() {
      const t = now();
      return starts.reduce((longest, [start]) => (start > 0 ? Math.max(longest, t - start) : longest), 0);
    },
  };
} else {
  const start = new Float64Array(new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT));
  let announced = false;
  let depth = 0;
  /** `run` with its options (argument `i`) without their timeout, watched instead. */
  const watched = (run, i) =>
    function (...args) {
      const options = args[i];
      if (options === null || typeof options !== 'object' || options.timeout === undefined) return run.apply(this, args);
      if (!announced) {
        announced = true;
        const channel = new BroadcastChannel(channelName);
        channel.postMessage(start.buffer);
        channel.close();
      }
      const { timeout: _dropped, ...rest } = options;
      args[i] = rest;
      if (depth++ === 0) start[0] = now();
      try {
        return run.apply(this, args);
      } finally {
        if (--depth === 0) start[0] = 0;
      }
    };
  vm.Script.prototype.runInContext = watched(vm.Script.prototype.runInContext, 1); // (context, options)
  vm.runInContext = watched(vm.runInContext, 2); // (code, context, options)
}
