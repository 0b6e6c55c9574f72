/**
 * Connections to the Temporal servers that connections (TemporalConnection, Connection, ClusterConnection) name (workers' servers, which may differ from
 * the controller's own). One live connection per connection spec, and per content of the Secrets it reads:
 * the Secrets are read on every `get()`, so a rotated mTLS certificate or API key opens a new connection, and
 * the superseded one is closed a little later (calls in flight on it finish first, or fail and are retried).
 */
import { createHash } from 'node:crypto';
import type { Interceptor } from '@grpc/grpc-js';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import type { Owner } from '../api/resource.js';
import type { TemporalConnectionSpec } from '../api/temporal-connection.js';
import { PermanentError } from '../api/errors.js';
import { logWarning } from './activity-context.js';
import { whyUnreachable } from './unreachable.js';

/** Where a resource's versions live in Temporal. */
export interface TemporalTarget {
  connection: TemporalConnectionSpec;
  /** Namespace of the resource in Kubernetes (where the connection's Secrets are, a ClusterConnection's too). */
  k8sNamespace: string;
  temporalNamespace: string;
  deploymentName: string;
}

/**
 * What a workflow passes a Temporal activity: the resource, and the place it believes the version lives. The
 * activity reads the resource and its connection from the apiserver (activities/authority.ts): nothing here
 * chooses a server or a Secret.
 */
export interface TemporalRef {
  owner: Owner;
  temporalNamespace: string;
  hostPort: string;
}

/** Reads a Secret's data (decoded); `undefined` when there is no such Secret. */
export type SecretReader = (namespace: string, name: string) => Promise<Record<string, Buffer> | undefined>;

/** Opens a connection (`Connection.connect`, or a fake in tests). */
export type Connect = (options: ConnectionOptions) => Promise<Connection>;

export interface TemporalConnectionsOptions {
  connect?: Connect;
  /** How long a superseded connection stays open for calls in flight on it (default 10 s). */
  closeDelayMs?: number;
  /** gRPC interceptors of every connection (the SDK's retries, each attempt paced: worker/temporal-limits.ts); default: the SDK's retries. */
  interceptors?: Interceptor[];
}

interface Live {
  /** Hash of the spec and the content of its Secrets. */
  contentKey: string;
  connection: Promise<Connection>;
}

export class TemporalConnections {
  /** By (k8s namespace, spec): at most one live connection each. */
  private readonly live = new Map<string, Live>();
  /** Superseded connections, each with the timer that closes it. */
  private readonly closing = new Map<NodeJS.Timeout, Promise<Connection>>();
  private readonly connect: Connect;
  private readonly closeDelayMs: number;
  private readonly interceptors?: Interceptor[];

  constructor(
    private readonly readSecret: SecretReader,
    options: TemporalConnectionsOptions = {},
  ) {
    this.connect = options.connect ?? ((o) => Connection.connect(o));
    this.closeDelayMs = options.closeDelayMs ?? 10_000;
    this.interceptors = options.interceptors;
  }

  /**
   * The connection for a target, opened anew when the content of its Secrets changed since the last call.
   * A missing Secret or key is a PermanentError.
   */
  async get(target: TemporalTarget): Promise<Connection> {
    const specKey = JSON.stringify([target.k8sNamespace, target.connection]);
    const options = await this.optionsOf(target);
    const contentKey = fingerprint(specKey, options);
    const previous = this.live.get(specKey);
    if (previous?.contentKey === contentKey) return previous.connection;

    // Bounded, so an attempt fails within an activity's budget. The status says no more than a user could learn
    // from a pod of their own (never whether a port is open: the controller is no port scanner); the controller's
    // log, which operators read, says why.
    const connection = this.connect({
      connectTimeout: '5s',
      ...options,
      ...(this.interceptors ? { interceptors: this.interceptors } : {}),
    }).catch(async (err: unknown) => {
      if (!(err instanceof Error) || !/before the deadline/.test(err.message)) throw err;
      const hostPort = target.connection.hostPort;
      const why = await whyUnreachable(hostPort, options.tls !== undefined && options.tls !== false);
      logWarning(`cannot connect to Temporal at ${hostPort} for ${target.k8sNamespace}: ${why}`);
      throw new Error(
        `cannot connect to Temporal at ${hostPort} within 5 s (UNAVAILABLE): check the address, the network path and the tls settings`,
      );
    });
    const entry: Live = { contentKey, connection };
    this.live.set(specKey, entry);
    // A failed connect is not cached: the next get() tries again.
    connection.catch(() => {
      if (this.live.get(specKey) === entry) this.live.delete(specKey);
    });
    if (previous) this.closeLater(previous.connection);
    return connection;
  }

  private async optionsOf({ connection: spec, k8sNamespace: ns }: TemporalTarget): Promise<ConnectionOptions> {
    const secret = async (name: string) => {
      const data = await this.readSecret(ns, name);
      if (!data) throw new PermanentError(`Secret ${ns}/${name} not found (named by the TemporalConnection)`);
      return data;
    };
    const must = (data: Record<string, Buffer>, name: string, key: string) => {
      const value = data[key];
      if (!value?.length) throw new PermanentError(`Secret ${ns}/${name} has no key "${key}"`);
      return value;
    };
    if (spec.mutualTLSSecretRef) {
      const name = spec.mutualTLSSecretRef.name;
      const data = await secret(name);
      return {
        address: spec.hostPort,
        tls: {
          serverNameOverride: spec.tls?.serverName,
          serverRootCACertificate: data['ca.crt']?.length ? data['ca.crt'] : undefined,
          clientCertPair: { crt: must(data, name, 'tls.crt'), key: must(data, name, 'tls.key') },
        },
      };
    }
    // tls.caCertSecretRef: the server's certificate is checked against this CA (never beside mTLS: its ca.crt is it).
    const caRef = spec.tls?.caCertSecretRef;
    const serverRootCACertificate = caRef ? must(await secret(caRef.name), caRef.name, 'ca.crt') : undefined;
    const serverTls = {
      serverNameOverride: spec.tls?.serverName,
      ...(serverRootCACertificate ? { serverRootCACertificate } : {}),
    };
    if (spec.apiKeySecretRef) {
      const { name, key } = spec.apiKeySecretRef;
      const apiKey = must(await secret(name), name, key)
        .toString('utf8')
        .trim();
      return { address: spec.hostPort, tls: serverTls, apiKey };
    }
    if (serverRootCACertificate) return { address: spec.hostPort, tls: serverTls };
    return { address: spec.hostPort };
  }

  private closeLater(connection: Promise<Connection>): void {
    const timer = setTimeout(() => {
      this.closing.delete(timer);
      void close(connection);
    }, this.closeDelayMs);
    timer.unref(); // a pending close does not keep the process alive
    this.closing.set(timer, connection);
  }

  /** Closes every connection, live or superseded. */
  async closeAll(): Promise<void> {
    const all = [...this.live.values()].map((l) => l.connection);
    this.live.clear();
    // Superseded connections close now rather than when their timers fire.
    for (const [timer, connection] of this.closing) {
      clearTimeout(timer);
      all.push(connection);
    }
    this.closing.clear();
    await Promise.all(all.map(close));
  }
}

/** Closes a connection; one that never opened, or is closed already, is fine. */
async function close(connection: Promise<Connection>): Promise<void> {
  try {
    await (await connection).close();
  } catch {
    // Nothing to close.
  }
}

/** sha256 over the spec and the options read from its Secrets (never kept in clear). */
function fingerprint(specKey: string, options: ConnectionOptions): string {
  const hash = createHash('sha256').update(specKey);
  const tls = typeof options.tls === 'object' ? options.tls : undefined;
  for (const part of [
    tls?.serverRootCACertificate,
    tls?.clientCertPair?.crt,
    tls?.clientCertPair?.key,
    options.apiKey,
  ]) {
    hash.update('\0');
    if (part !== undefined && typeof part !== 'function') hash.update(part);
  }
  return hash.digest('hex');
}
