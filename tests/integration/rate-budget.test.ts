/**
 * The controller's Temporal rate budget (worker/rate-budget.ts) on a real connection to the dev server: calls
 * beyond the burst wait for their tokens and still all succeed, and the SDK's retries stay in place.
 */
import { Connection } from '@temporalio/client';
import { RateBudget } from '../../worker/rate-budget.js';

test('calls beyond the burst go out at the budget’s rate, and every one is answered', async () => {
  const budget = new RateBudget(4, 2);
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS!, interceptors: budget.interceptors() });
  try {
    await budget.take(); // the connection's own first call took a token; start from a known bucket
    const started = Date.now();
    const answeredAfter = await Promise.all(
      Array.from({ length: 10 }, async () => {
        await connection.workflowService.getSystemInfo({});
        return Date.now() - started;
      }),
    );
    // At most 2 at once, then 4 a second: the last of 10 can go out no sooner than (10 - 2 + ~1 spent) / 4 s.
    // A lower bound only: a slower machine answers later, never sooner.
    expect(Math.max(...answeredAfter)).toBeGreaterThanOrEqual(1_750);
    expect(answeredAfter).toHaveLength(10);
  } finally {
    await connection.close();
  }
});
