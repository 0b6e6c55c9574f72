/**
 * `Connection` and the cluster-scoped `ClusterConnection`: temporal-worker-controller's connection kinds since its
 * v1.7, served beside `TemporalConnection` with the same spec (api/temporal-connection.ts).
 *
 * A ClusterConnection names its Secrets without a namespace, as the other controller's does: they are read in the
 * namespace of each resource that uses it, because that is where its pods run and a pod mounts only Secrets of its
 * own namespace.
 */
import { z } from 'zod';
import { TemporalConnectionSpec, connectionObject } from './temporal-connection.js';

/** The spec every connection kind shares. */
export const ConnectionSpec = TemporalConnectionSpec;
export type ConnectionSpec = TemporalConnectionSpec;

export const Connection = connectionObject('Connection');
export type Connection = z.infer<typeof Connection>;

export const ClusterConnection = connectionObject('ClusterConnection');
export type ClusterConnection = z.infer<typeof ClusterConnection>;
