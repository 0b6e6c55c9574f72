/**
 * Describes of a worker deployment and of a version that read through the server's continue-as-new window.
 *
 * Server 1.29 answers both with a query of its own system workflow, which continues-as-new after every change
 * (a routing write, a registration, a version's status). A describe landing in that window is refused although
 * the deployment exists: NOT_FOUND (the closed run rejects the query), or FAILED_PRECONDITION "Workflow task is
 * not scheduled yet" (the new run has not started). On the dev server, 4 readers against a stream of manager
 * identity writes saw 14 % NOT_FOUND and 26 % FAILED_PRECONDITION (a throwaway probe; CI saw "no current
 * version" twice). Believing such a NOT_FOUND would read "no current version" mid-rollout, so a NOT_FOUND counts
 * only when the system workflow is not running either.
 */
import { isGrpcServiceError } from '@temporalio/client';
import type { WorkflowService } from '@temporalio/client';
import proto from '@temporalio/proto';
import { GrpcStatus } from './errors.js';

const { temporal } = proto; // a CommonJS module: no named exports under ESM

/** The server's workflow IDs for its system workflows (go.temporal.io/server common/worker_versioning). */
export const deploymentWorkflowId = (deploymentName: string) => `temporal-sys-worker-deployment:${deploymentName}`;
export const versionWorkflowId = (deploymentName: string, buildId: string) =>
  `temporal-sys-worker-deployment-version:${deploymentName}:${buildId}`;

/** A NOT_FOUND of the Temporal namespace itself: the worker deployment is not "not there yet", the call is refused. */
export const isNamespaceNotFound = (err: unknown) =>
  isGrpcServiceError(err) &&
  err.code === GrpcStatus.NOT_FOUND &&
  /^Namespace .* is not found/i.test(err.details || err.message);

/** The thing read is not there (yet). Not a missing namespace: that is an error to show (`isNamespaceNotFound`). */
export const isNotFound = (err: unknown) =>
  isGrpcServiceError(err) && err.code === GrpcStatus.NOT_FOUND && !isNamespaceNotFound(err);

/** The refusal of a query to a system workflow between its runs. */
export const isQueryBetweenRuns = (err: unknown) =>
  isGrpcServiceError(err) &&
  err.code === GrpcStatus.FAILED_PRECONDITION &&
  /workflow task is not scheduled yet/i.test(err.details || err.message);

export type DescribeService = Pick<
  WorkflowService,
  'describeWorkerDeployment' | 'describeWorkerDeploymentVersion' | 'describeWorkflowExecution'
>;

export interface SettledReadOptions {
  /** Reads before giving up on a refusal that stays transient (the error is thrown then; a caller retries). */
  attempts?: number;
  sleep?: (ms: number) => Promise<void>;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Whether the system workflow is running: then a NOT_FOUND of its describe was the window, not the truth. */
async function systemWorkflowRunning(svc: DescribeService, namespace: string, workflowId: string): Promise<boolean> {
  try {
    const res = await svc.describeWorkflowExecution({ namespace, execution: { workflowId } });
    return (
      res.workflowExecutionInfo?.status ===
      temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING
    );
  } catch (err) {
    if (isNotFound(err)) return false;
    throw err;
  }
}

/**
 * Runs `read` until it answers, or is refused with a NOT_FOUND that holds (`undefined`): a refusal of the
 * continue-as-new window is read again after 20, 40, 80 … ms (≈ 2.5 s over 8 attempts).
 */
export async function settledRead<T>(
  svc: DescribeService,
  namespace: string,
  workflowId: string,
  read: () => Promise<T>,
  o: SettledReadOptions = {},
): Promise<T | undefined> {
  const attempts = o.attempts ?? 8;
  const sleep = o.sleep ?? defaultSleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      const between =
        isQueryBetweenRuns(err) || (isNotFound(err) && (await systemWorkflowRunning(svc, namespace, workflowId)));
      if (!between) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
      if (attempt >= attempts) throw err;
      await sleep(Math.min(20 * 2 ** (attempt - 1), 1000));
    }
  }
}

/**
 * The wait before the registration wait's next describe of a version: doubling from 50 ms to 2 s while the server
 * answers fast (a new version's first ramp waits ≈ 2 s after its registration anyway), and never less than ten times what the last describe took beyond 200 ms (a distant server's round
 * trips are no sign of load), up to 5 s (well within the wait's 60 s heartbeat timeout). Such a describe is a query
 * of the server's own workflow for the version: a slow answer means a busy server, and asking it every second keeps
 * it busy (at 1,000 resources on the dev server, describes were most of the controller's calls while the server's
 * registrations of new versions fell behind).
 */
export const registrationPollDelay = (previousMs: number | undefined, describeMs: number): number =>
  Math.min(Math.max(previousMs === undefined ? 50 : Math.min(previousMs * 2, 2000), 10 * (describeMs - 200)), 5_000);

/** The wait after a busy server refused a describe (deadline exceeded, unavailable). */
export const refusedPollDelay = 5_000;

/** A worker deployment, or `undefined` when it does not exist. */
export function describeDeploymentSettled(
  svc: DescribeService,
  namespace: string,
  deploymentName: string,
  o?: SettledReadOptions,
) {
  return settledRead(
    svc,
    namespace,
    deploymentWorkflowId(deploymentName),
    () => svc.describeWorkerDeployment({ namespace, deploymentName }),
    o,
  );
}

/** A version of a worker deployment, or `undefined` when the server does not know it. */
export function describeVersionSettled(
  svc: DescribeService,
  namespace: string,
  deploymentName: string,
  buildId: string,
  o?: SettledReadOptions,
) {
  return settledRead(
    svc,
    namespace,
    versionWorkflowId(deploymentName, buildId),
    () => svc.describeWorkerDeploymentVersion({ namespace, deploymentVersion: { deploymentName, buildId } }),
    o,
  );
}
