/**
 * A worker deployment limit reaches the status named: on a server (1.32) at its limit of worker deployments, the
 * registration wait asks to add the version once it has waited (here at once), and fails with the server's limit and
 * what to delete; the workers' refused polls would say it only in their own logs. A version so added that no worker
 * ever polls does not hold up its sunset. Its own server, with the limit 1.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import proto from '@temporalio/proto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTemporalActivities } from '../../activities/temporal.js';
import { TemporalConnections, type TemporalTarget } from '../../temporal/connections.js';
import { stopProcesses } from '../../scripts/servers/processes.js';
import { startTemporal, temporalServerKind, type TemporalServer } from '../../scripts/servers/temporal-server.js';

// The CLI's server (1.29) names no limits: the wait never asks it (tests/unit/registration-wait.test.ts).
const onNamedLimits = temporalServerKind() === 'dev' ? test : test.skip;

let server: TemporalServer | undefined;
const connections = new TemporalConnections(async () => undefined);

afterAll(async () => {
  await connections.closeAll();
  if (server) await stopProcesses([server.process]);
});

onNamedLimits(
  'a namespace at its limit of worker deployments: the wait fails naming it',
  async () => {
    server = await startTemporal({
      dir: mkdtempSync(join(tmpdir(), 'glidepath-limits-')),
      dynamicConfig: ['matching.maxDeployments=1'],
    });
    const target = (deploymentName: string): TemporalTarget => ({
      connection: { hostPort: server!.address },
      k8sNamespace: 'shop',
      temporalNamespace: 'default',
      deploymentName,
    });
    const temporal = createTemporalActivities(connections, 'glidepath-limits-test', async () => undefined);
    const svc = (await connections.get(target('shop/first'))).workflowService;
    await svc.createWorkerDeployment({ namespace: 'default', deploymentName: 'shop/first', requestId: 'first' });

    const wait = new MockActivityEnvironment().run(() =>
      temporal.awaitVersionRegistered(target('shop/second'), 'v1', 30_000, 0),
    );
    const failure = await wait.then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: 'WorkerDeploymentLimit', nonRetryable: false });
    expect((failure as Error).message).toMatch(
      /^the server cannot add v1: the Temporal namespace is at the server's limit of 1 worker deployments \(matching\.maxDeployments\): delete worker deployments no longer used \(temporal worker deployment delete\), or raise the limit$/,
    );
  },
  60_000,
);

onNamedLimits(
  'a version the limit check added and no worker polled is drained as an unregistered one',
  async () => {
    expect(server).toBeDefined(); // the test before started it
    const t: TemporalTarget = {
      connection: { hostPort: server!.address },
      k8sNamespace: 'shop',
      temporalNamespace: 'default',
      deploymentName: 'shop/first',
    };
    const temporal = createTemporalActivities(connections, 'glidepath-limits-test', async () => undefined);
    const svc = (await connections.get(t)).workflowService;
    const deploymentVersion = { deploymentName: 'shop/first', buildId: 'never-polled' };
    await svc.createWorkerDeploymentVersion({ namespace: 'default', deploymentVersion, requestId: 'never-polled' });
    const described = await svc.describeWorkerDeploymentVersion({ namespace: 'default', deploymentVersion });
    expect(described.workerDeploymentVersionInfo?.status).toBe(
      proto.temporal.api.enums.v1.WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CREATED,
    );
    expect(await new MockActivityEnvironment().run(() => temporal.versionStatus(t, 'never-polled'))).toBe(
      'NotRegistered',
    );
  },
  60_000,
);
