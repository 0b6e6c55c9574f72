/**
 * Every committed RolloutWorkflow history (tests/replay/histories/*.json, in the format of
 * `temporal workflow show --output json`; rollout-workflow.test.ts records one) replays with the current
 * workflow code: an edit that would break running rollouts (a nondeterministic change) fails here.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { historyFromJson } from '../../scripts/history.js';
import { rolloutWorkflowIdOf } from '../../scripts/history.js';

const dir = fileURLToPath(new URL('../replay/histories/', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

test('every committed history replays without a determinism error', async () => {
  const files = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.json'))
        .sort()
    : [];
  expect(files.length).toBeGreaterThan(0);
  // Each under the workflow ID it ran under (its owner's): the workflow checks it before it does anything.
  const histories = files.map((f) => {
    const history = historyFromJson(JSON.parse(readFileSync(join(dir, f), 'utf8')));
    return { name: basename(f, '.json'), workflowId: rolloutWorkflowIdOf(history), history };
  });
  const nameOf = new Map(histories.map((h) => [h.workflowId, h.name]));
  expect(nameOf.size).toBe(files.length); // one history per rollout: a failure names its file
  for (const { history } of histories) expect(history.events?.length).toBeGreaterThan(0);
  const failures: string[] = [];
  let replayed = 0;
  for await (const result of Worker.runReplayHistories({ workflowsPath }, histories)) {
    replayed++;
    if (result.error) failures.push(`${nameOf.get(result.workflowId) ?? result.workflowId}: ${result.error.message}`);
  }
  expect(failures).toEqual([]);
  expect(replayed).toBe(files.length);
});
