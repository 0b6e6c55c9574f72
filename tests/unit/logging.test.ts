import { JsonLogger, logRecord, resourceOfWorkflowId } from '../../worker/logging.js';

const at = new Date('2026-11-23T10:00:00.000Z');

test("a rollout's workflow ID names its resource; other IDs name none", () => {
  expect(resourceOfWorkflowId('glidepath/1a2b3c4d/team-a/orders')).toBe('team-a/orders');
  expect(resourceOfWorkflowId('gate-123')).toBeUndefined();
  expect(resourceOfWorkflowId(undefined)).toBeUndefined();
});

test.each<[string, Record<string, unknown> | undefined, Record<string, unknown>]>([
  [
    'time, level and message first, then resource, build and workflow',
    { workflowId: 'glidepath/i1/ns/app', buildId: 'b1', namespace: 'default', runId: 'r' },
    {
      ts: at.toISOString(),
      level: 'info',
      msg: 'm',
      resource: 'ns/app',
      buildId: 'b1',
      workflowId: 'glidepath/i1/ns/app',
      namespace: 'default',
      runId: 'r',
    },
  ],
  [
    'a watcher line about a resource by its namespace and name',
    { namespace: 'ns', name: 'app' },
    { ts: at.toISOString(), level: 'info', msg: 'm', resource: 'ns/app', namespace: 'ns', name: 'app' },
  ],
  [
    'an error as its message',
    { error: new Error('boom') },
    { ts: at.toISOString(), level: 'info', msg: 'm', error: 'boom' },
  ],
  ['no metadata', undefined, { ts: at.toISOString(), level: 'info', msg: 'm' }],
])('%s', (_, meta, expected) => {
  const record = logRecord('INFO', 'm', meta, at);
  expect(record).toEqual(expected);
  expect(Object.keys(record)).toEqual(Object.keys(expected));
});

test('the logger writes one JSON line per call at its level and above', () => {
  const lines: string[] = [];
  const logger = new JsonLogger('WARN', (l) => lines.push(l));
  logger.info('quiet');
  logger.warn('loud', { workflowId: 'glidepath/i1/ns/app' });
  logger.error('louder');
  expect(lines).toHaveLength(2);
  expect(lines.every((l) => l.endsWith('\n') && !l.slice(0, -1).includes('\n'))).toBe(true);
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: 'warn', msg: 'loud', resource: 'ns/app' });
});
