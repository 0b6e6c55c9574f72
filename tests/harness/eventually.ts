/** Waiting in tests: poll a probe until it yields a value, with the last error in the timeout message. */

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns something other than undefined/false; throws after `timeoutMs`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    await sleep(everyMs);
  }
  throw new Error(
    `timed out after ${timeoutMs / 1000}s waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`,
  );
}
