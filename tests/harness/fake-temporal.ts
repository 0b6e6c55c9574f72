/** A Temporal target and connections that hand out a fake WorkflowService, for unit tests of one activity module. */
import type { TemporalConnections, TemporalTarget } from '../../temporal/connections.js';

export const fakeTarget: TemporalTarget = {
  connection: { hostPort: 'localhost:7233' },
  k8sNamespace: 'ns',
  temporalNamespace: 'default',
  deploymentName: 'ns/orders',
};

/** Connections whose every connection is `workflowService` (and `withAbortSignal`, where the module uses it). */
export const connectionsTo = (
  workflowService: object,
  withAbortSignal?: <R>(signal: AbortSignal, fn: () => Promise<R>) => Promise<R>,
): TemporalConnections =>
  ({ get: async () => ({ workflowService, withAbortSignal }) }) as unknown as TemporalConnections;
