import { holdsProblemStatus } from '../../starter/condition-ownership.js';

const entry = (manager: string, status: Record<string, unknown>, subresource?: string) => ({
  manager,
  operation: 'Apply',
  subresource: subresource ?? 'status',
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:status': status },
});

describe('holdsProblemStatus', () => {
  test.each([
    [
      'the watcher wrote InvalidSpec',
      [entry('w', { 'f:phase': {}, 'f:message': {}, 'f:conditions': {}, 'f:observedGeneration': {} })],
      true,
    ],
    [
      'the workflow took phase and message, the watcher still holds the conditions',
      [entry('w', { 'f:conditions': {}, 'f:observedGeneration': {} })],
      true,
    ],
    ['the watcher released them: only observedGeneration left', [entry('w', { 'f:observedGeneration': {} })], false],
    ['another manager holds the conditions', [entry('glidepath', { 'f:phase': {}, 'f:conditions': {} })], false],
    ['the watcher holds the fields on the main resource, not status', [entry('w', { 'f:phase': {} }, '')], false],
    ['no managedFields', undefined, false],
  ])('%s → %s', (_, fields, holds) => expect(holdsProblemStatus(fields, 'w')).toBe(holds));
});
