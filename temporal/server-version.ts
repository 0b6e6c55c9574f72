/**
 * What the Temporal server behind a connection can do, by the version it reports (GetSystemInfo), asked once per
 * connection. A version that does not parse counts as the oldest supported: its features are never assumed.
 */
import type { Connection } from '@temporalio/client';

export interface ServerFeatures {
  /** As the server reports it (`1.32.0`), or `unknown`. */
  version: string;
  /** A versioning override that lasts one workflow task on its target (1.32): a moved execution is not held there. */
  oneTimeOverride: boolean;
  /** Creating a worker deployment or version by API, refused with the limit named when one is reached (1.32). */
  namedLimits: boolean;
  /**
   * A describe of a worker deployment says whether its last routing change still reaches the task queues
   * (`routingConfigUpdateState`, 1.30): a set-current may answer before it has.
   */
  routingUpdateState: boolean;
}

/** `[major, minor]` of a version string such as `1.32.0` or `v1.30.1-rc.1`; `undefined` when it does not parse. */
export function parseServerVersion(version: string | undefined | null): [number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(version ?? '');
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

const atLeast = (v: [number, number] | undefined, major: number, minor: number) =>
  !!v && (v[0] > major || (v[0] === major && v[1] >= minor));

export function featuresOf(version: string | undefined | null): ServerFeatures {
  const v = parseServerVersion(version);
  return {
    version: version || 'unknown',
    oneTimeOverride: atLeast(v, 1, 32),
    namedLimits: atLeast(v, 1, 32),
    routingUpdateState: atLeast(v, 1, 30),
  };
}

const asked = new WeakMap<Connection, Promise<ServerFeatures>>();

/** The features of the connection's server; a failed ask is not kept (the next call asks again). */
export function serverFeatures(connection: Connection): Promise<ServerFeatures> {
  let features = asked.get(connection);
  if (!features) {
    features = connection.workflowService.getSystemInfo({}).then((info) => featuresOf(info.serverVersion));
    features.catch(() => asked.delete(connection));
    asked.set(connection, features);
  }
  return features;
}
