/**
 * withinAttempt: a Kubernetes request made by an activity attempt is aborted when the attempt is cancelled, so an
 * abandoned attempt's status write cannot land after its retry's. An HTTP server of the test plays the apiserver.
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { MockActivityEnvironment } from '@temporalio/testing';
import { asApply, withinAttempt } from '../../kube/client.js';
import { eventually } from '../harness/eventually.js';

let server: Server;
const requests: { req: IncomingMessage; closed: boolean }[] = [];
let custom: k8s.CustomObjectsApi;

beforeAll(async () => {
  // Answers nothing: every request hangs until its client gives up.
  server = createServer((req) => {
    const entry = { req, closed: false };
    requests.push(entry);
    req.socket.on('close', () => void (entry.closed = true));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: 'test', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true },
    ],
    users: [{ name: 'test' }],
    contexts: [{ name: 'test', cluster: 'test', user: 'test' }],
    currentContext: 'test',
  });
  custom = kc.makeApiClient(k8s.CustomObjectsApi);
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const writeStatus = () =>
  custom.patchNamespacedCustomObjectStatus(
    {
      group: 'glidepath.dev',
      version: 'v1alpha1',
      namespace: 'shop',
      plural: 'temporalworkerdeployments',
      name: 'orders',
      body: {},
      fieldManager: 'glidepath',
      force: true,
    },
    withinAttempt(asApply),
  );

test('a cancelled attempt aborts its request, which keeps its other options (server-side apply)', async () => {
  const env = new MockActivityEnvironment();
  const write = env.run(writeStatus);
  await eventually('the request reached the server', () => requests.length === 1);
  expect(requests[0]!.req.headers['content-type']).toBe(k8s.PatchStrategy.ServerSideApply);
  env.cancel();
  await expect(write).rejects.toThrow(/abort/i);
  await eventually('the connection closed', () => requests[0]!.closed);
});

test('outside an activity (the watcher) the options are as given', () => {
  expect(withinAttempt(asApply)).toBe(asApply);
});
