/**
 * `--watch`: a frame redrawn in place on a terminal (log-update), or printed again whenever it changed when the
 * output is a pipe or a file. Ends on `q`, Ctrl-C, SIGINT/SIGTERM, or the caller's AbortSignal.
 */
import { createLogUpdate } from 'log-update';

/** Where a watch draws and what ends it. */
export interface WatchIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number; rows?: number };
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown; unref?: () => void };
  signal?: AbortSignal;
}

/**
 * Draws `frame()` every `intervalMs` until stopped. The first frame's error is thrown (a resource that does not
 * exist ends the watch with its exit code); a later one is shown under the last good frame, and the watch goes on.
 * @param header the line above the frame on a terminal, given the time of the frame
 */
export async function watch(
  io: WatchIo,
  intervalMs: number,
  frame: () => Promise<string>,
  header: (at: Date) => string,
): Promise<void> {
  let text = await frame();
  const stop = stopper(io);
  const tty = io.stdout.isTTY === true;
  const draw = tty ? createLogUpdate(io.stdout, { showCursor: false }) : undefined;
  let printed: string | undefined;
  try {
    while (!stop.stopped) {
      if (draw) draw(`${header(new Date())}\n\n${text}`);
      else if (text !== printed) {
        io.stdout.write(`${printed === undefined ? '' : '\n'}${text}\n`);
        printed = text;
      }
      await stop.sleep(intervalMs);
      if (stop.stopped) break;
      try {
        text = await frame();
      } catch (err) {
        text = `${text.replace(/\n\n! .*$/s, '')}\n\n! ${(err as Error).message} (trying again every ${Math.round(intervalMs / 1000) || 1}s)`;
      }
    }
  } finally {
    draw?.done();
    stop.dispose();
  }
}

/** The ways a watch ends, and a sleep that any of them cuts short. */
function stopper(io: WatchIo) {
  let wake: (() => void) | undefined;
  const state = { stopped: false };
  const end = () => {
    state.stopped = true;
    wake?.();
  };
  const onKey = (data: Buffer | string) => {
    const key = data.toString();
    if (key === 'q' || key === 'Q' || key === '\u0003' /* Ctrl-C in raw mode */) end();
  };
  const stdin = io.stdin;
  const raw = stdin?.isTTY === true && typeof stdin.setRawMode === 'function';
  if (raw) {
    stdin.setRawMode!(true);
    stdin.on('data', onKey);
    stdin.resume();
  }
  process.once('SIGINT', end);
  process.once('SIGTERM', end);
  io.signal?.addEventListener('abort', end, { once: true });
  if (io.signal?.aborted) end();
  return {
    get stopped() {
      return state.stopped;
    },
    sleep(ms: number) {
      return new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    },
    dispose() {
      process.removeListener('SIGINT', end);
      process.removeListener('SIGTERM', end);
      io.signal?.removeEventListener('abort', end);
      if (raw) {
        stdin.removeListener('data', onKey);
        stdin.setRawMode!(false);
        stdin.pause();
      }
    },
  };
}
