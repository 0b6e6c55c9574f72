/**
 * The controller's pace of its own Temporal calls (worker/temporal-limits.ts) on a real connection to the dev
 * server: calls beyond the bucket's burst wait for their tokens, in the order they asked, and every one is answered;
 * one cancelled or past its deadline while it waits ends then, through the SDK's retry interceptor.
 */
import { InterceptingCall, status, type Interceptor } from '@grpc/grpc-js';
import { Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { Pace, pacedCalls, Turn } from '../../worker/temporal-limits.js';

test('calls beyond the burst go out at the bucket’s rate, and every one is answered', async () => {
  const bucket = new Pace(4, 1);
  const connection = await Connection.connect({
    address: process.env.TEMPORAL_ADDRESS!,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), pacedCalls(bucket)],
  });
  try {
    await bucket.take(1, Turn.underWay); // the connect's own call may have left the burst; this one surely spends it
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

describe('a call that waits for its token', () => {
  let connection: Connection;
  let bucket: Pace;
  /** Calls that went out beneath the pace. */
  let sent = 0;
  const counted: Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => (sent++, next(metadata, listener)),
    });
  beforeAll(async () => {
    bucket = new Pace(0.1, 1); // a token every 10 s
    connection = await Connection.connect({
      address: process.env.TEMPORAL_ADDRESS!,
      interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), pacedCalls(bucket), counted],
    });
  });
  afterAll(() => connection.close());

  test('cancelled, it ends then with CANCELLED, never sent, and takes no token', async () => {
    bucket.tryTake(1, Turn.underWay); // the connect's call or this one spent the token: the next waits about 10 s
    const sentBefore = sent;
    const abort = new AbortController();
    const call = connection.withAbortSignal(abort.signal, () => connection.workflowService.getSystemInfo({}));
    const asked = Date.now();
    setTimeout(() => abort.abort(), 200);
    await expect(call).rejects.toMatchObject({ code: status.CANCELLED });
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(bucket.waiting).toEqual([0, 0, 0]);
    expect(sent).toBe(sentBefore);
  });

  test('past its deadline, it ends with DEADLINE_EXCEEDED, never sent, not when its token comes', async () => {
    const sentBefore = sent;
    const asked = Date.now();
    const call = connection.withDeadline(asked + 500, () => connection.workflowService.getSystemInfo({}));
    await expect(call).rejects.toMatchObject({ code: status.DEADLINE_EXCEEDED });
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(bucket.waiting).toEqual([0, 0, 0]);
    expect(sent).toBe(sentBefore);
  });

  test('made past its deadline, it ends at once with DEADLINE_EXCEEDED', async () => {
    const call = connection.withDeadline(Date.now() - 1, () => connection.workflowService.getSystemInfo({}));
    await expect(call).rejects.toMatchObject({ code: status.DEADLINE_EXCEEDED });
    expect(bucket.waiting).toEqual([0, 0, 0]);
  });
});
