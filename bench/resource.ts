/** The TemporalWorkerDeployment the benchmarks roll out: one simulated worker, its build told apart by `marker`. */
import { group, version } from '../api/common.js';

export interface BenchResource {
  name: string;
  namespace: string;
  /** v1, v2…: a new marker is a new build. */
  marker: string;
  rollout: Record<string, unknown>;
  /** The Temporal namespace its workers poll. */
  temporalNamespace: string;
  /** Its workers' task queue: `${taskQueuePrefix}-${name}`. */
  taskQueuePrefix: string;
}

export const benchResource = (r: BenchResource) => ({
  apiVersion: `${group}/${version}`,
  kind: 'TemporalWorkerDeployment',
  metadata: { name: r.name, namespace: r.namespace },
  spec: {
    replicas: 1,
    rollout: r.rollout,
    sunset: { scaledownDelay: '0s', deleteDelay: '0s' },
    workerOptions: { connectionRef: { name: 'local' }, temporalNamespace: r.temporalNamespace },
    template: {
      spec: {
        containers: [
          {
            name: 'w',
            image: 'bench:1',
            env: [
              { name: 'EXAMPLE_TASK_QUEUE', value: `${r.taskQueuePrefix}-${r.name}` },
              { name: 'MARKER', value: r.marker },
            ],
          },
        ],
      },
    },
  },
});
