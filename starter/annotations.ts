/**
 * One-shot control annotations, for whoever can reach the cluster but not Temporal (GitOps users):
 * `kubectl annotate twd foo glidepath.dev/promote=full`. The watcher runs each as an update on the resource's
 * RolloutWorkflow and then removes it. This module is the pure part: which controls the annotations ask for,
 * who set them, and the requestId that makes a re-send after a watcher restart one control.
 */
import type * as k8s from '@kubernetes/client-node';
import { shortHash } from '../api/names.js';
import type { ControlName } from '../workflows/messages.js';

export const annotationPrefix = 'glidepath.dev/';

/**
 * The controls an annotation may ask for. Several run in the order they were set (see `inSetOrder`); those set at
 * once (one `kubectl annotate` or `apply`) in this order: what makes the rollout go first (retry, resume, promote),
 * then what holds or stops it (pause, abort, rollback).
 */
export const annotationControls = [
  'retry',
  'resume',
  'promote',
  'pause',
  'abort',
  'rollback',
] as const satisfies readonly ControlName[];
export type AnnotationControl = (typeof annotationControls)[number];

/** The arguments an annotation's value carries (the watcher adds identity, requestId and the build). */
export interface AnnotatedRequest {
  reason?: string;
  /** promote: `full`. */
  full?: boolean;
  /** rollback: `to=<buildId>`. */
  toBuildId?: string;
}

/** A control asked for by an annotation on the resource. */
export interface AnnotatedControl {
  control: AnnotationControl;
  /** The annotation, e.g. `glidepath.dev/promote`. */
  key: string;
  /** Its value as set. */
  value: string;
  request: AnnotatedRequest;
}

/**
 * The value's arguments. promote: `full` (optionally followed by a reason) or a reason; rollback: `to=<buildId>`
 * (optionally followed by a reason) or a reason; every other control: the reason.
 *
 * @example
 * parseValue('promote', 'full'); // { full: true }
 * parseValue('rollback', 'to=1.4.2-3fa9c01b77d2 p99 latency'); // { toBuildId: '1.4.2-3fa9c01b77d2', reason: 'p99 latency' }
 */
export function parseValue(control: AnnotationControl, value: string): AnnotatedRequest {
  let rest = value.trim();
  const request: AnnotatedRequest = {};
  if (control === 'promote') {
    const m = /^full(?:\s+|$)(.*)$/s.exec(rest);
    if (m) [request.full, rest] = [true, m[1]!];
  }
  if (control === 'rollback') {
    const m = /^to=(\S+)(?:\s+|$)(.*)$/s.exec(rest);
    if (m) [request.toBuildId, rest] = [m[1]!, m[2]!];
  }
  if (rest) request.reason = rest;
  return request;
}

/**
 * The controls the annotations ask for, in run order. Other `glidepath.dev/*` keys are not controls and are
 * ignored (so are unknown ones: a typo must not act).
 */
export function controlsOf(annotations: Record<string, string> | undefined): AnnotatedControl[] {
  const out: AnnotatedControl[] = [];
  for (const control of annotationControls) {
    const key = annotationPrefix + control;
    const value = annotations?.[key];
    if (value !== undefined) out.push({ control, key, value, request: parseValue(control, value) });
  }
  return out;
}

/**
 * The controls in the order they were set: by the resourceVersion the watcher first saw each at, then by when its
 * setter last wrote (`setter`: managedFields, second precision, so it tells managers apart), then the fixed order.
 */
export function inSetOrder(
  controls: AnnotatedControl[],
  seenAt: (c: AnnotatedControl) => string | undefined,
  setter: (c: AnnotatedControl) => Setter | undefined,
): AnnotatedControl[] {
  const rv = (c: AnnotatedControl) => {
    const n = Number(seenAt(c));
    return Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER;
  };
  const time = (c: AnnotatedControl) => Date.parse(setter(c)?.time ?? '') || 0;
  const fixed = (c: AnnotatedControl) => annotationControls.indexOf(c.control);
  return [...controls].sort((a, b) => rv(a) - rv(b) || time(a) - time(b) || fixed(a) - fixed(b));
}

/** Who last set an annotation, read off `metadata.managedFields`. */
export interface Setter {
  manager: string;
  /** When that manager last changed the object (second precision). */
  time?: string;
}

/**
 * The field manager that owns annotation `key` (the newest, if several co-own it): `kubectl-annotate` for
 * `kubectl annotate`, `kubectl-client-side-apply` or `kubectl` for `kubectl apply`, `argocd-controller` …
 */
export function annotationSetter(
  managedFields: k8s.V1ManagedFieldsEntry[] | undefined,
  key: string,
): Setter | undefined {
  const owners = (managedFields ?? []).filter((entry) => {
    const annotations = (
      entry.fieldsV1 as Record<string, Record<string, Record<string, unknown>> | undefined> | undefined
    )?.['f:metadata']?.['f:annotations'];
    return !entry.subresource && !!entry.manager && !!annotations && `f:${key}` in annotations;
  });
  const newest = owners.sort((a, b) => timeOf(b) - timeOf(a))[0];
  return newest && { manager: newest.manager!, ...(newest.time ? { time: new Date(newest.time).toISOString() } : {}) };
}

const timeOf = (entry: k8s.V1ManagedFieldsEntry) => (entry.time ? new Date(entry.time).getTime() : 0);

/** The identity a control from an annotation carries into the workflow's history. */
export function annotationIdentity(setter: Setter | undefined): string {
  return `kubectl annotate (${setter?.manager ?? 'kubectl'})`;
}

/**
 * The requestId of an annotated control: the same for every sighting of one setting of the annotation, by this
 * watcher or, after a crash between the update and the annotation's removal, by the next one.
 *
 * It is the resource's UID, the control, a hash of the value, and who set it when (its managedFields entry:
 * manager and time). Not the resourceVersion: every status write changes it, so a watcher that restarts sees
 * another one. Not the generation: annotations do not change it, and two promotes of one generation (two
 * steps waiting for promotion) must be two controls. Setting the annotation again after its removal gives a new
 * time, hence a new control. Known gaps: the same manager setting it again within the same second, and (only
 * while a removal is failing) the same manager changing another field, which moves its time. Without
 * managedFields, `fallback` (the resourceVersion the watcher first saw the annotation at) stands in for the time.
 *
 * @example
 * annotationRequestId('6f1c…', control, { manager: 'kubectl-annotate', time: '2025-05-01T10:00:00.000Z' });
 * // 'annotation/6f1c…/promote/kubectl-annotate@2025-05-01T10:00:00.000Z/1a2b3c4d'
 */
export function annotationRequestId(
  uid: string,
  c: AnnotatedControl,
  setter: Setter | undefined,
  fallback?: string,
): string {
  const when = setter?.time ?? `rv${fallback ?? ''}`;
  return `annotation/${uid}/${c.control}/${setter?.manager ?? 'unknown'}@${when}/${shortHash(c.value)}`;
}

/**
 * Why a control was refused, without the `<control> refused: ` the workflow's validator puts first (the caller
 * says `refused` itself).
 *
 * @example
 * refusalReason('resume', 'resume refused: not paused'); // 'not paused'
 */
export function refusalReason(control: string, message: string): string {
  return message.startsWith(`${control} refused: `) ? message.slice(control.length + ' refused: '.length) : message;
}

/** A JSON patch that removes annotation `key` only while it still has `value` (a newer value is its own control). */
export function removalPatch(key: string, value: string): object[] {
  const path = `/metadata/annotations/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return [
    { op: 'test', path, value },
    { op: 'remove', path },
  ];
}
