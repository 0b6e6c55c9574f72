/**
 * When a waiting activity heartbeats (`heartbeating`): from a quarter of its heartbeat timeout on, so a wait that
 * ends sooner sends none; and 5 s before its attempt's end at the latest, so a timeout carries its last details.
 * The activity runs in the SDK's MockActivityEnvironment on jest's clock.
 */
import { jest } from '@jest/globals';
import { Context } from '@temporalio/activity';
import { MockActivityEnvironment } from '@temporalio/testing';
import { heartbeating } from '../../activities/heartbeats.js';

/** Runs a wait of `waitMs` under `heartbeating`; returns when each heartbeat went, in ms from the start. */
async function heartbeatsOf(waitMs: number, info: { heartbeatTimeoutMs: number; startToCloseTimeoutMs: number }) {
  jest.useFakeTimers();
  try {
    const started = Date.now();
    const at: number[] = [];
    const env = new MockActivityEnvironment(info);
    env.on('heartbeat', () => at.push(Date.now() - started));
    let done = false;
    void env
      .run(() =>
        heartbeating(
          Context.current(),
          () => true,
          () => new Promise((r) => setTimeout(r, waitMs)),
        ),
      )
      .then(() => (done = true));
    while (!done) await jest.advanceTimersByTimeAsync(100);
    return at;
  } finally {
    jest.useRealTimers();
  }
}

const aDay = 86_400_000;

test('a wait that ends within a quarter of its heartbeat timeout sends no heartbeat', async () => {
  expect(await heartbeatsOf(14_000, { heartbeatTimeoutMs: 60_000, startToCloseTimeoutMs: aDay })).toEqual([]);
});

test('a longer wait heartbeats from a quarter of its heartbeat timeout on, every 2 s (the SDK throttles them)', async () => {
  const at = await heartbeatsOf(21_000, { heartbeatTimeoutMs: 60_000, startToCloseTimeoutMs: aDay });
  expect(at).toEqual([16_000, 18_000, 20_000]);
});

test('an attempt with little time left heartbeats 5 s before its end, so its timeout carries the details', async () => {
  const at = await heartbeatsOf(9_000, { heartbeatTimeoutMs: 60_000, startToCloseTimeoutMs: 10_000 });
  expect(at[0]).toBe(6_000);
});
