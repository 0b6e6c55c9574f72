/** `TemporalConnection`: how workers (and the gate) reach a Temporal server. Compatible with TWC's v1alpha1. */
import { z } from 'zod';
import { withCel } from './cel.js';
import { KeySelector, ObjectMeta, SecretRef, apiVersion } from './common.js';

export const TemporalConnectionSpec = withCel(
  z
    .object({
      hostPort: z
        .string()
        .regex(/^[a-zA-Z0-9.-]+:[0-9]+$/, 'must be host:port, e.g. "temporal-frontend.temporal:7233"')
        .describe('The host and port of the Temporal frontend'),
      tls: z
        .object({ serverName: z.string().optional().describe('Overrides the TLS server name') })
        .optional()
        .describe('Server TLS settings; TLS is on whenever mTLS or an API key is configured'),
      mutualTLSSecretRef: SecretRef.optional().describe(
        'A kubernetes.io/tls (or Opaque) Secret with tls.crt, tls.key and optionally ca.crt',
      ),
      apiKeySecretRef: KeySelector.optional().describe('The Secret key holding an API key'),
    })
    .refine((s) => !(s.mutualTLSSecretRef && s.apiKeySecretRef), {
      message: 'only one of mutualTLSSecretRef or apiKeySecretRef may be set',
      path: ['apiKeySecretRef'],
    }),
  {
    rule: '!(has(self.mutualTLSSecretRef) && has(self.apiKeySecretRef))',
    message: 'only one of mutualTLSSecretRef or apiKeySecretRef may be set',
    fieldPath: '.apiKeySecretRef',
  },
);
export type TemporalConnectionSpec = z.infer<typeof TemporalConnectionSpec>;

export const TemporalConnection = z.object({
  apiVersion: z.literal(apiVersion),
  kind: z.literal('TemporalConnection'),
  metadata: ObjectMeta,
  spec: TemporalConnectionSpec,
  status: z.object({}).optional(),
});
export type TemporalConnection = z.infer<typeof TemporalConnection>;
