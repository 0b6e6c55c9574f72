/**
 * Connections to the Temporal servers that TemporalConnections name (workers' servers, which may differ from
 * the controller's own). One per distinct connection spec, opened on first use and reused.
 */
import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { TemporalConnectionSpec } from '../../api/temporal-connection.js';

/** Where a resource's versions live in Temporal. */
export interface TemporalTarget {
  connection: TemporalConnectionSpec;
  /** Namespace of the resource in Kubernetes (where the connection's Secrets are). */
  k8sNamespace: string;
  temporalNamespace: string;
  deploymentName: string;
}

/** Reads one key of a Secret. */
export type SecretReader = (namespace: string, name: string, key: string) => Promise<Buffer | undefined>;

export class TemporalConnections {
  private readonly open = new Map<string, Promise<Connection>>();

  constructor(private readonly readSecret: SecretReader) {}

  /** The connection for a target (secrets are read when it is first opened). */
  get(target: TemporalTarget): Promise<Connection> {
    const key = JSON.stringify([target.k8sNamespace, target.connection]);
    let conn = this.open.get(key);
    if (!conn) {
      conn = this.connect(target).catch((err) => {
        this.open.delete(key);
        throw err;
      });
      this.open.set(key, conn);
    }
    return conn;
  }

  private async connect({ connection: spec, k8sNamespace: ns }: TemporalTarget): Promise<Connection> {
    const must = async (name: string, key: string) => {
      const value = await this.readSecret(ns, name, key);
      if (!value) throw new Error(`Secret ${ns}/${name} has no key "${key}"`);
      return value;
    };
    let tls: ConnectionOptions['tls'];
    let apiKey: string | undefined;
    if (spec.mutualTLSSecretRef) {
      const name = spec.mutualTLSSecretRef.name;
      tls = {
        serverNameOverride: spec.tls?.serverName,
        serverRootCACertificate: await this.readSecret(ns, name, 'ca.crt'),
        clientCertPair: { crt: await must(name, 'tls.crt'), key: await must(name, 'tls.key') },
      };
    } else if (spec.apiKeySecretRef) {
      apiKey = (await must(spec.apiKeySecretRef.name, spec.apiKeySecretRef.key)).toString('utf8').trim();
      tls = { serverNameOverride: spec.tls?.serverName };
    }
    return Connection.connect({ address: spec.hostPort, tls, apiKey });
  }

  async closeAll(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.allSettled(all.map(async (c) => (await c).close()));
  }
}
