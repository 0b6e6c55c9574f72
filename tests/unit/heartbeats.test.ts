import type { Context } from '@temporalio/activity';
import { chargedHeartbeat, heartbeatThrottleMs } from '../../activities/heartbeats.js';

describe('heartbeatThrottleMs', () => {
  test.each([
    ['0.8 × the heartbeat timeout', 20_000, 16_000],
    ['at most 60 s', 120_000, 60_000],
    ['30 s without a heartbeat timeout', undefined, 30_000],
  ] as const)('%s', (_case, timeoutMs, throttleMs) => {
    expect(heartbeatThrottleMs(timeoutMs)).toBe(throttleMs);
  });
});

describe('chargedHeartbeat', () => {
  const run = (paceMs: number, beatsAt: number[], untilMs = 40_000) => {
    const sent: unknown[] = [];
    const ctx = { info: { heartbeatTimeoutMs: 20_000 }, heartbeat: (d: unknown) => sent.push(d) } as unknown as Context;
    let now = 0;
    let charged = 0;
    const heartbeat = chargedHeartbeat(
      ctx,
      () => charged++,
      () => now,
    );
    for (now of beatsAt.length
      ? beatsAt
      : Array.from({ length: Math.floor(untilMs / paceMs) + 1 }, (_, i) => i * paceMs))
      heartbeat(now);
    return { sent, charged };
  };

  test('every heartbeat reaches the SDK; the budget is charged once per throttle interval, as the SDK sends them', () => {
    const { sent, charged } = run(2_000, []);
    expect(sent).toHaveLength(21);
    expect(sent.at(-1)).toBe(40_000);
    expect(charged).toBe(3); // sent at 0, 16 s and 32 s (the one of 40 s goes at 48 s)
  });

  test('at a pace that does not divide the interval (a drain wait: every 5 s), still one per 16 s', () => {
    // Sent at 0, 16 s (the details of 15 s), 32 s (of 30 s) … 160 s: 11, not the 9 of one per 20 s.
    expect(run(5_000, [], 160_000).charged).toBe(11);
  });

  test('after a quiet interval the next heartbeat goes at once', () => {
    // 0 at once; 10 s waits for 16 s; nothing pending at 32 s; 40 s at once.
    expect(run(0, [0, 10_000, 40_000]).charged).toBe(3);
    expect(run(0, [0, 50_000]).charged).toBe(2);
  });
});
