/**
 * What the rooms below the activities share of a failure: the refusal Glidepath itself finds, and the shape of a
 * classification (kube/errors.ts, temporal/errors.ts), which the activities turn into what they throw.
 */

/** What a call was doing, for the one line that reports its failure. */
export interface CallContext {
  /** The activity and its target, e.g. `setRamping ns/default/orders v2`. */
  call?: string;
  /** The Kubernetes namespace it worked in (a Kubernetes Status names an object without it). */
  namespace?: string;
}

/** A classified failure. */
export interface Classified {
  kind: 'permanent' | 'transient';
  /** One line: who refused what and why, without the activity's name. */
  message: string;
}

/**
 * A refusal Glidepath itself finds in the user's input (a missing Secret key, a gate input that is not JSON):
 * no retry can change it.
 */
export class PermanentError extends Error {
  static {
    this.prototype.name = 'PermanentError'; // on the prototype: an own `name` would print as an extra field
  }
}

/** `s` on one line: a failure is logged as one. */
export const oneLine = (s: string) => s.replace(/\s*\n\s*/g, ' ').trim();
