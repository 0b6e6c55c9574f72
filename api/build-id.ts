/**
 * Build IDs: the first container's image tag plus a hash of the whole pod template, so any template change
 * (image, env, resources, …) is a new version, and the same template always gives the same ID.
 */
import { createHash } from 'node:crypto';
import { buildIdPattern, maxBuildIdLength } from './common.js';
import { sanitizeBuildId } from './names.js';
import type { PodTemplate } from './temporal-worker-deployment.js';

/** Hex digits of SHA-256 kept: 48 bits, so a collision needs ~16 million templates of one resource. */
const hashLength = 12;

/** JSON with object keys sorted at every level, so key order never changes the hash. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The tag of an image reference: `repo:tag` → tag, `repo@sha256:…` → `sha256-<12 hex>`, untagged → `latest`. */
export function imageTag(image: string | undefined): string {
  if (!image) return 'latest';
  const at = image.indexOf('@');
  if (at >= 0) {
    const digest = image.slice(at + 1);
    return digest.replace(':', '-').slice(0, 'sha256-'.length + hashLength);
  }
  const lastSlash = image.lastIndexOf('/');
  const colon = image.lastIndexOf(':');
  return colon > lastSlash ? image.slice(colon + 1) : 'latest';
}

/**
 * The build ID of a pod template, or the custom one when given. A custom build ID is used as it is, never
 * rewritten: the schema (zod and the CRD alike) refuses one a label or Temporal cannot hold, and so does this.
 * @example computeBuildId(template) === '1.4.2-3fa9c01b77d2'
 * @throws Error when the custom build ID is not a label value of 1 to 63 characters.
 */
export function computeBuildId(template: PodTemplate, customBuildId?: string): string {
  if (customBuildId !== undefined) {
    if (customBuildId.length > maxBuildIdLength || !new RegExp(buildIdPattern).test(customBuildId)) {
      throw new Error(
        `build ID "${customBuildId}" is not a Kubernetes label value of 1 to ${maxBuildIdLength} characters`,
      );
    }
    return customBuildId;
  }
  const hash = createHash('sha256').update(canonicalJson(template)).digest('hex').slice(0, hashLength);
  const rawTag = imageTag(template.spec.containers[0]?.image);
  // A tag with no letters or digits (`repo:__` is a valid reference, `repo:` a typo) has nothing to keep.
  if (!/[A-Za-z0-9]/.test(rawTag)) return hash;
  const tag = sanitizeBuildId(rawTag).slice(0, 63 - hashLength - 1);
  return `${tag.replace(/[^A-Za-z0-9]+$/, '')}-${hash}`;
}
