/**
 * The CLI's connections, opened when a command first needs them and closed once: the controller's Temporal
 * (where RolloutWorkflows run), Kubernetes (resources, and the Secrets of TemporalConnections), and the workers'
 * Temporal servers the TemporalConnections name (where the executions open on each version are counted).
 */
import * as k8s from '@kubernetes/client-node';
import { Client, Connection, isGrpcServiceError, type WorkflowHandle } from '@temporalio/client';
import { group, version } from '../api/common.js';
import { resourceKinds, type ResourceKind } from '../api/kinds.js';
import { workerDeploymentName } from '../api/names.js';
import { ignoreNotFound } from '../kube/client.js';
import { pinnedRunningOn } from '../temporal/pinned.js';
import { TemporalConnections, type TemporalTarget } from '../temporal/connections.js';
import { status as statusQuery } from '../workflows/messages.js';
import type { RolloutStatus, TemporalPlace } from '../workflows/state.js';
import {
  kubeSettings,
  temporalSettings,
  type KubeFlags,
  type KubeSettings,
  type ResourceRef,
  type TemporalFlags,
  type TemporalSettings,
} from './config.js';
import { CliError, ExitCode, exitCodeOf, findCause } from './exit-codes.js';
import { versionPlaces } from './view.js';

export type SessionFlags = KubeFlags & TemporalFlags;

/** A resource as Kubernetes lists it, with the phase its status says (shown when its rollout cannot be read). */
export interface ListedResource extends ResourceRef {
  phase?: string;
}

/** How long a rollout workflow may take to answer a query (a worker answers in milliseconds; none: never). */
const queryTimeoutMs = 10_000;
/** Updates answer once the control took effect, within 20 s (workflows/handlers.ts), or at once when refused. */
export const updateTimeoutMs = 45_000;

/** gRPC DEADLINE_EXCEEDED, anywhere in the causes. */
const isDeadlineExceeded = (err: unknown) => findCause(err, (e) => isGrpcServiceError(e) && e.code === 4) !== undefined;

/** How long a worker's Temporal may take to answer a count before the column shows `?`. */
const countTimeoutMs = 5_000;

/** Where a resource's RolloutWorkflow runs, as its status says (the workflow writes it there). */
export interface RolloutWorkflowRef {
  workflowId: string;
  temporalNamespace: string;
}

export class Session {
  private temporal?: Promise<{ connection: Connection; client: Client }>;
  private namespaced = new Map<string, Client>();
  private kubeLoaded?: KubeSettings;
  private workerConnections?: TemporalConnections;
  readonly temporalConfig: TemporalSettings;

  constructor(readonly flags: SessionFlags) {
    this.temporalConfig = temporalSettings(flags);
  }

  /** The kubeconfig, loaded on first use (a command that needs no cluster needs no kubeconfig). */
  kube(): KubeSettings {
    this.kubeLoaded ??= kubeSettings(this.flags);
    return this.kubeLoaded;
  }

  /**
   * Whether Kubernetes lets the caller patch the resource (a SelfSubjectAccessReview, of either kind): a control
   * needs the right its annotation needs. Temporal records whatever identity a client claims, so this is the check.
   */
  async mayControl(ref: ResourceRef): Promise<boolean> {
    const auth = this.kube().kc.makeApiClient(k8s.AuthorizationV1Api);
    for (const resource of Object.values(resourceKinds).map((k) => k.plural)) {
      const review = await auth.createSelfSubjectAccessReview({
        body: {
          spec: { resourceAttributes: { group, resource, verb: 'patch', namespace: ref.namespace, name: ref.name } },
        },
      });
      if (review.status?.allowed) return true;
    }
    return false;
  }

  /** The controller's Temporal; a failure to connect says where it tried. */
  async client(): Promise<Client> {
    this.temporal ??= (async () => {
      const { connection: options, namespace, describe } = this.temporalConfig;
      let connection: Connection;
      try {
        connection = await Connection.connect({ connectTimeout: '5s', ...options });
      } catch (err) {
        throw new CliError(
          `cannot connect to Temporal at ${describe}: ${(err as Error).message}`,
          ExitCode.CannotConnect,
        );
      }
      return { connection, client: new Client({ connection, namespace }) };
    })();
    this.temporal.catch(() => {
      this.temporal = undefined; // the next call tries again (a watch outlives a Temporal restart)
    });
    return (await this.temporal).client;
  }

  /** A client of the controller's Temporal in another of its namespaces (the one a resource's status names). */
  private async clientIn(temporalNamespace: string): Promise<Client> {
    const client = await this.client();
    if (temporalNamespace === client.options.namespace) return client;
    let other = this.namespaced.get(temporalNamespace);
    if (!other)
      this.namespaced.set(
        temporalNamespace,
        (other = new Client({ connection: client.connection, namespace: temporalNamespace })),
      );
    return other;
  }

  /**
   * The resource's RolloutWorkflow as its status names it (an installation ID is in the workflow ID, so it is
   * read, never built from the namespace and name). `NotFound` when there is no such resource or no workflow yet.
   */
  async rolloutWorkflow(ref: ResourceRef): Promise<RolloutWorkflowRef> {
    const custom = this.kube().kc.makeApiClient(k8s.CustomObjectsApi);
    let found = false;
    for (const kind of ['TemporalWorkerDeployment', 'WorkerDeployment'] as const) {
      let obj: { status?: { rolloutWorkflow?: Partial<RolloutWorkflowRef> } } | undefined;
      try {
        obj = (await ignoreNotFound(
          custom.getNamespacedCustomObject({
            group,
            version,
            namespace: ref.namespace,
            plural: resourceKinds[kind].plural,
            name: ref.name,
          }),
        )) as typeof obj;
      } catch (err) {
        if (exitCodeOf(err) === ExitCode.CannotConnect)
          throw new CliError(
            `cannot read ${ref.namespace}/${ref.name} from Kubernetes: ${(err as Error).message}`,
            ExitCode.CannotConnect,
          );
        throw err;
      }
      if (!obj) continue;
      found = true;
      // Of two kinds under one name, the one the controller rolls out says so (the other is refused).
      const { workflowId, temporalNamespace } = obj.status?.rolloutWorkflow ?? {};
      if (workflowId && temporalNamespace) return { workflowId, temporalNamespace };
    }
    if (found)
      throw new CliError(
        `${ref.namespace}/${ref.name}: its status names no rollout workflow yet (status.rolloutWorkflow); is the Glidepath controller running?`,
        ExitCode.NotFound,
      );
    throw new CliError(
      `${ref.namespace}/${ref.name}: no TemporalWorkerDeployment or WorkerDeployment of that name`,
      ExitCode.NotFound,
    );
  }

  /**
   * A call on the resource's RolloutWorkflow (a query, or an update: those answer within 20 s by design). No such
   * workflow is `NotFound`, saying where it looked; no answer by the deadline means no controller runs it.
   */
  async query<T>(ref: ResourceRef, call: (h: WorkflowHandle) => Promise<T>, timeoutMs = queryTimeoutMs): Promise<T> {
    const workflow = await this.rolloutWorkflow(ref);
    const client = await this.clientIn(workflow.temporalNamespace);
    const handle = client.workflow.getHandle(workflow.workflowId);
    try {
      return await client.withDeadline(Date.now() + timeoutMs, () => call(handle));
    } catch (err) {
      if (exitCodeOf(err) === ExitCode.NotFound) throw this.notFound(ref, workflow);
      if (isDeadlineExceeded(err)) {
        throw new CliError(
          `${ref.namespace}/${ref.name}: its rollout workflow did not answer within ${timeoutMs / 1000}s; is the Glidepath controller running against Temporal at ${this.temporalConfig.describe}?`,
          ExitCode.CannotConnect,
        );
      }
      throw err;
    }
  }

  notFound(ref: ResourceRef, workflow: RolloutWorkflowRef): CliError {
    return new CliError(
      `${ref.namespace}/${ref.name}: no rollout (workflow ${workflow.workflowId} not found in namespace ${workflow.temporalNamespace} of Temporal at ${this.temporalConfig.describe}); ` +
        'is the controller running against this Temporal?',
      ExitCode.NotFound,
    );
  }

  /** The rollout's status, with the ID of the workflow that answered. */
  status(ref: ResourceRef): Promise<RolloutStatus & { workflowId: string }> {
    return this.query(ref, async (h) => ({ ...(await h.query(statusQuery)), workflowId: h.workflowId }));
  }

  /**
   * Executions open on each version the status names, counted in the Temporal that version lives in (the
   * resource's TemporalConnection, with its Secrets read through the kubeconfig). One that cannot be counted
   * (no access to the Secret, the server unreachable) is `null`: the view shows `?`, the rest goes on.
   */
  async openExecutions(ref: ResourceRef, status: RolloutStatus): Promise<Record<string, number | null>> {
    const open: Record<string, number | null> = {};
    await Promise.all(
      versionPlaces(status).map(async ({ buildId, place }) => {
        open[buildId] = place ? await this.countOpen(ref, place, buildId).catch(() => null) : null;
      }),
    );
    return open;
  }

  private async countOpen(ref: ResourceRef, place: TemporalPlace, buildId: string): Promise<number> {
    const target: TemporalTarget = {
      connection: place.connection,
      k8sNamespace: ref.namespace,
      temporalNamespace: place.temporalNamespace,
      deploymentName: workerDeploymentName(ref.namespace, ref.name),
    };
    const connection = await this.workers().get(target);
    // A deadline: a worker's Temporal that does not answer costs a `?`, not a hung status.
    const { count } = await withTimeout(
      connection.workflowService.countWorkflowExecutions({
        namespace: place.temporalNamespace,
        query: pinnedRunningOn(target, buildId),
      }),
      countTimeoutMs,
    );
    return Number(count ?? 0);
  }

  private workers(): TemporalConnections {
    this.workerConnections ??= new TemporalConnections(
      async (namespace, name) => {
        const core = this.kube().kc.makeApiClient(k8s.CoreV1Api);
        const secret = await ignoreNotFound(core.readNamespacedSecret({ name, namespace }));
        if (!secret) return undefined;
        return Object.fromEntries(
          Object.entries(secret.data ?? {}).map(([key, value]) => [key, Buffer.from(value, 'base64')]),
        );
      },
      {
        connect: (options) =>
          withTimeout(Connection.connect({ ...options, connectTimeout: countTimeoutMs }), countTimeoutMs),
      },
    );
    return this.workerConnections;
  }

  /** The TemporalWorkerDeployments and WorkerDeployments of the namespace in use, or of every namespace. */
  async resources(allNamespaces: boolean): Promise<ListedResource[]> {
    const { kc, namespace } = this.kube();
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    type Listed = { items?: { metadata?: { namespace?: string; name?: string }; status?: { phase?: string } }[] };
    const where = kc.getCurrentCluster()?.server ?? 'the cluster';
    const listOf = async (kind: ResourceKind): Promise<Listed> => {
      const plural = resourceKinds[kind].plural;
      try {
        return (
          allNamespaces
            ? await custom.listClusterCustomObject({ group, version, plural })
            : await custom.listNamespacedCustomObject({ group, version, namespace, plural })
        ) as Listed;
      } catch (err) {
        const code = exitCodeOf(err);
        if (code === ExitCode.CannotConnect)
          throw new CliError(`cannot list ${kind}s at ${where}: ${(err as Error).message}`, code);
        // An install from before WorkerDeployments has only the older kind.
        if (code === ExitCode.NotFound && kind === 'WorkerDeployment') return {};
        if (code === ExitCode.NotFound)
          throw new CliError(`no ${kind} kind at ${where}: are Glidepath's CRDs installed?`, code);
        throw err;
      }
    };
    const lists = await Promise.all((['TemporalWorkerDeployment', 'WorkerDeployment'] as const).map(listOf));
    return lists
      .flatMap((list) => list.items ?? [])
      .map((o) => ({
        namespace: o.metadata?.namespace ?? namespace,
        name: o.metadata?.name ?? '',
        ...(o.status?.phase ? { phase: o.status.phase } : {}),
      }))
      .filter((r) => r.name)
      .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  }

  async close(): Promise<void> {
    const temporal = this.temporal;
    this.temporal = undefined;
    await Promise.all([
      temporal?.then((t) => t.connection.close()).catch(() => {}),
      this.workerConnections?.closeAll(),
    ]);
  }
}

/** Rejects when `promise` takes longer than `ms` (the timer does not keep the process alive). */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}
