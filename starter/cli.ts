/**
 * `npm run glidepath -- <command> <namespace>/<name> [...]`: talk to a resource's RolloutWorkflow.
 *
 *   status   NS/NAME                        the rollout as the workflow sees it
 *   history  NS/NAME                        who did what and why (controls, transitions, refusals)
 *   pause    NS/NAME [REASON]               hold the rollout (a running pause timer stops counting)
 *   resume   NS/NAME [REASON]
 *   promote  NS/NAME [--full] [REASON]      end the step waiting for promotion (--full: make the target current now)
 *   abort    NS/NAME [REASON]               stop: the target gets no new work and is sunset
 *   rollback NS/NAME [--to BUILD] [REASON]  route back to the previous current build (or BUILD)
 *   retry    NS/NAME [REASON]               roll an aborted build out again
 *   list                                    every rollout with its phase and builds
 *
 * Controls are updates: the workflow answers with the status once the control took effect, or refuses it
 * (printed as `refused: <why>`, exit 1). Uses TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE (as `.dev/env.sh` sets them).
 * The same names work with `temporal workflow update execute|signal --workflow-id glidepath/NS/NAME --name pause`.
 */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import * as k8s from '@kubernetes/client-node';
import { Client, Connection, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { rolloutWorkflowId } from '../api/names.js';
import { history, status, updates, type AbortRequest, type ControlName, type PromoteRequest, type RollbackRequest } from '../workflows/messages.js';
import type { HistoryEntry, RolloutStatus } from '../workflows/state.js';
import { refusalReason } from './annotations.js';

/** Every control's request in one type, so one call sends any of them. */
type AnyControlRequest = PromoteRequest & AbortRequest & RollbackRequest;

const usage = [
  'usage: glidepath status|history <namespace>/<name>',
  '       glidepath pause|resume|abort|retry <namespace>/<name> [reason]',
  '       glidepath promote <namespace>/<name> [--full] [reason]',
  '       glidepath rollback <namespace>/<name> [--to BUILD] [reason]',
  '       glidepath list',
].join('\n');

/** What each control did, for the first word of its answer. */
const done: Record<ControlName, string> = {
  pause: 'paused', resume: 'resumed', abort: 'aborted', promote: 'promoted', rollback: 'rolled back', retry: 'retrying',
};

export async function main(argv: string[]): Promise<string> {
  const [command, target, ...rest] = argv;
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
  const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
  try {
    if (command === 'list') return await list(client);
    const match = /^([a-z0-9-]+)\/([a-z0-9-]+)$/.exec(target ?? '');
    if (!command || !match) throw new Error(usage);
    const handle = client.workflow.getHandle(rolloutWorkflowId(match[1]!, match[2]!));
    if (command === 'status') return JSON.stringify(await handle.query(status), null, 2);
    if (command === 'history') return formatHistory(await handle.query(history));
    if (!(command in updates)) throw new Error(`unknown command "${command}"\n${usage}`);
    const control = command as ControlName;
    const args = parseArgs(rest);
    const request: AnyControlRequest = { reason: args.reason, identity: identity(), requestId: randomUUID() };
    // promote and abort name the build they mean: one that a newer build superseded meanwhile is refused.
    if (control === 'promote' || control === 'abort') request.buildId = (await handle.query(status)).target?.buildId;
    if (control === 'promote') request.full = args.full;
    if (control === 'rollback') request.toBuildId = args.to;
    const answer = await send(handle, control, request);
    return `${done[control]} ${target}: ${answer.phase}${answer.message ? ` — ${answer.message}` : ''}`;
  } finally {
    await connection.close();
  }
}

/** `[--full] [--to BUILD] words…`: the flags, and the rest as the reason. */
function parseArgs(rest: string[]): { full: boolean; to?: string; reason?: string } {
  const words: string[] = [];
  let to: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === '--to') to = rest[++i];
    else if (rest[i] !== '--full') words.push(rest[i]!);
  }
  if (rest.includes('--to') && !to) throw new Error(`--to needs a build ID\n${usage}`);
  return { full: rest.includes('--full'), to, reason: words.join(' ') || undefined };
}

/** Runs a control as an update; a refusal becomes `refused: <why>`. */
async function send(handle: WorkflowHandle, control: ControlName, request: AnyControlRequest): Promise<RolloutStatus> {
  const update = updates[control] as UpdateDefinition<RolloutStatus, [AnyControlRequest]>;
  try {
    return await handle.executeUpdate(update, { args: [request], updateId: request.requestId });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) throw new Error(`refused: ${refusalReason(control, err.cause?.message ?? err.message)}`);
    throw err;
  }
}

/** `alice (kube context kind-dev)`: the OS user, and the kube context in use if there is one. */
export function identity(): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container with an arbitrary UID)
  }
  let context: string | undefined;
  try {
    const kc = new k8s.KubeConfig();
    kc.loadFromDefault();
    // With no kubeconfig, client-node makes one up under this name.
    context = kc.getCurrentContext() !== 'loaded-context' ? kc.getCurrentContext() || undefined : undefined;
  } catch {
    // an unreadable kubeconfig names no context
  }
  return context ? `${user} (kube context ${context})` : user;
}

/** History as aligned columns: at, who, what, why. */
export function formatHistory(entries: HistoryEntry[]): string {
  if (!entries.length) return 'no history yet';
  const rows = entries.map((e) => [
    e.at,
    e.who,
    `${e.kind === 'refused' ? 'refused ' : ''}${e.what}${e.buildId ? ` ${e.buildId}` : ''}`,
    e.why,
  ]);
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i < 3 ? cell.padEnd(widths[i]!) : cell)).join('  ').trimEnd()).join('\n');
}

async function list(client: Client): Promise<string> {
  const lines: string[] = [];
  for await (const wf of client.workflow.list({ query: `WorkflowType = 'RolloutWorkflow' AND ExecutionStatus = 'Running'` })) {
    const sa = wf.searchAttributes as Record<string, unknown[] | undefined>;
    lines.push(`${wf.workflowId}\t${sa.GlidepathPhase?.[0] ?? ''}\tcurrent=${sa.GlidepathCurrentBuild?.[0] ?? ''}\ttarget=${sa.GlidepathTargetBuild?.[0] ?? ''}`);
  }
  return lines.join('\n') || 'no rollouts running';
}

if (process.argv[1]?.endsWith('cli.ts')) {
  main(process.argv.slice(2)).then(
    (out) => console.log(out),
    (err: Error) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
