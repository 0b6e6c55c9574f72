/**
 * Kubernetes activities: thin adapters over the API, no decisions. Each is idempotent, so the retry policy
 * of the workflow is the only retry mechanism.
 */
import * as k8s from '@kubernetes/client-node';
import { apiVersion, group, version } from '../api/common.js';
import { pluralOf } from '../api/kinds.js';
import { finalizer, versionedDeploymentName } from '../api/names.js';
import type { PodTemplate } from '../api/temporal-worker-deployment.js';
import type { TemporalWorkerDeploymentStatus } from '../api/rollout-status.js';
import type { DeploymentObservation, Desired, Owner } from '../api/resource.js';
import { classifyKubernetesError, describeFailure } from './errors.js';
import { logWarning } from './log.js';
import { asApply, asMergePatch, ignoreNotFound, statusCode, withinAttempt } from '../kube/client.js';
import {
  ForeignLabels,
  adoptionPatch,
  isForeignVersionOf,
  sameUserTemplate,
  templateCheckDeployment,
  type RawDeployment,
} from '../kube/foreign-deployments.js';
import {
  Labels,
  isOwnedBy,
  managerName,
  observeDeployment,
  renderVersionedDeployment,
} from '../kube/versioned-deployment.js';
import { gateInputReader, type GateInputSource } from '../kube/gate-input.js';

export interface EnsureDeploymentInput {
  owner: Owner;
  desired: Desired;
  buildId: string;
  /** The build's own pod template (the desired spec's is another build's unless this is the desired build). */
  template: PodTemplate;
  replicas?: number;
}

/** A version temporal-worker-controller made, now the resource's (adoptForeignDeployments). */
export interface ForeignVersion {
  buildId: string;
  /** Its Deployment's name, the other controller's naming (not necessarily `versionedDeploymentName`). */
  deploymentName: string;
  /** Its pod template is the spec's template unchanged (defaults and injected env aside). */
  matchesTemplate: boolean;
  /**
   * Why the template could not be judged (the dry run that gives the apiserver's defaults was refused): every
   * version is then taken as changed. Absent when it was judged.
   */
  templateUnchecked?: string;
  replicas: number;
  availableReplicas: number;
}

export interface KubeEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** Unique to this Event (the workflow's run ID and a count): its name, so recording it again is a no-op. */
  id?: string;
}

/** A status write and the Events recorded with it (`report`); the status is absent when it did not change. */
export interface Report {
  status?: TemporalWorkerDeploymentStatus;
  events: KubeEvent[];
}

export function createKubernetesActivities(kc: k8s.KubeConfig) {
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const selectorOf = (owner: Owner) => `${Labels.workerDeployment}=${owner.name},${Labels.managedBy}=${managerName}`;
  const readGateInput = gateInputReader(core);
  /** The resource's Deployments: of this incarnation only (the name may have had an owner before). */
  const ownedDeployments = async (owner: Owner) =>
    (
      await apps.listNamespacedDeployment({ namespace: owner.namespace, labelSelector: selectorOf(owner) })
    ).items.filter((d) => isOwnedBy(d, owner));
  /**
   * A build's Deployments of this incarnation, by their labels (one adopted from temporal-worker-controller keeps
   * that controller's name). Only these are scaled, updated or deleted: never one found by name alone.
   */
  const deploymentsOfBuild = async (
    owner: Owner,
    buildId: string,
  ): Promise<{ name: string; found: k8s.V1Deployment }[]> => {
    const labelSelector = `${Labels.workerDeployment}=${owner.name},${Labels.buildId}=${buildId}`;
    const found = (await apps.listNamespacedDeployment({ namespace: owner.namespace, labelSelector })).items.filter(
      (d) => isOwnedBy(d, owner),
    );
    return found.map((d) => ({ name: d.metadata!.name!, found: d }));
  };
  const resourceApi = (owner: Owner) => ({
    group,
    version,
    namespace: owner.namespace,
    plural: pluralOf(owner.kind),
    name: owner.name,
  });
  /** apps/v1 Deployments as raw JSON (CustomObjectsApi takes any group): a typed client would drop fields it does not know. */
  const deploymentsApi = (namespace: string) => ({ group: 'apps', version: 'v1', namespace, plural: 'deployments' });

  /** Server-side applies a build's Deployment; `leaveReplicas`: without them (another manager holds them); `dryRun`: only says what it would be. */
  async function apply(
    input: EnsureDeploymentInput,
    opts: { leaveReplicas?: boolean; dryRun?: boolean } = {},
  ): Promise<k8s.V1Deployment> {
    const body = renderVersionedDeployment({
      owner: input.owner,
      spec: { ...input.desired.spec, template: input.template },
      connection: input.desired.connection,
      buildId: input.buildId,
      replicas: input.replicas,
    });
    if (opts.leaveReplicas) delete body.spec!.replicas;
    return apps.patchNamespacedDeployment(
      {
        name: body.metadata!.name!,
        namespace: input.owner.namespace,
        body,
        fieldManager: managerName,
        force: true,
        ...(opts.dryRun ? { dryRun: 'All' } : {}),
      },
      asApply,
    );
  }

  /** Writes the whole status with server-side apply (see writeStatus); says whether the resource is there, gone or replaced. */
  async function applyStatus(
    owner: Owner,
    status: TemporalWorkerDeploymentStatus,
  ): Promise<'written' | 'gone' | 'replaced'> {
    const metadata = { name: owner.name, namespace: owner.namespace, uid: owner.uid };
    const body = { apiVersion, kind: owner.kind ?? 'TemporalWorkerDeployment', metadata, status };
    try {
      await custom.patchNamespacedCustomObjectStatus(
        { ...resourceApi(owner), body, fieldManager: managerName, force: true },
        withinAttempt(asApply),
      );
      return 'written';
    } catch (err) {
      const code = statusCode(err);
      if (code === 409) {
        logWarning(
          `writeStatus ${owner.namespace}/${owner.name}: not written, the object is another one now (uid ${owner.uid} is gone)`,
        );
        return 'replaced';
      }
      if (code === 404) return 'gone';
      throw err;
    }
  }

  const activities = {
    /** Server-side applies the versioned Deployment of a build; returns what it looks like now. */
    async ensureVersionedDeployment(input: EnsureDeploymentInput): Promise<DeploymentObservation> {
      return observeDeployment(await apply(input));
    },

    /** Reads the versioned Deployment of a build (read-only). */
    async readDeployment(owner: Owner, buildId: string): Promise<DeploymentObservation> {
      const name = versionedDeploymentName(owner.name, buildId);
      const d = await ignoreNotFound(apps.readNamespacedDeployment({ name, namespace: owner.namespace }));
      if (d) return observeDeployment(d);
      // Not under our name: adopted from temporal-worker-controller, under its name.
      const adopted = (await deploymentsOfBuild(owner, buildId))[0]?.found;
      return adopted ? observeDeployment(adopted) : { buildId, name, exists: false };
    },

    /**
     * Brings the live versions' Deployments back to what they should be: recreates a missing one, and re-applies one
     * marked `heal` (the current and target: a draining version keeps the spec it had) whose fields Glidepath sets
     * were changed by hand, found by a server-side dry run (no write when nothing drifted).
     * Fields another manager holds are left to it (a scaler's replicas); so is a Deployment of the same name that
     * another incarnation of the resource owns (its garbage collection is due). Returns the names recreated and healed.
     */
    async reconcileDeployments(input: {
      owner: Owner;
      desired: Desired;
      versions: { buildId: string; replicas: number; template: PodTemplate; heal?: boolean }[];
    }): Promise<{ recreated: string[]; healed: string[] }> {
      const recreated: string[] = [];
      const healed: string[] = [];
      for (const v of input.versions) {
        const name = versionedDeploymentName(input.owner.name, v.buildId);
        const existing = await ignoreNotFound(
          apps.readNamespacedDeployment({ name, namespace: input.owner.namespace }),
        );
        const wanted = {
          owner: input.owner,
          desired: input.desired,
          buildId: v.buildId,
          template: v.template,
          replicas: v.replicas,
        };
        if (existing && !isOwnedBy(existing, input.owner)) continue;
        if (!existing || existing.metadata?.deletionTimestamp) {
          await apply(wanted);
          recreated.push(name);
          continue;
        }
        if (!v.heal) continue;
        const leaveReplicas = replicasHeldByAnother(existing);
        // A dry run an admission webhook refuses (or a quota) leaves this one as it is: the others are still reconciled.
        const would = await apply(wanted, { leaveReplicas, dryRun: true }).catch((err: unknown) => {
          logWarning(`reconcile ${name}: the dry run was refused, not healed: ${(err as Error).message}`);
          return undefined;
        });
        if (
          !would ||
          JSON.stringify([would.spec, would.metadata?.labels]) ===
            JSON.stringify([existing.spec, existing.metadata?.labels])
        )
          continue;
        await apply(wanted, { leaveReplicas });
        healed.push(name);
      }
      return { recreated, healed };
    },

    async scaleDeployment(owner: Owner, buildId: string, replicas: number): Promise<void> {
      for (const { name } of await deploymentsOfBuild(owner, buildId)) {
        await ignoreNotFound(
          apps.patchNamespacedDeploymentScale(
            { name, namespace: owner.namespace, body: { spec: { replicas } }, fieldManager: managerName },
            asMergePatch,
          ),
        );
      }
    },

    async deleteDeployment(owner: Owner, buildId: string): Promise<void> {
      for (const { name } of await deploymentsOfBuild(owner, buildId))
        await ignoreNotFound(apps.deleteNamespacedDeployment({ name, namespace: owner.namespace }));
    },

    /**
     * Takes over the versioned Deployments temporal-worker-controller made for this resource's worker deployment
     * (its labels, its names, pods polling as `<namespace>/<name>`): Glidepath's labels and owner reference instead
     * of the other controller's, nothing else touched (the pods keep running). Says of each whether its pod
     * template is `template` unchanged, judged against a server-side dry run of `template` (see
     * foreign-deployments.ts). Idempotent: a Deployment adopted already is reported again, not patched again.
     */
    async adoptForeignDeployments(input: { owner: Owner; template: PodTemplate }): Promise<ForeignVersion[]> {
      const { owner } = input;
      const labelSelector = `${ForeignLabels.deploymentName}=${owner.name},${ForeignLabels.buildId}`;
      const list = (await custom.listNamespacedCustomObject({ ...deploymentsApi(owner.namespace), labelSelector })) as {
        items: RawDeployment[];
      };
      const foreign = list.items.filter((d) => isForeignVersionOf(d, owner));
      if (!foreign.length) return [];
      let defaulted: unknown;
      let unchecked: string | undefined;
      try {
        const dryRun = (await custom.createNamespacedCustomObject({
          ...deploymentsApi(owner.namespace),
          body: templateCheckDeployment(owner, input.template),
          dryRun: 'All',
        })) as RawDeployment;
        defaulted = dryRun.spec?.template;
      } catch (err) {
        const code = statusCode(err);
        if (code === undefined || code >= 500 || code === 429) throw err;
        // Refused (no right to create Deployments, a webhook, a quota): no template can be judged unchanged.
        unchecked = describeFailure(err, { namespace: owner.namespace });
        logWarning(
          `adopt ${owner.namespace}/${owner.name}: the template could not be checked (${unchecked}); its versions are adopted as changed`,
        );
      }
      const versions: ForeignVersion[] = [];
      for (const d of foreign) {
        const buildId = d.metadata!.labels![ForeignLabels.buildId]!;
        const name = d.metadata!.name!;
        const patch = adoptionPatch(d, owner, buildId);
        if (patch)
          await ignoreNotFound(
            custom.patchNamespacedCustomObject({ ...deploymentsApi(owner.namespace), name, body: patch }, asMergePatch),
          );
        versions.push({
          buildId,
          deploymentName: name,
          matchesTemplate: defaulted !== undefined && sameUserTemplate(d.spec?.template, defaulted),
          ...(unchecked !== undefined ? { templateUnchecked: unchecked } : {}),
          replicas: d.spec?.replicas ?? 1,
          availableReplicas: d.status?.availableReplicas ?? 0,
        });
      }
      return versions;
    },

    /**
     * A new resource's first round: adopts temporal-worker-controller's Deployments of its worker
     * deployment (adoptForeignDeployments); only when there are none, applies the build's Deployment
     * (ensureVersionedDeployment). One activity instead of two in a row: the Deployment someone just applied the
     * resource for comes a workflow task sooner.
     */
    async adoptOrApplyDeployment(
      input: EnsureDeploymentInput,
    ): Promise<{ adopted: ForeignVersion[]; applied?: DeploymentObservation }> {
      const adopted = await activities.adoptForeignDeployments({ owner: input.owner, template: input.template });
      return adopted.length ? { adopted } : { adopted, applied: await activities.ensureVersionedDeployment(input) };
    },

    /**
     * The spec's Deployment settings on an adopted Deployment (its template stays the other controller's rendering:
     * a new template is a new build). Returns what it looks like now.
     */
    async updateAdoptedDeployment(input: {
      owner: Owner;
      desired: Desired;
      buildId: string;
      replicas?: number;
    }): Promise<DeploymentObservation> {
      const { owner, desired, buildId } = input;
      const { spec } = desired;
      const body = {
        spec: {
          replicas: input.replicas ?? spec.replicas,
          minReadySeconds: spec.minReadySeconds,
          progressDeadlineSeconds: spec.progressDeadlineSeconds,
          ...(spec.revisionHistoryLimit !== undefined ? { revisionHistoryLimit: spec.revisionHistoryLimit } : {}),
          ...(spec.strategy !== undefined ? { strategy: spec.strategy } : {}),
        },
      };
      for (const { name } of await deploymentsOfBuild(owner, buildId)) {
        const d = await ignoreNotFound(
          apps.patchNamespacedDeployment({ name, namespace: owner.namespace, body }, asMergePatch),
        );
        if (d) return observeDeployment(d);
      }
      return { buildId, name: versionedDeploymentName(owner.name, buildId), exists: false };
    },

    async scaleOwnedDeployments(owner: Owner, replicas: number): Promise<void> {
      for (const d of await ownedDeployments(owner)) {
        await ignoreNotFound(
          apps.patchNamespacedDeploymentScale(
            {
              name: d.metadata!.name!,
              namespace: owner.namespace,
              body: { spec: { replicas } },
              fieldManager: managerName,
            },
            asMergePatch,
          ),
        );
      }
    },

    /** Deletes the resource's Deployments of builds not in `liveBuildIds` that are scaled to 0; returns their names. */
    async deleteStrayDeployments(owner: Owner, liveBuildIds: string[]): Promise<string[]> {
      const strays = (await ownedDeployments(owner)).filter(
        (d) => !liveBuildIds.includes(d.metadata?.labels?.[Labels.buildId] ?? '') && (d.spec?.replicas ?? 0) === 0,
      );
      for (const d of strays)
        await ignoreNotFound(apps.deleteNamespacedDeployment({ name: d.metadata!.name!, namespace: owner.namespace }));
      return strays.map((d) => d.metadata!.name!);
    },

    /** Deletes every Deployment of the resource (no garbage collector is assumed). */
    async deleteOwnedDeployments(owner: Owner): Promise<void> {
      for (const d of await ownedDeployments(owner))
        await ignoreNotFound(apps.deleteNamespacedDeployment({ name: d.metadata!.name!, namespace: owner.namespace }));
    },

    /**
     * Writes the whole status with server-side apply, so fields no longer set are removed. The body's uid is a
     * precondition: a new object under the same name refuses it (409), and like a deleted one (404) it is not ours
     * to report on. Returns false when the resource is gone (404, or another object under its name).
     */
    async writeStatus(owner: Owner, status: TemporalWorkerDeploymentStatus): Promise<boolean> {
      return (await applyStatus(owner, status)) === 'written';
    },

    /**
     * Records a core/v1 Event on the resource (what `kubectl describe twd` shows). Best effort and never
     * throws: Events are advisory (client-go's recorder drops them too), and a terminating namespace or an
     * Events quota must not hold up a rollout or a deletion. An Event with an `id` has a name of its own, so one
     * recorded already (a retried report) is not recorded twice.
     */
    async recordEvent(owner: Owner, event: KubeEvent): Promise<void> {
      const at = new Date();
      try {
        await core.createNamespacedEvent({
          namespace: owner.namespace,
          body: {
            metadata: {
              ...(event.id ? { name: `${owner.name}.${event.id}` } : { generateName: `${owner.name}.` }),
              namespace: owner.namespace,
            },
            involvedObject: {
              apiVersion,
              kind: owner.kind ?? 'TemporalWorkerDeployment',
              name: owner.name,
              namespace: owner.namespace,
              uid: owner.uid,
            },
            type: event.type,
            reason: event.reason,
            message: event.message,
            source: { component: managerName },
            reportingComponent: managerName,
            firstTimestamp: at,
            lastTimestamp: at,
            count: 1,
          },
        });
      } catch (err) {
        if (event.id && statusCode(err) === 409) return; // recorded by an earlier attempt
        logWarning(
          `recordEvent ${owner.namespace}/${owner.name} ${event.reason}: dropped (${describeFailure(err, { namespace: owner.namespace })})`,
        );
      }
    },

    /**
     * What a transition reports, in one activity (one task instead of one per write): the status if it changed,
     * then the Events (after, so a status write that is retried does not record them twice). A status refused for
     * good (RBAC, validation) does not hold the Events back: they go out, then the refusal is thrown. Events name
     * the object by uid, so those of a deleted resource are still recorded (as `CleanupIncomplete` must be), but not
     * onto another object under its name. Returns false when the resource is gone, as writeStatus does.
     */
    async report(owner: Owner, report: Report): Promise<boolean> {
      const recordAll = async () => {
        for (const event of report.events) await activities.recordEvent(owner, event);
      };
      let outcome: Awaited<ReturnType<typeof applyStatus>> = 'written';
      if (report.status) {
        try {
          outcome = await applyStatus(owner, report.status);
        } catch (err) {
          if (classifyKubernetesError(err)?.kind === 'permanent') await recordAll();
          throw err;
        }
      }
      if (outcome === 'replaced') {
        if (report.events.length)
          logWarning(
            `report ${owner.namespace}/${owner.name}: ${report.events.length} Events not recorded, the object is another one now`,
          );
      } else await recordAll();
      return outcome === 'written';
    },

    /**
     * Reads a gate's JSON input from a ConfigMap or Secret key. RolloutWorkflow no longer calls it (runGate reads
     * the input itself, so a Secret stays out of the history); registered for histories that still schedule it.
     */
    async readGateInput(namespace: string, source: GateInputSource): Promise<unknown> {
      return readGateInput(namespace, source);
    },

    /** Drops our finalizer, so Kubernetes can delete the resource (not from a new object under the same name). */
    async removeFinalizer(owner: Owner): Promise<void> {
      const current = (await ignoreNotFound(custom.getNamespacedCustomObject(resourceApi(owner)))) as
        k8s.KubernetesObject | undefined;
      if (current?.metadata?.uid !== owner.uid) return;
      if (!current.metadata.finalizers?.includes(finalizer)) return;
      const finalizers = current.metadata.finalizers.filter((f) => f !== finalizer);
      await ignoreNotFound(
        custom.patchNamespacedCustomObject(
          {
            ...resourceApi(owner),
            body: { metadata: { finalizers, resourceVersion: current.metadata.resourceVersion } },
          },
          asMergePatch,
        ),
      );
    },
  };
  return activities;
}

export type KubernetesActivities = ReturnType<typeof createKubernetesActivities>;

/** Whether a manager other than Glidepath holds `spec.replicas` (a scaler, `kubectl scale`): then it is theirs. */
function replicasHeldByAnother(d: k8s.V1Deployment): boolean {
  return (d.metadata?.managedFields ?? []).some((m) => {
    const spec = (m.fieldsV1 as Record<string, Record<string, unknown> | undefined> | undefined)?.['f:spec'];
    return m.manager !== managerName && spec !== undefined && 'f:replicas' in spec;
  });
}
