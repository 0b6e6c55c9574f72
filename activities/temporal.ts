/**
 * Temporal activities: Worker Versioning calls through WorkflowService, no decisions (routing.ts, versions.ts), and
 * the waits on the server's answers (registration.ts, gates.ts).
 */
import type { GateInputReader } from '../kube/gate-input.js';
import type { TemporalConnections } from '../temporal/connections.js';
import { createGateActivities } from './gates.js';
import { createRegistrationActivities } from './registration.js';
import { createRoutingActivities } from './routing.js';
import { createVersionActivities } from './versions.js';

/**
 * The Temporal activities. `readGateInput` reads a gate's input from its ConfigMap or Secret (the Kubernetes
 * activities' reader, with the same JSON rules).
 */
export function createTemporalActivities(
  connections: TemporalConnections,
  identity: string,
  readGateInput: GateInputReader,
) {
  return {
    ...createRoutingActivities(connections, identity),
    ...createRegistrationActivities(connections, identity),
    ...createVersionActivities(connections, identity),
    ...createGateActivities(connections, readGateInput),
  };
}

export type TemporalActivities = ReturnType<typeof createTemporalActivities>;
