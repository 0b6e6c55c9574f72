/**
 * Replay fixtures (tests/replay/histories/): a test that walks a path of RolloutWorkflow keeps the history of
 * that walk, once. The file is written only when missing, so CI replays what is committed and records nothing.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { temporalBinary } from '../../scripts/servers/temporal-server.js';
import type { FakeWorld } from './fake-world.js';

const dir = fileURLToPath(new URL('../replay/histories/', import.meta.url));

/**
 * Deletes the world's resource the way the apiserver and the watcher do (`world.deleteResource()`: a
 * deletionTimestamp the workflow reads, and the `deleted` wake-up), so the history ends with the deletion path
 * too; waits for the workflow to complete, then writes the history of `runId` (default: the latest run) to
 * `<name>.json` if that file does not exist.
 */
export async function keepHistory(world: FakeWorld, name: string, runId?: string): Promise<void> {
  const { client, workflowId } = world;
  const latest = client.workflow.getHandle(workflowId);
  if ((await latest.describe()).status.name === 'RUNNING') {
    await world.deleteResource();
    await latest.result();
  }
  const file = `${dir}${name}.json`;
  if (existsSync(file)) return;
  const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
  // `temporal workflow show --output json`: the format histories downloaded from any server have (the SDK's
  // historyToJSON fails with two protobufjs copies installed).
  const args = [
    'workflow',
    'show',
    '--workflow-id',
    workflowId,
    '--address',
    address,
    '--namespace',
    namespace,
    '--output',
    'json',
  ];
  if (runId) args.push('--run-id', runId);
  const json = execFileSync(temporalBinary(), args, { encoding: 'utf8' });
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, json.endsWith('\n') ? json : `${json}\n`);
  console.log(`wrote the replay fixture ${file}; commit it`);
}

/** The summary the Web UI shows for a history event (an activity, a timer, a local activity's marker). */
export function summaryOf(e: temporal.api.history.v1.IHistoryEvent): string | undefined {
  const payload = e.userMetadata?.summary;
  return payload ? defaultPayloadConverter.fromPayload<string>(payload) : undefined;
}
