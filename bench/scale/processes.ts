/**
 * The scale benchmark's processes (servers, controllers, pods): everything started here is stopped on every way
 * out. And what each uses: RSS and CPU from /proc, and controller 0's heaps from its memory probe.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopProcesses, type ServerProcess } from '../../scripts/servers/servers.js';
import { root, writeRate } from './options.js';

/** The servers' and processes' logs (kept with --keep, or when the run fails). */
export const dir = mkdtempSync(join(tmpdir(), 'glidepath-bench-scale-'));
const children: ChildProcess[] = [];
/** The servers, in their stop order: kube-controller-manager, apiserver, etcd, Temporal. */
export const servers: ServerProcess[] = [];
let cleaning: Promise<void> | undefined;
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function cleanup(keepLogs: boolean): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all(children.map((c) => stopChild(c)));
    await stopProcesses(servers);
    if (keepLogs) console.log(`logs kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  })();
  return cleaning;
}

async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  if (await Promise.race([exited.then(() => true), sleep(graceMs).then(() => false)])) return;
  child.kill('SIGKILL');
  await exited;
}

// Last resort when the process ends without cleanup (an uncaught error): no child outlives it.
process.on('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const s of servers) {
    try {
      process.kill(s.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping`);
    void cleanup(true).finally(() => process.exit(130));
  });
}

export function spawnNode(
  name: string,
  script: string,
  args: string[],
  env: Record<string, string>,
  nodeOptions: string[] = [],
): ChildProcess {
  const log = openSync(join(dir, `${name}.log`), 'a');
  // A compiled script (dist/…/*.js) runs as it is; TypeScript through tsx.
  const command = [
    ...nodeOptions,
    ...(script.endsWith('.js') ? [join(root, script), ...args] : ['--import', 'tsx', join(root, script), ...args]),
  ];
  const child = spawn(process.execPath, command, {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: '', ...env },
    stdio: ['ignore', log, log],
  });
  children.push(child);
  return child;
}

export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs: number,
  everyMs = 500,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? ` (${String(last)})` : ''}`);
    await sleep(everyMs);
  }
}

/** Runs `fn` over `items`, `limit` at a time, and with --write-rate starting at most that many a second. */
export async function inBatches<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const start = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        if (writeRate) await sleep(start + (i * 1000) / writeRate - Date.now());
        await fn(items[i]!);
      }
    }),
  );
}

export const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;

/** Where controller `i`'s memory probe (bench/memory-probe.mjs) writes its samples. */
export const memoryProbeFile = (i: number) => join(dir, `controller-${i}.memory.jsonl`);

interface MemorySample {
  at: number;
  rssKb: number;
  main: { heapUsedKb: number; heapTotalKb: number; externalKb: number };
  workers: { title: string; heapUsedKb: number; heapTotalKb: number; externalKb: number }[];
}

/** Controller 0's memory probe sample with the highest RSS between `from` and `to` (see bench/memory-probe.mjs). */
export function probePeak(from: number, to: number): MemorySample | undefined {
  let samples: MemorySample[];
  try {
    samples = readFileSync(memoryProbeFile(0), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as MemorySample);
  } catch {
    return undefined;
  }
  return samples
    .filter((s) => s.at >= from && s.at <= to)
    .reduce<MemorySample | undefined>((a, s) => (!a || s.rssKb > a.rssKb ? s : a), undefined);
}

/** Controller 0's memory at its peak RSS, by where it is. */
export function memoryAtPeak(from: number, to: number): string {
  const top = probePeak(from, to);
  if (!top) return 'no samples of the memory probe in the run';
  // The SDK's workflow thread holds the most of the worker threads (the others are small helpers).
  const [workflows, ...others] = [...top.workers].sort((a, b) => b.heapTotalKb - a.heapTotalKb);
  const heaps = top.main.heapTotalKb + top.workers.reduce((s, w) => s + w.heapTotalKb, 0);
  const external = top.main.externalKb + top.workers.reduce((s, w) => s + w.externalKb, 0);
  return (
    `RSS ${mb(top.rssKb)} = main thread's V8 heap ${mb(top.main.heapTotalKb)} (${mb(top.main.heapUsedKb)} used), ` +
    `workflow thread's ${mb(workflows?.heapTotalKb ?? 0)} (${mb(workflows?.heapUsedKb ?? 0)} used), ${others.length} other thread(s)' ${mb(others.reduce((s, w) => s + w.heapTotalKb, 0))}, ` +
    `buffers outside the heaps ${mb(external)}, the rest ${mb(top.rssKb - heaps - external)} (the Temporal core, gRPC, code, the allocator's free space)`
  );
}

/** VmRSS (kB) and CPU time (ms) of a process, from /proc. */
export function procStats(pid: number): { rssKb: number; cpuMs: number } | undefined {
  try {
    const rss = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from #3 (state) on
    const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (100 Hz on Linux)
    return { rssKb: Number(rss?.[1] ?? 0), cpuMs: ticks * 10 };
  } catch {
    return undefined;
  }
}
