/**
 * Every committed RolloutWorkflow history (tests/replay/histories/*.json, in the format of
 * `temporal workflow show --output json`; rollout-workflow.test.ts records one) replays with the current
 * workflow code: an edit that would break running rollouts (a nondeterministic change) fails here.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { History } from '@temporalio/common/lib/proto-utils.js';
import { Worker } from '@temporalio/worker';
import { taskCostSinks, workflowInterceptorModules } from '../../worker/controller.js';
import { RateBudget } from '../../worker/rate-budget.js';

const dir = fileURLToPath(new URL('../replay/histories/', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

/**
 * Proto JSON → History. The SDK's historyFromJSON (which the Worker also uses for JSON input) fails here
 * with "type must be a Type": @temporalio/common and @temporalio/proto each get their own copy of
 * protobufjs 8, so its protojson does not recognise the proto's types. The copy @temporalio/proto loads
 * its types with does.
 */
function historyFromJson(json: unknown): History {
  const nodeRequire = createRequire(import.meta.url);
  const protoRequire = createRequire(nodeRequire.resolve('@temporalio/proto'));
  const root = protoRequire('./root') as { lookupType(name: string): unknown };
  const { fromJson } = protoRequire('protobufjs/ext/protojson') as { fromJson(type: unknown, json: unknown, options?: object): History };
  return fromJson(root.lookupType('temporal.api.history.v1.History'), json, { ignoreUnknownFields: true });
}

test('every committed history replays without a determinism error', async () => {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')).sort() : [];
  expect(files.length).toBeGreaterThan(0);
  const histories = files.map((f) => ({
    workflowId: basename(f, '.json'),
    history: historyFromJson(JSON.parse(readFileSync(join(dir, f), 'utf8'))),
  }));
  for (const { history } of histories) expect(history.events?.length).toBeGreaterThan(0);
  const failures: string[] = [];
  let replayed = 0;
  // With the interceptor modules the controller bundles with the workflows, and their sinks.
  const replaying = { workflowsPath, interceptors: { workflowModules: workflowInterceptorModules }, sinks: taskCostSinks(new RateBudget(1000)) };
  for await (const result of Worker.runReplayHistories(replaying, histories)) {
    replayed++;
    if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
  }
  expect(failures).toEqual([]);
  expect(replayed).toBe(files.length);
});
