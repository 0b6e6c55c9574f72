/** Building blocks shared by both resources: names, references, durations, conditions. */
import { z } from 'zod';
import { withCel } from './cel.js';
import { durationNanos, durationPattern } from './duration.js';

/** The API group and version of every Glidepath resource. */
export const group = 'glidepath.dev';
export const version = 'v1alpha1';
export const apiVersion = `${group}/${version}`;

export const dnsLabelPattern = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const dns1123Label = new RegExp(dnsLabelPattern);

/**
 * A build ID Glidepath can use as it is: a Kubernetes label value that is not empty (at most 63 characters,
 * checked beside it). That is stricter than Temporal (not empty, not starting with "__", at most 255 bytes), and
 * versionedDeploymentName makes any such ID part of a DNS-1123 Deployment name (hashing what it must change).
 */
export const buildIdPattern = '^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$';
export const maxBuildIdLength = 63;

/** A DNS-1123 label: what Kubernetes accepts as the name of most objects. */
export const dnsLabel = z
  .string()
  .min(1)
  .max(63)
  .regex(
    dns1123Label,
    'must be a DNS-1123 label: lower-case letters, digits and "-", starting and ending alphanumeric',
  );

/**
 * An integer field, refused by kube-apiserver as by zod when it holds a fraction. kube-apiserver's OpenAPI check
 * takes a number within a relative 1e-9 of an integer (2.0000000001) for an integer and stores it as it is;
 * a CEL rule that reads `self` then fails on the float, naming the field. (A failing evaluation is not ratcheted:
 * an object stored with such a float under an older CRD can no longer have its status written.)
 */
export function integer<T extends z.ZodType>(schema: T): T {
  return withCel(schema, { rule: 'type(self) == int', message: 'must be an integer' });
}

/** A reference to a Secret (by name) in the resource's namespace. */
export const SecretRef = z
  .object({ name: dnsLabel.describe("The Secret's name") })
  .describe('A Secret in the same namespace');

/** A key of a Secret or ConfigMap in the resource's namespace, as corev1's KeySelector. */
export const KeySelector = z
  .object({
    name: dnsLabel.describe('The name of the object'),
    key: z.string().min(1).describe('The key in its data'),
    optional: z
      .boolean()
      .optional()
      .describe("Accepted as in corev1's key selectors, and ignored: a missing object or key is always an error"),
  })
  .describe('A key of an object in the same namespace');

/**
 * A Go-style duration that must be greater than zero (`allowZero` allows "0s"). Read as CEL reads it (whole
 * nanoseconds, at most int64 of them), so "0.5ns" is 0s and "2562048h" no duration, for zod and CEL alike.
 */
export function duration(opts: { allowZero: boolean }) {
  const sign = opts.allowZero ? '>=' : '>';
  return withCel(
    z
      .string()
      .regex(new RegExp(durationPattern), { message: 'must be a duration such as "30s", "5m" or "1h30m"', abort: true })
      .refine((d) => durationNanos(d) !== undefined, { message: 'must be a duration of at most 2562047h', abort: true })
      .refine((d) => (opts.allowZero ? durationNanos(d)! >= 0n : durationNanos(d)! > 0n), {
        message: `must be a duration ${sign} 0s`,
      }),
    { rule: `duration(self) ${sign} duration('0s')`, message: `must be a duration ${sign} 0s` },
  );
}

/** A standard Kubernetes condition (metav1.Condition). */
export const Condition = z.object({
  type: z.string().describe('The condition'),
  status: z.enum(['True', 'False', 'Unknown']).describe('Whether it holds: True, False or Unknown'),
  reason: z.string().describe('Why, in one CamelCase word'),
  message: z.string().optional().describe('Why, in words'),
  lastTransitionTime: z.string().describe('When it last changed (RFC 3339)'),
  observedGeneration: z.int().optional().describe('The generation of the spec it was set for'),
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
