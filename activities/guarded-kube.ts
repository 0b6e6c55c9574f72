/**
 * The Kubernetes activities as RolloutWorkflow (or anyone who can schedule on its queues) calls them: each takes the
 * resource's reference and a build ID, reads the resource from the apiserver (./authority.ts), and only then calls
 * the adapter with what it read: the spec, the connection, the build's pod template (the spec's for the build the
 * spec declares; for another, the one its own Deployment records). Taking pods away is decided on Temporal's word,
 * read just before: never on the caller's.
 */
import type { Owner } from '../api/resource.js';
import { PodTemplate } from '../api/temporal-worker-deployment.js';
import { isDrained } from '../api/version-status.js';
import type { ResourceRead, ResourceReads } from '../kube/read-resource.js';
import { Labels, podTemplateAnnotation } from '../kube/versioned-deployment.js';
import type { VersionStatus } from '../api/rollout-status.js';
import type { TemporalTarget } from '../temporal/connections.js';
import { mustBeDrained, refused, type Authority, type Authorized } from './authority.js';
import type { KubernetesActivities } from './kubernetes.js';
import type { Report, KubeEvent } from './resource-writes.js';
import type { TemporalWorkerDeploymentStatus } from '../api/rollout-status.js';

/** A build's Deployment to apply: the spec's settings and connection, the build's own template. */
export interface DeploymentRequest {
  owner: Owner;
  buildId: string;
}

export function createGuardedKubeActivities(
  raw: KubernetesActivities & ResourceReads,
  authority: Authority,
  installation: string,
  versionStatus: (t: TemporalTarget, buildId: string) => Promise<VersionStatus>,
) {
  /** The build's pod template: the spec's for its build, else the one the build's own Deployment records. */
  async function templateOf(a: Authorized, buildId: string): Promise<PodTemplate> {
    if (buildId === a.desired.buildId) return a.desired.spec.template;
    for (const d of await authority.deploymentsOf(a, buildId)) {
      const recorded = d.metadata?.annotations?.[podTemplateAnnotation];
      const parsed = recorded === undefined ? undefined : PodTemplate.safeParse(safeJson(recorded));
      if (parsed?.success) return parsed.data;
    }
    throw refused(
      'undeclared-build',
      `${buildId} is not the build ${a.owner.namespace}/${a.owner.name} declares, and no Deployment of its own records its template`,
    );
  }

  const applyRequest = async (a: Authorized, buildId: string) => ({
    owner: a.owner,
    desired: a.desired,
    buildId,
    template: await templateOf(a, buildId),
  });

  return {
    /** The authority read itself; a resource this installation has not claimed is not described. */
    async readResource(owner: Owner): Promise<ResourceRead> {
      const read = await raw.readResource(owner);
      if (!read.found || read.claimedBy === installation) return read;
      const { desired: _hidden, ...rest } = read;
      return rest;
    },
    findSuccessor: raw.findSuccessor,

    async readDeployment(owner: Owner, buildId: string) {
      const a = await authority.resource(owner);
      return raw.readDeployment(a.owner, buildId);
    },

    async ensureVersionedDeployment(request: DeploymentRequest) {
      const a = await authority.resource(request.owner);
      return raw.ensureVersionedDeployment(await applyRequest(a, request.buildId));
    },

    async adoptOrApplyDeployment(request: DeploymentRequest) {
      const a = await authority.resource(request.owner);
      return raw.adoptOrApplyDeployment(await applyRequest(a, request.buildId));
    },

    async adoptForeignDeployments(request: { owner: Owner }) {
      const a = await authority.resource(request.owner);
      return raw.adoptForeignDeployments({ owner: a.owner, template: a.desired.spec.template });
    },

    async updateAdoptedDeployment(request: DeploymentRequest) {
      const a = await authority.resource(request.owner);
      return raw.updateAdoptedDeployment({ owner: a.owner, desired: a.desired, buildId: request.buildId });
    },

    /**
     * Heals and recreates the live versions' Deployments. Fewer replicas than the spec's (a sunset's 0) only for a
     * version Temporal says is retired.
     */
    async reconcileDeployments(request: {
      owner: Owner;
      versions: { buildId: string; replicas: number; heal?: boolean }[];
    }) {
      const a = await authority.resource(request.owner);
      const versions = [];
      for (const v of request.versions) {
        const replicas = Math.min(v.replicas, a.desired.spec.replicas);
        if (replicas < a.desired.spec.replicas)
          mustBeDrained(await versionStatus(a, v.buildId), v.buildId, `keeping ${v.buildId} at ${replicas}`);
        versions.push({
          buildId: v.buildId,
          replicas,
          template: await templateOf(a, v.buildId),
          ...(v.heal ? { heal: true } : {}),
        });
      }
      return raw.reconcileDeployments({ owner: a.owner, desired: a.desired, versions });
    },

    /** Scales a retired version to 0 (a sunset): never a version Temporal still routes to or pins work on. */
    async scaleDeployment(owner: Owner, buildId: string, replicas: number) {
      const a = await authority.resource(owner);
      if (replicas !== 0) throw refused('malformed', `a version is only scaled to 0 (asked ${replicas})`);
      mustBeDrained(await versionStatus(a, buildId), buildId, `scaling ${buildId} to 0`);
      return raw.scaleDeployment(a.owner, buildId, 0);
    },

    /**
     * Deletes a retired version's Deployment (a sunset's last step). One scaled to 0 with no pods left takes no
     * workers away: only one that has them asks Temporal whether the version is retired.
     */
    async deleteDeployment(owner: Owner, buildId: string) {
      const a = await authority.resource(owner);
      const own = await authority.deploymentsOf(a, buildId);
      if (own.some((d) => (d.spec?.replicas ?? 1) > 0 || (d.status?.replicas ?? 0) > 0))
        mustBeDrained(await versionStatus(a, buildId), buildId, `deleting the Deployment of ${buildId}`);
      return raw.deleteDeployment(a.owner, buildId);
    },

    /**
     * The stray sweep, which never takes a build Temporal reports as current, ramping or draining (or with pinned
     * work open), nor the spec's: whatever the caller counts as live.
     */
    async removeStrayDeployments(owner: Owner, liveBuildIds: string[], seenWithPods: string[]) {
      const a = await authority.resource(owner);
      const live = new Set([...liveBuildIds, a.desired.buildId]);
      for (const d of await authority.deploymentsOf(a, undefined)) {
        const buildId = d.metadata?.labels?.[Labels.buildId] ?? '';
        if (!live.has(buildId) && !isDrained(await versionStatus(a, buildId))) live.add(buildId);
      }
      return raw.removeStrayDeployments(a.owner, [...live], seenWithPods);
    },

    /** Scales every Deployment of the resource: its deletion only. */
    async scaleOwnedDeployments(owner: Owner, replicas: number) {
      return raw.scaleOwnedDeployments(await authority.deletion(owner, 'scaling every Deployment'), replicas);
    },

    /** Deletes every Deployment of the resource: its deletion only. */
    async deleteOwnedDeployments(owner: Owner) {
      return raw.deleteOwnedDeployments(await authority.deletion(owner, 'deleting every Deployment'));
    },

    /** Drops the finalizer: the resource's deletion only. */
    async removeFinalizer(owner: Owner) {
      return raw.removeFinalizer(await authority.deletion(owner, 'removing the finalizer'));
    },

    /** Status and Events: of the resource while it is there (a report of one gone says so: false). */
    async writeStatus(owner: Owner, status: TemporalWorkerDeploymentStatus) {
      const present = await authority.present(owner);
      return present ? raw.writeStatus(present, status) : false;
    },

    async recordEvent(owner: Owner, event: KubeEvent) {
      const present = await authority.present(owner);
      if (present) await raw.recordEvent(present, event);
    },

    async report(owner: Owner, report: Report) {
      const present = await authority.present(owner);
      return present ? raw.report(present, report) : false;
    },
  };
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export type GuardedKubeActivities = ReturnType<typeof createGuardedKubeActivities>;
