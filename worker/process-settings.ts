/**
 * How the controller process is started: Node's options and environment for a small, steady footprint. The
 * image's ENTRYPOINT (Dockerfile), `npm start` (package.json) and the scale benchmark all start it so, and a unit
 * test checks that they agree with this file.
 *
 * Measured with `npm run bench:scale -- 100 --compiled` (docs/design/controller-memory.md): peak RSS 285–289 MB
 * instead of 420–520 MB, for ≈ 25 % more CPU over a run (54–62 s instead of 43 s), wall time within the run-to-run
 * spread.
 */
export const controllerNodeOptions = [
  // V8 grows the heap less eagerly: the main heap stays near its live size (≈ 80 MB at 100 rollouts in flight)
  // instead of collecting only at ≈ 200 MB.
  '--optimize-for-size',
  // The young generation's semi-spaces: 4 MB instead of 16 MB (the watcher's and activities' short-lived objects).
  '--max-semi-space-size=4',
] as const;

export const controllerEnvironment = {
  // glibc's malloc arenas: two instead of eight per core, for the Temporal core's and libuv's threads.
  MALLOC_ARENA_MAX: '2',
  // glibc's initial thresholds, held (setting them stops glibc from raising them after large frees): blocks of
  // 128 kB and more are mapped and unmapped on their own, and a heap's free top above 128 kB goes back to the
  // system. Measured with `npm run bench:scale -- 100 --compiled`: peak RSS 237 MB instead of 266 MB (the memory
  // outside V8's heaps 91 MB instead of 121 MB), the same CPU and wall time.
  MALLOC_MMAP_THRESHOLD_: '131072',
  MALLOC_TRIM_THRESHOLD_: '131072',
} as const;
