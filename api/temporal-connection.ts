/**
 * How workers (and the gate) reach a Temporal server: the spec of `TemporalConnection`, and of the `Connection` and
 * cluster-scoped `ClusterConnection` of temporal-worker-controller ≥ 1.7 (api/connection.ts). One schema for all
 * three, so a connection of any kind is the same thing to the rest of Glidepath.
 */
import { z } from 'zod';
import { withCel } from './cel.js';
import { KeySelector, ObjectMeta, SecretRef, apiVersion } from './common.js';

const onlyOneCredential = 'only one of mutualTLSSecretRef or apiKeySecretRef may be set';
const caWithMtls =
  "tls.caCertSecretRef cannot be combined with mutualTLSSecretRef: put the CA in that Secret's ca.crt key instead";

export const TemporalConnectionSpec = withCel(
  z
    .object({
      hostPort: z
        .string()
        .regex(/^[a-zA-Z0-9.-]+:[0-9]+$/, 'must be host:port, e.g. "temporal-frontend.temporal:7233"')
        .describe('The host and port of the Temporal frontend (TEMPORAL_ADDRESS in every pod)'),
      tls: z
        .object({
          serverName: z
            .string()
            .optional()
            .describe('Overrides the server name checked in its certificate (TEMPORAL_TLS_SERVER_NAME in every pod)'),
          caCertSecretRef: SecretRef.optional().describe(
            'A Secret whose ca.crt the workers and Glidepath trust for the server certificate (turns TLS on; as temporal-worker-controller ≥ 1.7); for a ClusterConnection, in the namespace of each resource that uses it',
          ),
        })
        .optional()
        .describe('Server TLS settings; TLS is on whenever mTLS, an API key or a CA is configured'),
      mutualTLSSecretRef: SecretRef.optional().describe(
        'mTLS: a kubernetes.io/tls (or Opaque) Secret with tls.crt, tls.key and optionally ca.crt, mounted in every pod at /etc/temporal/tls',
      ),
      apiKeySecretRef: KeySelector.optional().describe(
        'The Secret key holding an API key (TEMPORAL_API_KEY in every pod; turns TLS on)',
      ),
    })
    .describe('Where the Temporal server is and how to authenticate to it')
    .refine((s) => !(s.mutualTLSSecretRef && s.apiKeySecretRef), {
      message: onlyOneCredential,
      path: ['apiKeySecretRef'],
    })
    .refine((s) => !(s.mutualTLSSecretRef && s.tls?.caCertSecretRef), {
      message: caWithMtls,
      path: ['tls', 'caCertSecretRef'],
    }),
  {
    rule: '!(has(self.mutualTLSSecretRef) && has(self.apiKeySecretRef))',
    message: onlyOneCredential,
    fieldPath: '.apiKeySecretRef',
  },
  {
    rule: '!(has(self.mutualTLSSecretRef) && has(self.tls) && has(self.tls.caCertSecretRef))',
    message: caWithMtls,
    fieldPath: '.tls.caCertSecretRef',
  },
);
export type TemporalConnectionSpec = z.infer<typeof TemporalConnectionSpec>;

/** A connection object of `kind`: every connection kind has the same spec and no status of its own. */
export function connectionObject<K extends string>(kind: K) {
  return z.object({
    apiVersion: z.literal(apiVersion),
    kind: z.literal(kind),
    metadata: ObjectMeta,
    spec: TemporalConnectionSpec,
    status: z.object({}).optional(),
  });
}

export const TemporalConnection = connectionObject('TemporalConnection');
export type TemporalConnection = z.infer<typeof TemporalConnection>;
