/**
 * What the watcher says on a resource itself: a condition in its status and a Warning Event for a spec it cannot hand
 * to a workflow, and a Normal Event when another installation rolls the resource out. Each is said once per
 * generation and message (the watcher's own status write comes back as an update event).
 */
import type * as k8s from '@kubernetes/client-node';
import { apiVersion } from '../api/common.js';
import type { ResourceKind } from '../api/kinds.js';
import { finalizer, installationAnnotation } from '../api/names.js';
import type { KubernetesActivities } from '../activities/kubernetes.js';
import { asApply, ignoreNotFound } from '../kube/client.js';
import { addressOf } from './raw-resource.js';
import type { SpecChangedHint } from '../workflows/messages.js';
import type { Resource } from './informers.js';
import type { RolloutSignals } from './workflow-signals.js';

/** What the reports need of the watcher. */
export interface ReportsHost {
  custom: k8s.CustomObjectsApi;
  kube: KubernetesActivities;
  signals: RolloutSignals;
  installation: string;
  /** The field manager of the watcher's status writes. */
  fieldManager: string;
  kindOf(obj: Resource): ResourceKind;
  log(message: string, fields?: Record<string, unknown>): void;
}

export class ResourceReports {
  /** The condition and the Event the watcher last wrote on each resource, by uid. */
  private readonly reported = new Map<string, string>();
  private readonly warned = new Map<string, string>();

  constructor(private readonly w: ReportsHost) {}

  /** The resource is gone: nothing said on it is remembered. */
  forget(uid: string): void {
    this.reported.delete(uid);
    this.warned.delete(uid);
  }

  /** Another installation (`holder`) rolls the resource out: said once, in an Event (Normal: the rule is working). */
  async claimedElsewhere(obj: Resource, holder: string): Promise<void> {
    const meta = obj.metadata!;
    const said = `elsewhere/${holder}`;
    if (this.warned.get(meta.uid!) !== said && !meta.deletionTimestamp) {
      const message = `installation ${holder} rolls out this resource (annotation ${installationAnnotation}); installation ${this.w.installation} leaves it alone`;
      await this.w.kube.recordEvent(
        { namespace: meta.namespace!, name: meta.name!, uid: meta.uid!, kind: this.w.kindOf(obj) },
        { type: 'Normal', reason: 'ManagedByAnotherInstallation', message },
      );
      this.warned.set(meta.uid!, said);
      this.w.log(message, { resource: `${meta.namespace}/${meta.name}` });
    }
  }

  /**
   * A spec the watcher cannot hand to a workflow: a condition on the resource and a Warning Event. No build to hand
   * over. The Event does not wait for the status write: kube-apiserver can refuse that for good (a CEL rule that fails
   * on a value stored under an older CRD is not ratcheted), and the failed write is then retried on its own.
   */
  async reportProblem(obj: Resource, phase: string, reason: string, message: string): Promise<undefined> {
    const meta = obj.metadata!;
    const said = `${reason}/${meta.generation}/${message}`;
    let statusFailure: unknown;
    if (this.reported.get(meta.uid!) !== said) {
      try {
        await this.writeCondition(obj, phase, reason, message);
        this.reported.set(meta.uid!, said);
      } catch (err) {
        statusFailure = err ?? new Error('status write failed');
      }
    }
    if (this.warned.get(meta.uid!) !== said) {
      await this.w.kube.recordEvent(
        { namespace: meta.namespace!, name: meta.name!, uid: meta.uid!, kind: this.w.kindOf(obj) },
        { type: 'Warning', reason, message },
      );
      this.warned.set(meta.uid!, said);
      await this.wakeHandedOver(obj); // a failure is retried without a second Event
    }
    if (statusFailure) throw statusFailure;
    return undefined;
  }

  /**
   * The problem is gone and the workflow has the spec: apply the watcher's status without phase, message and
   * conditions, so server-side apply drops those the workflow has not written since (it owns the rest).
   */
  async releaseProblem(obj: Resource): Promise<void> {
    await this.applyStatus(obj, { observedGeneration: obj.metadata!.generation });
    this.reported.delete(obj.metadata!.uid!);
    this.w.log("cleared the watcher's condition", { namespace: obj.metadata!.namespace, name: obj.metadata!.name });
  }

  /**
   * A workflow that has the resource reads it (a wake-up, never a start): it then says the problem in its own status
   * writes instead of writing over the watcher's condition.
   */
  private async wakeHandedOver(obj: Resource): Promise<void> {
    const meta = obj.metadata!;
    if (!meta.finalizers?.includes(finalizer)) return;
    const hint: SpecChangedHint = {
      uid: meta.uid!,
      kind: this.w.kindOf(obj),
      generation: meta.generation ?? 0,
      resourceVersion: meta.resourceVersion ?? '',
      connectionVersion: '',
    };
    await this.w.signals.wake(meta.namespace!, meta.name!, hint);
  }

  private async writeCondition(obj: Resource, phase: string, reason: string, message: string): Promise<void> {
    const meta = obj.metadata!;
    const at = new Date().toISOString();
    const cond = (type: string) => ({
      type,
      status: 'False',
      reason,
      message,
      lastTransitionTime: at,
      observedGeneration: meta.generation,
    });
    await this.applyStatus(obj, {
      phase,
      message,
      observedGeneration: meta.generation,
      conditions: [cond('Ready'), cond('Progressing')],
    });
  }

  private async applyStatus(obj: Resource, status: Record<string, unknown>): Promise<void> {
    const meta = obj.metadata!;
    await ignoreNotFound(
      this.w.custom.patchNamespacedCustomObjectStatus(
        {
          ...addressOf(obj, this.w.fieldManager),
          force: true,
          body: {
            apiVersion,
            kind: this.w.kindOf(obj),
            metadata: { name: meta.name, namespace: meta.namespace },
            status,
          },
        },
        asApply,
      ),
    );
  }
}
