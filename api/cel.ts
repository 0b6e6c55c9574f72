/**
 * CEL validation rules attached to zod schemas as metadata, so a rule lives beside the field it guards and
 * lands in the generated CRD as `x-kubernetes-validations`. Each rule is paired with a zod refinement, so
 * the watcher refuses the same input kube-apiserver would.
 */
import type { z } from 'zod';

export interface CelRule {
  /** The CEL expression kube-apiserver evaluates against `self`. */
  rule: string;
  /** What is wrong, for a person; kube-apiserver prefixes it with the field path. */
  message: string;
  /** Where the problem is, relative to the schema the rule is attached to (e.g. `.steps`). */
  fieldPath?: string;
}

/** Attaches CEL rules (as metadata) to a schema, keeping its other metadata. */
export function withCel<T extends z.ZodType>(schema: T, ...rules: CelRule[]): T {
  const existing = (schema.meta() ?? {}) as Record<string, unknown>;
  const before = (existing['x-kubernetes-validations'] as CelRule[] | undefined) ?? [];
  return schema.meta({ ...existing, 'x-kubernetes-validations': [...before, ...rules] }) as T;
}
