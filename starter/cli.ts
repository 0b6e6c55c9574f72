/**
 * `npm run glidepath -- <command> <namespace>/<name> [...]`: talk to a resource's RolloutWorkflow.
 *
 *   status  NS/NAME              the rollout as the workflow sees it
 *   pause   NS/NAME [REASON]     hold the rollout (a running pause timer stops counting)
 *   resume  NS/NAME
 *   promote NS/NAME [--full]     end the step waiting for promotion (--full: make the target current now)
 *   abort   NS/NAME [REASON]     stop: the target gets no new work and is sunset
 *   list                         every rollout with its phase and builds
 *
 * Uses TEMPORAL_ADDRESS / TEMPORAL_NAMESPACE (as `.dev/env.sh` sets them). The same signals work with plain
 * `temporal workflow signal --workflow-id glidepath/NS/NAME --name pause`.
 */
import { Client, Connection } from '@temporalio/client';
import { rolloutWorkflowId } from '../api/names.js';
import { abort, pause, promote, resume, status } from '../workflows/messages.js';

const usage = 'usage: glidepath status|pause|resume|promote|abort <namespace>/<name> [reason] [--full] | glidepath list';

export async function main(argv: string[]): Promise<string> {
  const [command, target, ...rest] = argv;
  const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
  const client = new Client({ connection, namespace: process.env.TEMPORAL_NAMESPACE ?? 'default' });
  try {
    if (command === 'list') {
      const lines: string[] = [];
      for await (const wf of client.workflow.list({ query: `WorkflowType = 'RolloutWorkflow' AND ExecutionStatus = 'Running'` })) {
        const sa = wf.searchAttributes as Record<string, unknown[] | undefined>;
        lines.push(`${wf.workflowId}\t${sa.GlidepathPhase?.[0] ?? ''}\tcurrent=${sa.GlidepathCurrentBuild?.[0] ?? ''}\ttarget=${sa.GlidepathTargetBuild?.[0] ?? ''}`);
      }
      return lines.join('\n') || 'no rollouts running';
    }
    const match = /^([a-z0-9-]+)\/([a-z0-9-]+)$/.exec(target ?? '');
    if (!command || !match) throw new Error(usage);
    const handle = client.workflow.getHandle(rolloutWorkflowId(match[1]!, match[2]!));
    const reason = rest.filter((a) => !a.startsWith('--')).join(' ') || undefined;
    /** Sends a control, then reports a refusal if the workflow refused it (a signal has no answer of its own). */
    const control = async (send: () => Promise<void>, done: string) => {
      const before = (await handle.query(status)).refused?.count ?? 0;
      await send();
      for (let i = 0; i < 15; i++) {
        const after = await handle.query(status);
        if ((after.refused?.count ?? 0) > before) throw new Error(`refused: ${after.refused?.last?.why ?? 'see kubectl describe'}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      return done;
    };
    // Promote and abort name the build they mean: one that a newer build superseded meanwhile is refused.
    const targetBuild = async () => (await handle.query(status)).target?.buildId;
    switch (command) {
      case 'status':
        return JSON.stringify(await handle.query(status), null, 2);
      case 'pause':
        await handle.signal(pause, { reason });
        return `paused ${target}`;
      case 'resume':
        await handle.signal(resume);
        return `resumed ${target}`;
      case 'promote': {
        const buildId = await targetBuild();
        return await control(() => handle.signal(promote, { full: rest.includes('--full'), buildId }), `promoted ${target} ${buildId ?? ''}${rest.includes('--full') ? ' (full)' : ''}`);
      }
      case 'abort': {
        const buildId = await targetBuild();
        return await control(() => handle.signal(abort, { reason, buildId }), `aborted ${target} ${buildId ?? ''}`);
      }
      default:
        throw new Error(`unknown command "${command}"\n${usage}`);
    }
  } finally {
    await connection.close();
  }
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
