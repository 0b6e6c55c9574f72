/**
 * A real versioned Temporal worker configured the way a Glidepath pod is: by the env Glidepath injects
 * (`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_DEPLOYMENT_NAME`, `TEMPORAL_WORKER_BUILD_ID`) plus
 * the example's own switches. The pod simulator runs one per simulated pod.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from './activities.js';

export const defaultTaskQueue = 'example';
export const workflowsPath = fileURLToPath(new URL('./workflows.ts', import.meta.url));

let bundle: Promise<WorkflowBundle> | undefined;
/** The workflow bundle, built once per process and shared by every simulated pod. */
export function exampleBundle(): Promise<WorkflowBundle> {
  bundle ??= bundleWorkflowCode({ workflowsPath, logger: quietLogger });
  return bundle;
}

const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

function required(env: Record<string, string | undefined>, name: string): string {
  const value = env[name];
  if (!value) throw new Error(`${name} is not set; a Glidepath-managed pod always has it`);
  return value;
}

/** Creates (but does not run) a versioned worker from a pod's env. */
export async function createExampleWorker(env: Record<string, string | undefined>): Promise<Worker> {
  const connection = await NativeConnection.connect({ address: required(env, 'TEMPORAL_ADDRESS') });
  return Worker.create({
    connection,
    namespace: required(env, 'TEMPORAL_NAMESPACE'),
    taskQueue: env.EXAMPLE_TASK_QUEUE ?? defaultTaskQueue,
    workflowBundle: await exampleBundle(),
    activities: createActivities(env),
    workerDeploymentOptions: {
      version: {
        deploymentName: required(env, 'TEMPORAL_DEPLOYMENT_NAME'),
        buildId: required(env, 'TEMPORAL_WORKER_BUILD_ID'),
      },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    },
    shutdownGraceTime: '1s',
  });
}

// Run directly (a real container's entrypoint): `tsx examples/worker/worker.ts`
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const worker = await createExampleWorker(process.env);
  process.once('SIGTERM', () => worker.shutdown());
  await worker.run();
}
