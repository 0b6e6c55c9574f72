import { formatDuration, parseDuration } from '../../api/duration.js';

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
