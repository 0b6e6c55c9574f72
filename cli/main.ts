/**
 * The `glidepath` CLI: `kubectl glidepath …` (the `kubectl-glidepath` bin), `npx glidepath …`, or
 * `npm run glidepath -- …` in a checkout. Talks to each resource's RolloutWorkflow in the controller's Temporal:
 *
 *   status   [NS/NAME] [--watch]              the rollout live: ramp and step, time left, versions, open executions
 *   list                                      running rollouts with their phase and builds
 *   history  NS/NAME                          who did what and why (controls, transitions, refusals)
 *   pause|resume|abort|retry NS/NAME [REASON…]
 *   promote  NS/NAME [--full] [REASON…]       end the step waiting for promotion (--full: make the target current now)
 *   rollback NS/NAME [--to BUILD] [REASON…]   route back to the previous current build (or BUILD)
 *
 * Controls are updates: the workflow answers with the status once the control took effect, or refuses it
 * (`refused: <why>`, exit 1). `--output json|yaml` for scripts; the exit codes are in ./exit-codes.ts. The same
 * names work with `temporal workflow update execute --workflow-id <status.rolloutWorkflow.workflowId> --name pause`.
 */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { basename } from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import pc from 'picocolors';
import {
  history,
  updates,
  type AbortRequest,
  type ControlName,
  type PromoteRequest,
  type RollbackRequest,
} from '../workflows/messages.js';
import type { RolloutStatus } from '../workflows/state.js';
import { currentBuildKey, phaseKey, targetBuildKey } from '../workflows/search-attributes.js';
import { refusalReason } from '../starter/annotations.js';
import { parseResourceRef, parseWorkflowId, type ResourceRef } from './config.js';
import { CliError, ExitCode, errorMessage, exitCodeOf } from './exit-codes.js';
import { parseInvocation, type GlobalOptions, type Invocation } from './program.js';
import {
  formatData,
  plain,
  renderHistory,
  renderList,
  renderRollout,
  renderUnavailable,
  type Colors,
  type ListRow,
} from './render.js';
import { Session, updateTimeoutMs, type ListedResource } from './session.js';
import { rolloutView, type RolloutView } from './view.js';
import { watch, type WatchIo } from './watch.js';

/** Every control's request in one type, so one call sends any of them. */
type AnyControlRequest = PromoteRequest & AbortRequest & RollbackRequest;

/** What each control did, for the first word of its answer. */
const done: Record<ControlName, string> = {
  pause: 'paused',
  resume: 'resumed',
  abort: 'aborted',
  promote: 'promoted',
  rollback: 'rolled back',
  retry: 'retrying',
};

/** Where the CLI writes and reads; the process's own by default. */
export interface CliIo extends WatchIo {
  env: NodeJS.ProcessEnv;
  /** `glidepath`, or `kubectl glidepath` as the kubectl plugin. */
  name: string;
}

const processIo = (): CliIo => ({
  stdout: process.stdout,
  stdin: process.stdin,
  env: process.env,
  name: programName(process.argv[1]),
});

/** The name people typed: `kubectl glidepath` for the plugin, else `glidepath`. */
export function programName(script: string | undefined): string {
  return script && basename(script).startsWith('kubectl-') ? 'kubectl glidepath' : 'glidepath';
}

/**
 * Runs one command line and returns what to print (a watch draws on `io.stdout` itself and returns '' when it
 * ends). A failure is thrown: a CliError (or an error `exitCodeOf` knows) with the message to print.
 */
export async function main(argv: string[], io: Partial<CliIo> = {}): Promise<string> {
  const cio: CliIo = { ...processIo(), ...io };
  const invocation = await parseInvocation(argv, cio.name);
  if (invocation.command === 'help') return invocation.text.trimEnd();
  const g = invocation.globals;
  const colors = useColors(g, cio) ? pc.createColors(true) : plain;
  const session = new Session(g);
  try {
    switch (invocation.command) {
      case 'status':
        return await status(session, invocation, colors, cio);
      case 'list':
        return await list(session, g, colors);
      case 'history': {
        const ref = resourceRef(session, invocation.resource);
        const entries = await session.query(ref, (h) => h.query(history));
        return g.output === 'table' ? renderHistory(entries, colors) : formatData(entries, g.output);
      }
      default:
        return await control(session, invocation, colors);
    }
  } finally {
    await session.close();
  }
}

function useColors(g: GlobalOptions, io: CliIo): boolean {
  if (!g.color || g.output !== 'table' || io.env.NO_COLOR) return false;
  if (io.env.FORCE_COLOR && io.env.FORCE_COLOR !== '0') return true;
  return io.stdout.isTTY === true && io.env.TERM !== 'dumb';
}

/** NAMESPACE/NAME, or NAME in the namespace `-n` or the kube context gives (the kubeconfig is read only then). */
function resourceRef(session: Session, text: string): ResourceRef {
  return parseResourceRef(text, text.includes('/') ? 'default' : (session.flags.namespace ?? session.kube().namespace));
}

/** One resource's rollout, or why it cannot be shown. */
interface Entry {
  ref: ListedResource;
  view?: RolloutView;
  error?: string;
}

async function status(
  session: Session,
  inv: Extract<Invocation, { command: 'status' }>,
  colors: Colors,
  io: CliIo,
): Promise<string> {
  const g = inv.globals;
  const single = inv.resource ? resourceRef(session, inv.resource) : undefined;
  const where = g.allNamespaces ? 'any namespace' : `namespace ${g.namespace ?? session.kube().namespace}`;

  const entries = async (): Promise<Entry[]> => {
    const refs: ListedResource[] = single ? [single] : await session.resources(g.allNamespaces);
    return mapLimited(refs, 8, async (ref) => {
      try {
        const s = await session.status(ref);
        return { ref, view: rolloutView(ref, s, await session.openExecutions(ref, s), Date.now()) };
      } catch (err) {
        const code = exitCodeOf(err);
        // One resource: its error is the command's. Several: a missing rollout is a line among the others.
        if (single || code === ExitCode.CannotConnect) throw err;
        if (code === ExitCode.NotFound)
          return {
            ref,
            error: `no rollout workflow${ref.phase ? ` (resource phase ${ref.phase})` : ''}: is the controller running against this Temporal?`,
          };
        return { ref, error: (err as Error).message };
      }
    });
  };
  const asData = (list: Entry[]) => {
    const data = list.map((e) => e.view ?? { namespace: e.ref.namespace, name: e.ref.name, error: e.error });
    return single ? data[0] : data;
  };
  const width = io.stdout.columns ?? 120;
  const barSize = Math.max(10, Math.min(40, width - 70));
  const render = (list: Entry[]): string => {
    if (g.output !== 'table') return formatData(asData(list), g.output);
    if (!list.length) return `no TemporalWorkerDeployments in ${where}`;
    const now = Date.now();
    return list
      .map((e) =>
        (e.view
          ? renderRollout(e.view, { colors, now, barSize })
          : renderUnavailable(e.ref, e.error ?? '', colors)
        ).join('\n'),
      )
      .join('\n\n');
  };

  if (!inv.watch) return render(await entries());
  const title = `${io.name} status ${inv.resource ?? (g.allNamespaces ? '-A' : `-n ${g.namespace ?? session.kube().namespace}`)}`;
  const frame =
    g.output === 'table'
      ? async () => render(await entries())
      : async () =>
          g.output === 'json'
            ? JSON.stringify(asData(await entries()))
            : `---\n${formatData(asData(await entries()), 'yaml')}`;
  await watch(io, inv.intervalMs, frame, (at) =>
    colors.dim(`${title}   every ${inv.intervalMs / 1000}s   ${at.toLocaleTimeString()}   (q or Ctrl-C to quit)`),
  );
  return '';
}

async function list(session: Session, g: GlobalOptions, colors: Colors): Promise<string> {
  const namespace = g.allNamespaces ? undefined : (g.namespace ?? session.kube().namespace);
  const client = await session.client();
  const rows: ListRow[] = [];
  for await (const wf of client.workflow.list({
    query: `WorkflowType = 'RolloutWorkflow' AND ExecutionStatus = 'Running'`,
  })) {
    const ref = parseWorkflowId(wf.workflowId);
    if (!ref || (namespace && ref.namespace !== namespace)) continue;
    const sa = wf.typedSearchAttributes;
    rows.push({
      ...ref,
      ...optional('phase', sa.get(phaseKey)),
      ...optional('current', sa.get(currentBuildKey)),
      ...optional('target', sa.get(targetBuildKey)),
      started: wf.startTime.toISOString(),
    });
  }
  rows.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  if (g.output !== 'table') return formatData(rows, g.output);
  return rows.length
    ? renderList(rows, { colors, now: Date.now() })
    : `no rollouts running in ${namespace ? `namespace ${namespace}` : 'any namespace'}`;
}

const optional = <K extends string>(key: K, value: string | undefined) =>
  value ? ({ [key]: value } as Record<K, string>) : {};

async function control(
  session: Session,
  inv: Extract<Invocation, { command: ControlName }>,
  colors: Colors,
): Promise<string> {
  const ref = resourceRef(session, inv.resource);
  const name = inv.command;
  if (!(await session.mayControl(ref))) {
    throw new CliError(
      `refused: Kubernetes does not let you patch ${ref.namespace}/${ref.name} (a ${name} needs the right its annotation needs: patch on the resource)`,
      ExitCode.Failed,
    );
  }
  const request: AnyControlRequest = { reason: inv.reason, identity: identity(session), requestId: randomUUID() };
  // A query first, for every control: with no controller running it fails within its short deadline and nothing
  // is sent, instead of an update left admitted on the server to take effect whenever a controller returns.
  const now = await session.status(ref);
  // promote and abort name the build they mean: one that a newer build superseded meanwhile is refused.
  if (name === 'promote' || name === 'abort') request.buildId = now.target?.buildId;
  if (name === 'promote') request.full = inv.full === true;
  if (name === 'rollback') request.toBuildId = inv.to;
  const answer = await session.query(ref, (h) => send(h, name, request), updateTimeoutMs);
  if (inv.globals.output !== 'table') return formatData(answer, inv.globals.output);
  return `${done[name]} ${ref.namespace}/${ref.name}: ${colors.bold(answer.phase)}${answer.message ? ` — ${answer.message}` : ''}`;
}

/** Runs a control as an update; a refusal becomes `refused: <why>` (exit 1). */
async function send(handle: WorkflowHandle, control: ControlName, request: AnyControlRequest): Promise<RolloutStatus> {
  const update = updates[control] as UpdateDefinition<RolloutStatus, [AnyControlRequest]>;
  try {
    return await handle.executeUpdate(update, { args: [request], updateId: request.requestId });
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError)
      throw new CliError(`refused: ${refusalReason(control, err.cause?.message ?? err.message)}`, ExitCode.Failed);
    throw err;
  }
}

/** `alice (kube context kind-dev)`: the OS user, and the kube context in use if there is one. */
export function identity(session: Session): string {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (a container with an arbitrary UID)
  }
  let context: string | undefined;
  try {
    context = session.kube().context;
  } catch {
    // an unreadable kubeconfig names no context
  }
  return context ? `${user} (kube context ${context})` : user;
}

/** Runs `items` through `fn`, at most `limit` at once, keeping their order. */
async function mapLimited<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}

/** Runs the CLI as a program: prints the answer or the error, and returns the exit code. */
export async function run(argv: string[] = process.argv.slice(2), io: Partial<CliIo> = {}): Promise<number> {
  const stdout = io.stdout ?? process.stdout;
  try {
    const out = await main(argv, io);
    if (out) stdout.write(`${out}\n`);
    return ExitCode.Ok;
  } catch (err) {
    process.stderr.write(`${err instanceof CliError ? '' : 'error: '}${errorMessage(err)}\n`);
    return exitCodeOf(err);
  }
}

/** Exits once stdout has taken everything (a pipe may still be writing). */
export function exitWith(code: number): void {
  process.stdout.write('', () => process.exit(code));
}

// `tsx cli/main.ts …` and `node dist/cli/main.js …` (the bins import this module and call run themselves).
if (/[\\/]cli[\\/]main\.[jt]s$/.test(process.argv[1] ?? '')) {
  void run().then(exitWith);
}
