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
  test('every heartbeat reaches the SDK; the budget is charged once per throttle interval, as the SDK sends them', () => {
    const sent: unknown[] = [];
    const ctx = { info: { heartbeatTimeoutMs: 20_000 }, heartbeat: (d: unknown) => sent.push(d) } as unknown as Context;
    let now = 0;
    let charged = 0;
    const heartbeat = chargedHeartbeat(ctx, () => charged++, () => now);
    for (; now <= 40_000; now += 2_000) heartbeat(now);
    expect(sent).toHaveLength(21);
    expect(sent.at(-1)).toBe(40_000);
    expect(charged).toBe(3); // at 0, 16 s and 32 s
  });
});
