/**
 * The server's features by the version it reports: the routing update state from 1.30, one-time overrides from
 * 1.32, nothing assumed of the unknown.
 */
import { featuresOf, parseServerVersion } from '../../temporal/server-version.js';

test.each([
  ['1.32.0', [1, 32]],
  ['v1.30.1-rc.1', [1, 30]],
  ['2.0.0', [2, 0]],
  ['', undefined],
  ['cloud', undefined],
])('%s parses as %p', (version, parsed) => {
  expect(parseServerVersion(version)).toEqual(parsed);
});

test.each([
  ['1.29.1', false],
  ['1.31.9', false],
  ['1.32.0', true],
  ['1.40.0', true],
  ['2.1.0', true],
  [undefined, false],
  ['nightly', false],
])('server %s: one-time overrides %p', (version, oneTime) => {
  expect(featuresOf(version).oneTimeOverride).toBe(oneTime);
});

test.each([
  ['1.29.1', false],
  ['1.30.0', true],
  ['1.32.0', true],
  [undefined, false],
])('server %s: routing update state %p', (version, said) => {
  expect(featuresOf(version).routingUpdateState).toBe(said);
});

test('a version that is not reported reads as unknown', () => {
  expect(featuresOf(undefined).version).toBe('unknown');
});
