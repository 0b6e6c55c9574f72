/**
 * The controller's pace of its own Temporal calls (worker/temporal-limits.ts) on a real connection to the dev
 * server: calls beyond the bucket's burst wait for their tokens, in the order they asked, and every one is answered.
 */
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { pacedCalls, TokenBucket } from '../../worker/temporal-limits.js';

test('calls beyond the burst go out at the bucket’s rate, and every one is answered', async () => {
  const bucket = new TokenBucket(4, 1, Date.now());
  const connection = await Connection.connect({
    address: process.env.TEMPORAL_ADDRESS!,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), pacedCalls(bucket)],
  });
  try {
    bucket.take(Date.now()); // the connect's own call may have left the burst; this one surely spends it
    const started = Date.now();
    const answeredAfter = await Promise.all(
      Array.from({ length: 8 }, async () => {
        await connection.workflowService.getSystemInfo({});
        return Date.now() - started;
      }),
    );
    // 4 a second after the burst: the last of 8 goes out no sooner than 8 / 4 s. A lower bound only: a slower
    // machine answers later, never sooner.
    expect(Math.max(...answeredAfter)).toBeGreaterThanOrEqual(1_900);
    expect(answeredAfter).toHaveLength(8);
  } finally {
    await connection.close();
  }
});
