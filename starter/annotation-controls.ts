/**
 * Control annotations (`glidepath.dev/promote` …, ./annotations.ts) run as updates to the resource's workflow, in
 * the order they were set, then removed. Each runs as work of its own: an update waits for the workflow to answer.
 */
import type * as k8s from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import type { ResourceKind } from '../api/kinds.js';
import { addressOf } from './raw-resource.js';
import { rolloutWorkflowId } from '../api/names.js';
import type { KubernetesActivities } from '../activities/kubernetes.js';
import { statusCode } from '../kube/client.js';
import { updates, type AbortRequest, type PromoteRequest, type RollbackRequest } from '../workflows/messages.js';
import type { RolloutStatus } from '../workflows/state.js';
import {
  annotationIdentity,
  annotationRequestId,
  annotationSetter,
  controlsOf,
  inSetOrder,
  refusalReason,
  removalPatch,
  type AnnotatedControl,
} from './annotations.js';
import type { Resource } from './informers.js';
import type { RetryScheduler } from './retry-scheduler.js';

/** Every control's request in one type, so one call sends any of them. */
type AnyControlRequest = PromoteRequest & AbortRequest & RollbackRequest;

/** One setting of a control annotation, as this watcher saw it. */
interface Sighting {
  /** The resourceVersion it was first seen at (the requestId's fallback when managedFields do not say). */
  resourceVersion: string;
  /** The requestId once the workflow answered (taken or refused): only the removal is left. */
  done?: string;
}

/** What the controls need of the watcher. */
export interface ControlsHost {
  retry: RetryScheduler;
  custom: k8s.CustomObjectsApi;
  kube: KubernetesActivities;
  client: Client;
  installation: string;
  /** The field manager of the annotation's removal. */
  fieldManager: string;
  kindOf(obj: Resource): ResourceKind;
  /** The object as the cache has it now. */
  latest(obj: Resource): Resource;
  log(message: string, fields?: Record<string, unknown>): void;
}

export class AnnotationControls {
  /** Per resource UID, the control annotations set on it now, by `key=value`. */
  private readonly sightings = new Map<string, Map<string, Sighting>>();

  constructor(private readonly w: ControlsHost) {}

  /** The resource is gone: nothing of it is remembered. */
  forget(uid: string): void {
    this.sightings.delete(uid);
  }

  /**
   * Runs the resource's control annotations, one after the other, as work of their own: an update waits for the
   * workflow to answer, and must not hold up the resource's specs meanwhile.
   */
  schedule(obj: Resource, buildId: string | undefined): void {
    const m = obj.metadata!;
    const controls = controlsOf(m.annotations);
    const before = this.sightings.get(m.uid!);
    if (!controls.length) return void this.sightings.delete(m.uid!);
    // Only the settings there now are remembered: one removed and set again is seen anew.
    const now = new Map(
      controls.map((c) => [
        `${c.key}=${c.value}`,
        before?.get(`${c.key}=${c.value}`) ?? { resourceVersion: m.resourceVersion ?? '' },
      ]),
    );
    this.sightings.set(m.uid!, now);
    this.w.retry.schedule(`controls ${m.namespace}/${m.name} (${m.uid})`, async () => {
      const latest = this.w.latest(obj);
      const meta = latest.metadata ?? {};
      const seen = (c: AnnotatedControl) => this.sightings.get(meta.uid!)?.get(`${c.key}=${c.value}`)?.resourceVersion;
      for (const c of inSetOrder(controlsOf(meta.annotations), seen, (c) =>
        annotationSetter(meta.managedFields, c.key),
      ))
        await this.runControl(latest, c, buildId);
    });
  }

  /**
   * One control annotation: the update (unless the workflow answered it already), a Warning Event if refused,
   * then the annotation's removal. A transport failure throws, and the scheduler retries with the annotation kept.
   */
  private async runControl(obj: Resource, c: AnnotatedControl, buildId: string | undefined): Promise<void> {
    const meta = obj.metadata!;
    const sighting = this.sightings.get(meta.uid!)?.get(`${c.key}=${c.value}`);
    if (!sighting) return; // gone meanwhile
    const setter = annotationSetter(meta.managedFields, c.key);
    const requestId = annotationRequestId(meta.uid!, c, setter, sighting.resourceVersion);
    if (sighting.done !== requestId) {
      // promote, abort and retry name the spec's build: meant for a build that is no longer the one in question
      // (a newer spec superseded it), they are refused instead of acting on another build.
      const named =
        buildId && (c.control === 'promote' || c.control === 'abort' || c.control === 'retry') ? { buildId } : {};
      const request: AnyControlRequest = { ...c.request, ...named, identity: annotationIdentity(setter), requestId };
      const refusal = await this.sendControl(obj, c, request);
      if (refusal) {
        const owner = { namespace: meta.namespace!, name: meta.name!, uid: meta.uid!, kind: this.w.kindOf(obj) };
        await this.w.kube.recordEvent(owner, {
          type: 'Warning',
          reason: 'ControlRefused',
          message: `${c.key}=${c.value} refused: ${refusal}`,
        });
      }
      sighting.done = requestId;
    }
    await this.removeAnnotation(obj, c);
  }

  /** The update; the workflow's refusal if it refused. */
  private async sendControl(
    obj: Resource,
    c: AnnotatedControl,
    request: AnyControlRequest,
  ): Promise<string | undefined> {
    const workflowId = rolloutWorkflowId(this.w.installation, obj.metadata!.namespace!, obj.metadata!.name!);
    const update = updates[c.control] as UpdateDefinition<RolloutStatus, [AnyControlRequest]>;
    try {
      // The requestId is also the update ID: the server answers a re-send within the run with the first result.
      const status = await this.w.client.workflow
        .getHandle(workflowId)
        .executeUpdate(update, { args: [request], updateId: request.requestId });
      this.w.log(`${c.key} done`, { workflowId, phase: status.phase, identity: request.identity });
      return undefined;
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) return refusalReason(c.control, err.cause?.message ?? err.message);
      if (err instanceof WorkflowNotFoundError) return 'no rollout workflow runs for this resource';
      throw err;
    }
  }

  /** Removes the annotation only while it still has the value just run: a newer value is a control of its own. */
  private async removeAnnotation(obj: Resource, c: AnnotatedControl): Promise<void> {
    try {
      await this.w.custom.patchNamespacedCustomObject({
        ...addressOf(obj, this.w.fieldManager),
        body: removalPatch(c.key, c.value),
      });
    } catch (err) {
      // 404: the resource is gone; 422: the `test` failed, the annotation was removed or changed meanwhile.
      if (statusCode(err) !== 404 && statusCode(err) !== 422) throw err;
    }
  }
}
