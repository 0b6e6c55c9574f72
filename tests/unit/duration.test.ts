import { durationNanos, formatDuration, parseDuration } from '../../api/duration.js';

describe('parseDuration', () => {
  test.each([
    ['30s', 30_000],
    ['1m30s', 90_000],
    ['1h', 3_600_000],
    ['250ms', 250],
    ['1.5s', 1500],
    ['2h0m5s', 7_205_000],
    ['0s', 0],
  ])('%s is %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));

  test.each(['', '30', 's', '1d', '-5s', '5 s', '1h-2m'])('"%s" is refused with a message naming it', (text) => {
    expect(() => parseDuration(text)).toThrow(`"${text}" is not a duration`);
  });
});

describe('formatDuration', () => {
  test.each([
    [90_000, '1m30s'],
    [3_600_000, '1h'],
    [250, '250ms'],
    [0, '0ms'],
    [3_661_000, '1h1m1s'],
    [120_000, '2m'],
  ])('%d ms reads %s', (ms, text) => expect(formatDuration(ms)).toBe(text));
});

describe('durationNanos (Go time.ParseDuration, as CEL reads durations)', () => {
  test.each<[string, bigint | undefined]>([
    ['1s', 1_000_000_000n],
    ['1.5us', 1500n],
    ['1.5µs', 1500n],
    ['0.5ns', 0n],
    ['1.9ns', 1n],
    ['1h30m', 5_400_000_000_000n],
    ['0.000000001s', 1n],
    ['9223372036854775807ns', 9_223_372_036_854_775_807n],
    ['2562047h47m16.854775807s', 9_223_372_036_854_775_807n],
    ['9223372036854775808ns', undefined],
    ['2562048h', undefined],
    ['100000000h', undefined],
    ['5 minutes', undefined],
  ])('%s is %p ns', (text, ns) => expect(durationNanos(text)).toBe(ns));
});
