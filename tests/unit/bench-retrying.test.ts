/**
 * The latency benchmark's floor never dies on a transient refusal: a NOT_FOUND right after a write, the server's
 * between-runs window or a busy server is tried again for a bounded while; anything else fails at once.
 */
import { NotYet, retrying } from '../../bench/latency/retrying.js';
import { grpcError } from '../harness/grpc-error.js';

/** A call that throws `failures` in turn, then answers; and a clock that the sleeps move. */
function script(failures: unknown[]) {
  let clock = 0;
  const sleeps: number[] = [];
  let calls = 0;
  const call = async () => {
    const failure = failures[calls++];
    if (failure) throw failure;
    return 'answer';
  };
  const o = { sleep: async (ms: number) => void (sleeps.push(ms), (clock += ms)), now: () => clock };
  return { call, o, sleeps, calls: () => calls };
}

test('NOT_FOUND, between runs, unavailable and a describe that found nothing yet are tried again', async () => {
  const s = script([
    grpcError(5, 'Worker Deployment not found'),
    grpcError(9, 'Workflow task is not scheduled yet.'),
    grpcError(14, 'unavailable'),
    new NotYet('not found'),
  ]);
  expect(await retrying('set current v1', s.call, s.o)).toBe('answer');
  expect(s.sleeps).toEqual([50, 100, 200, 400]);
});

test('a transient refusal that holds fails after the bounded while, naming the call', async () => {
  const s = script(Array.from({ length: 100 }, () => grpcError(5, 'Worker Deployment not found')));
  await expect(retrying('first ramp', s.call, { ...s.o, withinMs: 10_000 })).rejects.toThrow(
    /^first ramp: .*Worker Deployment not found/,
  );
  expect(s.sleeps.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(10_000);
  expect(s.sleeps.at(-1)).toBe(2000);
});

test('any other error fails at once', async () => {
  const s = script([grpcError(3, 'bad request'), undefined]);
  await expect(retrying('describe', s.call, s.o)).rejects.toThrow(/^describe: /);
  expect(s.calls()).toBe(1);
  // A missing namespace is no window: the call is refused.
  const n = script([grpcError(5, 'Namespace default is not found.')]);
  await expect(retrying('describe', n.call, n.o)).rejects.toThrow(/Namespace default is not found/);
  expect(n.calls()).toBe(1);
});
