/**
 * The controller's Temporal rate budget (worker/rate-budget.ts) on a real connection to the dev server: calls
 * beyond the burst wait for their tokens and all are answered; calls whose turn is further away than the queue's
 * bound fail at once with RESOURCE_EXHAUSTED naming the budget, take no tokens, and a later call goes out.
 */
import { Connection } from '@temporalio/client';
import { RateBudget } from '../../worker/rate-budget.js';

const connect = (budget: RateBudget) =>
  Connection.connect({ address: process.env.TEMPORAL_ADDRESS!, interceptors: budget.interceptors() });

test('calls beyond the burst go out at the budget’s rate, and every one is answered', async () => {
  const budget = new RateBudget(4, 2);
  const connection = await connect(budget);
  try {
    await budget.take(); // leaves one token of the burst
    const started = Date.now();
    const answeredAfter = await Promise.all(
      Array.from({ length: 10 }, async () => {
        await connection.workflowService.getSystemInfo({});
        return Date.now() - started;
      }),
    );
    // One at once, then 4 a second: the last of 10 goes out no sooner than 9 / 4 s (less what refilled meanwhile).
    // A lower bound only: a slower machine answers later, never sooner.
    expect(Math.max(...answeredAfter)).toBeGreaterThanOrEqual(1_750);
    expect(answeredAfter).toHaveLength(10);
  } finally {
    await connection.close();
  }
});

test('calls whose turn is too far away fail at once with RESOURCE_EXHAUSTED naming the budget; the queued ones are answered', async () => {
  const budget = new RateBudget(2, 1, 1_000);
  const connection = await connect(budget);
  try {
    // 8 at once: 1 now, 2 queued (due in 0.5 s and 1 s), the rest refused: a queue of at most maxWaitMs.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 8 }, () => connection.workflowService.getSystemInfo({})),
    );
    const answered = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.flatMap((o) =>
      o.status === 'rejected' ? [o.reason as { code?: number; details?: string }] : [],
    );
    expect(answered.length).toBeGreaterThanOrEqual(3);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    for (const err of refused) {
      expect(err.code).toBe(8); // RESOURCE_EXHAUSTED
      expect(err.details).toMatch(
        /^the controller's Temporal budget \(--temporal-qps\) is spent for the next \d+ s: try again later$/,
      );
    }
    // The budget refused them without taking tokens: a call now goes out once its turn comes.
    await connection.workflowService.getSystemInfo({});
  } finally {
    await connection.close();
  }
});
