/** The processes of the dev servers: started with a log each, waited on until ready, stopped in order. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { join } from 'node:path';

/** Whether a process with this PID is running (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.setTimeout(500);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
    socket.connect(port, '127.0.0.1');
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `check` passes; fails at once when the process exits, and after `timeoutMs`. */
export async function waitFor(
  what: string,
  logFile: string,
  child: ChildProcess,
  check: () => Promise<boolean>,
  timeoutMs = 60_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}; read ${logFile}`);
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`${what} was not ready after ${timeoutMs / 1000}s; read ${logFile}`);
}

/** A process started by us, with its log. */
export interface ServerProcess {
  name: string;
  pid: number;
  logFile: string;
}

export const logFileOf = (dir: string, name: string) => join(dir, `${name}.log`);

/** Starts a server process with its output appended to `<dir>/<name>.log`. */
export function launch(
  name: string,
  bin: string,
  args: string[],
  dir: string,
  detached: boolean,
): { child: ChildProcess; proc: ServerProcess } {
  mkdirSync(dir, { recursive: true });
  const logFile = logFileOf(dir, name);
  const out = openSync(logFile, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', out, out], detached });
  if (detached) child.unref();
  return { child, proc: { name, pid: child.pid!, logFile } };
}

/**
 * Stops processes in order (kube-controller-manager, then kube-apiserver, then etcd: with etcd gone first the
 * apiserver's shutdown hangs), SIGKILL after a grace period.
 */
export async function stopProcesses(processes: Pick<ServerProcess, 'pid' | 'name'>[], graceMs = 5000): Promise<void> {
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (const p of processes) {
    if (!alive(p.pid)) continue;
    process.kill(p.pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (alive(p.pid) && Date.now() < deadline) await sleep(50);
    if (alive(p.pid)) process.kill(p.pid, 'SIGKILL');
  }
}
