/**
 * A light simulated pod: the least a versioned worker does for Temporal to register and route its version. It
 * long-polls the pod's workflow task queue with the version's deployment options and completes every workflow
 * task it gets at once (one COMPLETE_WORKFLOW_EXECUTION command, PINNED), so a tiny workflow started there
 * completes. No activity task queue, no sticky queue, no workflow code: a thousand of them fit in one process,
 * where a thousand real workers (each with its own native connection and worker threads) do not.
 *
 * Light pods share the long-lived gRPC connections of a `LightPodConnections`: one HTTP/2 connection carries
 * many long polls, and a few per address spread them.
 */
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection, isGrpcServiceError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { defaultTaskQueue } from '../examples/worker/worker.js';

const { temporal } = proto; // a CommonJS module: no named exports under ESM

/** Longer than the server's long poll (a minute), so an idle poll ends with an empty answer, not a client deadline. */
const pollDeadlineMs = 70_000;
/** Backoff after a failed poll or completion (a server restart, an unknown namespace): no spinning. */
const backoff = { initialMs: 200, maxMs: 10_000 };

/** The gRPC connections light pods share: `perAddress` of them per Temporal address, handed out in turn. */
export class LightPodConnections {
  private readonly pools = new Map<string, { connections: Connection[]; next: number }>();

  constructor(private readonly perAddress = 4) {}

  get(address: string): Connection {
    let pool = this.pools.get(address);
    if (!pool) {
      // Lazy: nothing is dialled until a pod polls, and a server that is down now is dialled again later. No retry
      // interceptor: the pod's loop retries with its own backoff, and `stop()` cancels a call that is retrying.
      pool = {
        connections: Array.from({ length: this.perAddress }, () => Connection.lazy({ address, interceptors: [] })),
        next: 0,
      };
      this.pools.set(address, pool);
    }
    const connection = pool.connections[pool.next % pool.connections.length]!;
    pool.next++;
    return connection;
  }

  /** Closes every connection (stop the pods first). */
  async close(): Promise<void> {
    const connections = [...this.pools.values()].flatMap((p) => p.connections);
    this.pools.clear();
    await Promise.allSettled(connections.map((c) => c.close()));
  }
}

function required(env: Record<string, string | undefined>, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`${name} is not set; a Glidepath-managed pod always has it`);
  return value;
}

let podsStarted = 0;

export class LightPod {
  readonly namespace: string;
  readonly taskQueue: string;
  readonly deploymentName: string;
  readonly buildId: string;
  readonly identity: string;
  /** Workflow tasks completed so far. */
  completed = 0;
  private readonly connection: Connection;
  private readonly deploymentOptions: proto.temporal.api.deployment.v1.IWorkerDeploymentOptions;
  private readonly abort = new AbortController();
  private readonly running: Promise<void>;

  /** Starts polling at once; `stop()` ends it. */
  constructor(
    env: Record<string, string | undefined>,
    connections: LightPodConnections,
    private readonly log: (message: string) => void = () => {},
  ) {
    this.namespace = required(env, 'TEMPORAL_NAMESPACE');
    this.taskQueue = env.EXAMPLE_TASK_QUEUE ?? defaultTaskQueue;
    this.deploymentName = required(env, 'TEMPORAL_DEPLOYMENT_NAME');
    this.buildId = required(env, 'TEMPORAL_WORKER_BUILD_ID');
    this.identity = `light-pod-${++podsStarted}@${hostname()}/${process.pid}`;
    this.connection = connections.get(required(env, 'TEMPORAL_ADDRESS'));
    this.deploymentOptions = {
      deploymentName: this.deploymentName,
      buildId: this.buildId,
      workerVersioningMode: temporal.api.enums.v1.WorkerVersioningMode.WORKER_VERSIONING_MODE_VERSIONED,
    };
    this.running = this.pollLoop();
  }

  /** Cancels the outstanding poll and resolves once the loop has ended. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  private async pollLoop(): Promise<void> {
    let delayMs = 0;
    while (!this.stopped) {
      const started = Date.now();
      try {
        const task = await this.call(pollDeadlineMs, () =>
          this.connection.workflowService.pollWorkflowTaskQueue({
            namespace: this.namespace,
            taskQueue: { name: this.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
            identity: this.identity,
            deploymentOptions: this.deploymentOptions,
          }),
        );
        if (task.taskToken?.length) {
          await this.answer(task);
          delayMs = 0;
        } else if (Date.now() - started < 1000) {
          // An empty answer is the long poll expiring; one this early means the server is not holding polls.
          delayMs = nextDelay(delayMs);
        } else {
          delayMs = 0;
        }
      } catch (err) {
        if (this.stopped) break;
        delayMs = nextDelay(delayMs);
        this.log(`light pod ${this.deploymentName}:${this.buildId}: ${errorText(err)}; polling again in ${delayMs} ms`);
      }
      if (delayMs > 0) await sleep(delayMs, undefined, { signal: this.abort.signal }).catch(() => {});
    }
  }

  /** Completes the workflow (the whole tiny workflow is one task); a legacy query gets a failed answer. */
  private async answer(task: proto.temporal.api.workflowservice.v1.IPollWorkflowTaskQueueResponse): Promise<void> {
    const svc = this.connection.workflowService;
    if (task.query) {
      await this.call(10_000, () =>
        svc.respondQueryTaskCompleted({
          namespace: this.namespace,
          taskToken: task.taskToken,
          completedType: temporal.api.enums.v1.QueryResultType.QUERY_RESULT_TYPE_FAILED,
          errorMessage: 'a light pod answers no queries',
        }),
      );
      return;
    }
    await this.call(10_000, () =>
      svc.respondWorkflowTaskCompleted({
        namespace: this.namespace,
        taskToken: task.taskToken,
        identity: this.identity,
        commands: [
          {
            commandType: temporal.api.enums.v1.CommandType.COMMAND_TYPE_COMPLETE_WORKFLOW_EXECUTION,
            completeWorkflowExecutionCommandAttributes: {},
          },
        ],
        deploymentOptions: this.deploymentOptions,
        versioningBehavior: temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED,
      }),
    );
    this.completed++;
  }

  /** One RPC with a deadline, cancelled by `stop()`. */
  private call<T>(deadlineMs: number, fn: () => Promise<T>): Promise<T> {
    return this.connection.withAbortSignal(this.abort.signal, () =>
      this.connection.withDeadline(Date.now() + deadlineMs, fn),
    );
  }
}

function nextDelay(previousMs: number): number {
  const base = previousMs === 0 ? backoff.initialMs : Math.min(previousMs * 2, backoff.maxMs);
  return Math.round(base * (0.8 + Math.random() * 0.4)); // jitter: pods that failed together do not retry together
}

function errorText(err: unknown): string {
  if (isGrpcServiceError(err)) return `${err.code}: ${err.details}`;
  return err instanceof Error ? err.message : String(err);
}
