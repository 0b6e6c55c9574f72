/** Building blocks shared by both resources: names, references, durations, conditions. */
import { z } from 'zod';
import { withCel } from './cel.js';
import { durationPattern, parseDuration } from './duration.js';

/** The API group and version of every Glidepath resource. */
export const group = 'glidepath.dev';
export const version = 'v1alpha1';
export const apiVersion = `${group}/${version}`;

export const dnsLabelPattern = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const dns1123Label = new RegExp(dnsLabelPattern);

/** A DNS-1123 label: what Kubernetes accepts as the name of most objects. */
export const dnsLabel = z
  .string()
  .min(1)
  .max(63)
  .regex(dns1123Label, 'must be a DNS-1123 label: lower-case letters, digits and "-", starting and ending alphanumeric');

/** A reference to a Secret (by name) in the resource's namespace. */
export const SecretRef = z.object({ name: dnsLabel }).describe('A Secret in the same namespace');

/** A key of a Secret or ConfigMap in the resource's namespace, as corev1's KeySelector. */
export const KeySelector = z
  .object({ name: dnsLabel, key: z.string().min(1), optional: z.boolean().optional() })
  .describe('A key of an object in the same namespace');

/** A Go-style duration that must be greater than zero (`minimum` 0 allows "0s"). */
export function duration(opts: { allowZero: boolean }) {
  const sign = opts.allowZero ? '>=' : '>';
  return withCel(
    z
      .string()
      .regex(new RegExp(durationPattern), { message: 'must be a duration such as "30s", "5m" or "1h30m"', abort: true })
      .refine((d) => (opts.allowZero ? parseDuration(d) >= 0 : parseDuration(d) > 0), {
        message: `must be a duration ${sign} 0s`,
      }),
    { rule: `duration(self) ${sign} duration('0s')`, message: `must be a duration ${sign} 0s` },
  );
}

/** A standard Kubernetes condition (metav1.Condition). */
export const Condition = z.object({
  type: z.string(),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string().optional(),
  lastTransitionTime: z.string(),
  observedGeneration: z.int().optional(),
});
export type Condition = z.infer<typeof Condition>;

/** The metadata fields Glidepath reads from an object; kube-apiserver owns the rest. */
export const ObjectMeta = z.looseObject({
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  generation: z.int().optional(),
  resourceVersion: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  finalizers: z.array(z.string()).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});

/** Formats zod issues as `field.path: problem`, one per line, the way kube-apiserver names fields. */
export function describeIssues(error: z.ZodError, root = ''): string {
  return error.issues
    .map((issue) => {
      const path = issue.path.reduce<string>(
        (acc, key) => (typeof key === 'number' ? `${acc}[${key}]` : acc ? `${acc}.${String(key)}` : String(key)),
        root,
      );
      return `${path || '(root)'}: ${issue.message}`;
    })
    .join('\n');
}
