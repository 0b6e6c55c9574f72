/** `GLIDEPATH_DEV_DYNAMIC_CONFIG` and `GLIDEPATH_TEMPORAL_SERVER`: what servers:up passes on, and clear refusals. */
import { temporalServerKind, userDynamicConfig } from '../../scripts/servers/temporal-server.js';

test('entries separated by spaces or new lines, each value JSON, are passed on as they are', () => {
  expect(
    userDynamicConfig({
      GLIDEPATH_DEV_DYNAMIC_CONFIG: ' matching.maxVersionsInDeployment=3\n limit.x="1s"  a.b=true ',
    }),
  ).toEqual(['matching.maxVersionsInDeployment=3', 'limit.x="1s"', 'a.b=true']);
  expect(userDynamicConfig({})).toEqual([]);
  expect(userDynamicConfig({ GLIDEPATH_DEV_DYNAMIC_CONFIG: '  ' })).toEqual([]);
});

test.each([
  [
    'matching.PollerHistoryTTL=1s',
    /the value of matching\.PollerHistoryTTL is not JSON \(1s; a string is quoted: "1s"\)/,
  ],
  ['=3', /"=3" is not KEY=VALUE with a dotted key/],
  ['noValue', /"noValue" is not KEY=VALUE/],
  ['1bad=3', /"1bad=3" is not KEY=VALUE/],
])('%s is refused, naming the variable and the entry', (entry, message) => {
  expect(() => userDynamicConfig({ GLIDEPATH_DEV_DYNAMIC_CONFIG: entry })).toThrow(/^GLIDEPATH_DEV_DYNAMIC_CONFIG: /);
  expect(() => userDynamicConfig({ GLIDEPATH_DEV_DYNAMIC_CONFIG: entry })).toThrow(message);
});

test('the server kind: dev by default, cli on request, anything else refused', () => {
  expect(temporalServerKind({})).toBe('dev');
  expect(temporalServerKind({ GLIDEPATH_TEMPORAL_SERVER: 'cli' })).toBe('cli');
  expect(() => temporalServerKind({ GLIDEPATH_TEMPORAL_SERVER: '1.29' })).toThrow(
    /GLIDEPATH_TEMPORAL_SERVER=1\.29: want dev .* or cli/,
  );
});
