/**
 * setCurrent against a fake WorkflowService that scripts what its describes say after the write: on a 1.30+ server
 * it reads until the routing reached every task queue (for at most `propagationBoundMs`), says what it read as
 * draining, and a failed read says nothing rather than failing a write that landed. The clock is jest's.
 */
import { jest } from '@jest/globals';
import proto from '@temporalio/proto';
import { createTemporalActivities } from '../../activities/temporal.js';
import { propagationBoundMs, type SetCurrentResult } from '../../activities/routing.js';
import { connectionsTo, fakeTarget as target } from '../harness/fake-temporal.js';
import { grpcError } from '../harness/grpc-error.js';

const { RoutingConfigUpdateState, WorkerDeploymentVersionStatus } = proto.temporal.api.enums.v1;

/** What a describe says after the write: the current build, and whether routing still propagates. */
type Read = { current: string; propagating: boolean } | 'unavailable';

function server(serverVersion: string, reads: Read[]) {
  const calls = { describes: 0, writes: 0 };
  const workflowService = {
    getSystemInfo: async () => ({ serverVersion }),
    setWorkerDeploymentCurrentVersion: async () => {
      calls.writes++;
      return { conflictToken: Buffer.from('t2') };
    },
    describeWorkerDeployment: async () => {
      const read = reads[Math.min(calls.describes++, reads.length - 1)]!;
      if (read === 'unavailable') throw grpcError(14, 'unavailable');
      return {
        workerDeploymentInfo: {
          routingConfig: { currentDeploymentVersion: { buildId: read.current } },
          routingConfigUpdateState: read.propagating
            ? RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS
            : RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_COMPLETED,
          versionSummaries: [
            {
              deploymentVersion: { buildId: 'v1' },
              status: WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING,
            },
          ],
        },
      };
    },
  };
  return {
    activities: createTemporalActivities(connectionsTo(workflowService), 'glidepath', async () => undefined),
    calls,
  };
}

/** setCurrent(v2) with our last write's token (no describe before the write), on jest's clock. */
async function setCurrent(s: ReturnType<typeof server>) {
  jest.useFakeTimers();
  try {
    const started = Date.now();
    let outcome: { value?: SetCurrentResult; error?: unknown } | undefined;
    s.activities.setCurrent(target, 'v2', { conflictToken: Buffer.from('t1').toString('base64') }).then(
      (value) => (outcome = { value }),
      (error: unknown) => (outcome = { error }),
    );
    while (!outcome && Date.now() - started < 60_000) await jest.advanceTimersByTimeAsync(10);
    return { ...outcome, tookMs: Date.now() - started };
  } finally {
    jest.useRealTimers();
  }
}

const token = Buffer.from('t2').toString('base64');
const propagating = { current: 'v2', propagating: true };
const done = { current: 'v2', propagating: false };

test('an older server answers once routing is in force: nothing is read after the write', async () => {
  const s = server('1.29.1', [done]);
  expect(await setCurrent(s)).toMatchObject({ value: { conflictToken: token } });
  expect(s.calls).toEqual({ describes: 0, writes: 1 });
});

test('on 1.30+, read until the routing reached every task queue; what it read as draining is said', async () => {
  const s = server('1.32.0', [propagating, propagating, done]);
  const { value, tookMs } = await setCurrent(s);
  expect(value).toEqual({ conflictToken: token, draining: ['v1'] });
  expect(s.calls.describes).toBe(3);
  expect(tookMs).toBeLessThan(500); // at once, then 100 and 200 ms later
});

test('routing still propagating when the bound is reached: said, and no more reads', async () => {
  const s = server('1.32.0', [propagating]);
  const { value, tookMs } = await setCurrent(s);
  expect(value).toEqual({ conflictToken: token, draining: ['v1'], propagating: true });
  expect(tookMs).toBeLessThanOrEqual(propagationBoundMs);
  expect(s.calls.describes).toBeLessThanOrEqual(10);
});

test('someone else made another build current meanwhile: the read stops, theirs is not waited for', async () => {
  const s = server('1.32.0', [{ current: 'v3', propagating: true }]);
  expect((await setCurrent(s)).value).toEqual({ conflictToken: token, draining: ['v1'] });
  expect(s.calls.describes).toBe(1);
});

test('a failed read after the write says nothing, and the write stands', async () => {
  const s = server('1.32.0', ['unavailable']);
  expect((await setCurrent(s)).value).toEqual({ conflictToken: token });
  expect(s.calls.writes).toBe(1);
});
