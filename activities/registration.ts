/**
 * The wait for a version's registration: polls the server (with backoff, heartbeating) until the version's workers
 * poll, and says whether unversioned workers serve its queues.
 */
import { randomUUID } from 'node:crypto';
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { CancelledFailure, Client, type Connection } from '@temporalio/client';
import proto from '@temporalio/proto';
import { limitCheckAfterMs } from '../api/timings.js';
import { classifyTemporalError, workerDeploymentLimit } from '../temporal/errors.js';
import type { TemporalConnections, TemporalTarget } from '../temporal/connections.js';
import {
  describeDeploymentSettled,
  describeVersionSettled,
  refusedPollDelay,
  registrationPollDelay,
} from '../temporal/describe.js';
import { serverFeatures } from '../temporal/server-version.js';
import { heartbeating } from './heartbeats.js';
import { routingOf } from './routing.js';

const { temporal } = proto; // a CommonJS module: no named exports under ESM

/** What the registration wait's heartbeats carry: the last check's refusal, if the server refused it. */
export interface RegistrationCheck {
  lastCheckFailure?: string;
}

/** A registered version: its task queues, and whether unversioned workers still poll them. */
export interface VersionRegistration {
  /** Every task queue the version polls (workflow and activity). */
  taskQueues: string[];
  /** Its workflow task queues only: a gate (a workflow) is never started on an activity-only queue. */
  workflowTaskQueues: string[];
  unversionedPollers: boolean;
}

/**
 * Runs `fn`'s calls on `connection` so that the activity's cancellation aborts them, and fails as cancelled then (an
 * aborted call fails with CANCELLED). The signal is `fn`'s own: the SDK leaves a listener on the signal for each
 * call, which on the activity's own signal would pile up over an hour of describes.
 */
async function cancellableCalls<T>(connection: Connection, ctx: Context, fn: () => Promise<T>): Promise<T> {
  const own = new AbortController();
  const abort = () => own.abort();
  ctx.cancellationSignal.addEventListener('abort', abort, { once: true });
  try {
    return await connection.withAbortSignal(own.signal, fn);
  } catch (err) {
    if (ctx.cancellationSignal.aborted)
      throw new CancelledFailure('the activity was cancelled', [], err instanceof Error ? err : undefined);
    throw err;
  } finally {
    ctx.cancellationSignal.removeEventListener('abort', abort);
  }
}

/** Whether executions without a deployment version started on any of the queues within the last week. */
async function unversionedWorkSeen(connection: Connection, t: TemporalTarget, queues: string[]): Promise<boolean> {
  const client = new Client({ connection, namespace: t.temporalNamespace });
  const since = new Date(Date.now() - 7 * 24 * 3_600_000).toISOString();
  for (const queue of queues) {
    const { count } = await client.workflow.count(
      `TaskQueue = "${queue}" AND TemporalWorkerDeploymentVersion IS NULL AND StartTime > "${since}"`,
    );
    if (count > 0) return true;
  }
  return false;
}

/**
 * Asks the server to add the version (and its worker deployment, for a first version), as the workers' first poll
 * would: a server at a limit refuses the workers' polls, which only their logs show, and refuses this with the limit
 * named. At the version cap the server first deletes its oldest drained version without pollers, as it would for the
 * workers' poll. A version that exists already is no error. Throws the limit, explained; nothing else.
 */
async function checkLimits(connection: Connection, t: TemporalTarget, buildId: string, identity: string) {
  const svc = connection.workflowService;
  const { temporalNamespace: namespace, deploymentName } = t;

  try {
    if (!(await describeDeploymentSettled(svc, namespace, deploymentName)))
      await svc.createWorkerDeployment({ namespace, deploymentName, identity, requestId: randomUUID() });
    await svc.createWorkerDeploymentVersion({
      namespace,
      deploymentVersion: { deploymentName, buildId },
      identity,
      requestId: randomUUID(),
    });
  } catch (err) {
    const limit = workerDeploymentLimit(err);
    if (limit)
      throw ApplicationFailure.retryable(`the server cannot add ${buildId}: ${limit}`, 'WorkerDeploymentLimit');
    // Anything else (the workers registered it meanwhile, a busy server, a key that may not create) is for the
    // describes to see; said once in the log.
    log.info('the limit check of a version was refused', { deploymentName, buildId, error: String(err) });
  }
}

export function createRegistrationActivities(connections: TemporalConnections, identity: string) {
  return {
    /**
     * Polls (with backoff, heartbeating) until the version is registered: its workers poll a workflow task
     * queue and, for up to `coverageWaitMs` more, every task queue the current version has (the server refuses
     * to route to a version that would leave one of those queues unversioned). The backoff ends at 2 s, later while
     * the server answers slowly (`registrationPollDelay`): a new version's first ramp takes the server ≈ 2 s after
     * its registration anyway.
     */
    async awaitVersionRegistered(
      t: TemporalTarget,
      buildId: string,
      coverageWaitMs = 30_000,
      limitCheckMs = limitCheckAfterMs,
    ): Promise<VersionRegistration> {
      const startedAt = Date.now();
      const connection = await connections.get(t);
      const svc = connection.workflowService;
      const ctx = Context.current();
      const queueKey = (q: { name?: string | null; type?: number | null }) => `${q.type}/${q.name}`;
      const isWorkflowQueue = (q: { type?: number | null }) =>
        q.type === temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW;
      // Heartbeats go out while the server answers, a busy one after up to 30 s (an attempt timed out meanwhile
      // would only add a new one's describes), not for a call that hangs: that attempt times out.
      let answeredAt = Date.now();
      const answered = () => void (answeredAt = Date.now());
      const sleep = (ms: number) => (answered(), ctx.sleep(ms));
      const describeVersion = (b: string, o = { sleep }) =>
        describeVersionSettled(svc, t.temporalNamespace, t.deploymentName, b, o);
      // A cancellation (a new target, a deletion) also ends the calls in flight, which a busy server answers late.
      const round = <R>(fn: () => Promise<R>) => cancellableCalls(connection, ctx, fn);
      let refusals = 0;
      // What the heartbeats carry: the last check's refusal (the previous attempt's at first), until an answer. At the
      // progress deadline the workflow says it instead of blaming the workers (it reads the timeout's heartbeat).
      let check: RegistrationCheck = (ctx.info.heartbeatDetails as RegistrationCheck | undefined) ?? {};
      /**
       * The version's task queues; `undefined` when a busy server refused (deadline exceeded, unavailable): a slow
       * answer, asked again later. The third in a row is thrown: the attempt fails and the retry
       * policy takes over.
       */
      const versionQueues = async (o: { sleep: typeof sleep }) => {
        try {
          const queues = (await round(() => describeVersion(buildId, o)))?.versionTaskQueues ?? [];
          refusals = 0;
          check = {};
          return queues;
        } catch (err) {
          if (classifyTemporalError(err)?.kind !== 'transient') throw err;
          check = { lastCheckFailure: err instanceof Error ? err.message : String(err) };
          if (++refusals >= 3) throw err;
          return undefined;
        }
      };
      /**
       * One read of the version's queues, and how long the server took to answer it: not the waits of a read through
       * its continue-as-new window (a version that just registered is in that window, and the server is not slow for
       * it).
       */
      const readVersion = async () => {
        const asked = Date.now();
        let waited = 0;
        const found = await versionQueues({ sleep: (ms) => ((waited += ms), sleep(ms)) });
        answered();
        return { found, answerMs: Date.now() - asked - waited };
      };
      let registeredAt: number | undefined;
      // Servers from 1.32 name their limits; older ones are not asked.
      let limitsChecked = !(await serverFeatures(connection)).namedLimits;
      return heartbeating(
        ctx,
        () => Date.now() - answeredAt < 60_000,
        async () => {
          // The version is read at once, beside what it must cover: a new version's first describes wait on the
          // server's own workflows, which it starts as the version registers.
          let next = readVersion();
          next.catch(() => undefined); // its failure is met where it is awaited, or goes with the attempt's
          const current = routingOf(
            await round(() => describeDeploymentSettled(svc, t.temporalNamespace, t.deploymentName)),
          ).current;
          const required =
            current && current !== buildId
              ? ((await round(() => describeVersion(current)))?.versionTaskQueues ?? []).map(queueKey)
              : [];
          for (let delay: number | undefined; ;) {
            const { found, answerMs } = await next;
            delay = found ? registrationPollDelay(delay, answerMs) : refusedPollDelay;
            const queues = found ?? [];
            const workflowQueues = queues.filter(isWorkflowQueue);
            if (workflowQueues.length > 0) {
              registeredAt ??= Date.now();
              const have = new Set(queues.map(queueKey));
              if (required.every((k) => have.has(k)) || Date.now() - registeredAt > coverageWaitMs) {
                const registration = {
                  taskQueues: [...new Set(queues.map((q) => q.name ?? ''))],
                  workflowTaskQueues: [...new Set(workflowQueues.map((q) => q.name ?? ''))],
                };
                // Unversioned workers matter only to a first version (whether to ramp onto it or make it current at
                // once): with a current version they are not asked about, and the rollout moves at once.
                if (current) return { ...registration, unversionedPollers: false };
                let unversionedPollers = false;
                for (const q of workflowQueues) {
                  const tq = await round(() =>
                    svc.describeTaskQueue({
                      namespace: t.temporalNamespace,
                      taskQueue: { name: q.name, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
                      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
                    }),
                  );
                  if ((tq.pollers ?? []).some((p) => !p.deploymentOptions?.buildId)) unversionedPollers = true;
                }
                // The poller list forgets an idle long-polling worker after `matching.PollerHistoryTTL`: unversioned
                // executions on the queue in the last week say as well that unversioned workers serve it.
                if (!unversionedPollers)
                  unversionedPollers = await round(() =>
                    unversionedWorkSeen(
                      connection,
                      t,
                      workflowQueues.map((q) => q.name ?? ''),
                    ),
                  );
                return { ...registration, unversionedPollers };
              }
            }
            if (!limitsChecked && registeredAt === undefined && Date.now() - startedAt >= limitCheckMs) {
              limitsChecked = true;
              await round(() => checkLimits(connection, t, buildId, identity));
            }
            await ctx.sleep(delay);
            next = readVersion();
          }
        },
        { details: () => check, startedAt },
      );
    },
  };
}
