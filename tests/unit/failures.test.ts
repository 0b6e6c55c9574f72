import { describe, expect, it } from '@jest/globals';
import { DefaultFailureConverter, defaultPayloadConverter, type ProtoFailure } from '@temporalio/common';
import { ActivityFailure } from '@temporalio/workflow';
import { rootCause } from '../../workflows/failures.js';

/** An activity's failure as the workflow receives it: converted from what the server sent, by the SDK's converter. */
const received = (cause: ProtoFailure) =>
  new DefaultFailureConverter().failureToError(
    { message: 'activity failed', activityFailureInfo: { activityType: { name: 'describeRouting' } }, cause },
    defaultPayloadConverter,
  );

describe('rootCause', () => {
  it("a schedule-to-close timeout says its last attempt's error, which the SDK's TimeoutFailure drops", () => {
    const err = received({
      message: 'activity ScheduleToClose timeout',
      timeoutFailureInfo: { timeoutType: 2 },
      cause: { message: 'cannot connect to Temporal: connection refused', applicationFailureInfo: { type: 'Error' } },
    });
    expect(err).toBeInstanceOf(ActivityFailure);
    expect(rootCause(err as ActivityFailure)).toBe('cannot connect to Temporal: connection refused');
  });

  it('a timeout with no attempt that failed says it timed out', () => {
    const err = received({ message: 'activity StartToClose timeout', timeoutFailureInfo: { timeoutType: 1 } });
    expect(rootCause(err as ActivityFailure)).toBe('activity StartToClose timeout');
  });

  it('an application failure says its own message', () => {
    const err = received({ message: 'Secret shop/tls not found', applicationFailureInfo: { type: 'PermanentError' } });
    expect(rootCause(err as ActivityFailure)).toBe('Secret shop/tls not found');
  });
});
