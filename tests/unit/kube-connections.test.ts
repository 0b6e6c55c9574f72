/**
 * SharedConnectionsKubeConfig: the controller's Kubernetes calls share keep-alive connections (client-node makes an
 * agent per request), one set per TLS identity. An HTTP server of the test plays the apiserver and counts the
 * connections it is opened.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { SharedConnectionsKubeConfig } from '../../kube/client.js';

let server: Server;
let connections = 0;

beforeAll(async () => {
  server = createServer((_, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }));
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function configAt(kc: k8s.KubeConfig, server: string, user: k8s.User = { name: 'test' }): k8s.KubeConfig {
  kc.loadFromOptions({
    clusters: [{ name: 'test', server, skipTLSVerify: server.startsWith('http:') }],
    users: [user],
    contexts: [{ name: 'test', cluster: 'test', user: user.name }],
    currentContext: 'test',
  });
  return kc;
}

test.each([
  ['client-node as it is: a connection per call', () => new k8s.KubeConfig(), 3],
  ['shared: one connection for calls one after another', () => new SharedConnectionsKubeConfig(), 1],
])('%s', async (_, make, expected) => {
  const api = configAt(make(), `http://127.0.0.1:${(server.address() as AddressInfo).port}`).makeApiClient(
    k8s.CoreV1Api,
  );
  connections = 0;
  for (let i = 0; i < 3; i++) expect((await api.listNamespace()).items).toEqual([]);
  expect(connections).toBe(expected);
});

test('one agent per TLS identity: the same client certificate shares it, another gets its own', async () => {
  const agentOf = async (kc: k8s.KubeConfig) => {
    const context = new k8s.RequestContext('https://10.0.0.1:6443/api/v1/namespaces', k8s.HttpMethod.GET);
    await kc.applySecurityAuthentication(context);
    return context.getAgent();
  };
  const alice: k8s.User = {
    name: 'alice',
    certData: Buffer.from('alice cert').toString('base64'),
    keyData: Buffer.from('alice key').toString('base64'),
  };
  const bob: k8s.User = {
    name: 'bob',
    certData: Buffer.from('bob cert').toString('base64'),
    keyData: Buffer.from('bob key').toString('base64'),
  };
  const kc = configAt(new SharedConnectionsKubeConfig(), 'https://10.0.0.1:6443', alice);
  const first = await agentOf(kc);
  expect(first).toBeInstanceOf(https.Agent);
  expect((first as https.Agent & { options: https.AgentOptions }).options.keepAlive).toBe(true);
  expect(await agentOf(kc)).toBe(first);
  const rotated = configAt(kc, 'https://10.0.0.1:6443', bob); // the same object, another user (a rotated certificate)
  expect(await agentOf(rotated)).not.toBe(first);
});
