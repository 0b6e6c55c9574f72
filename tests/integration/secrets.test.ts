/**
 * Secrets stay out of the controller's own history: a gate's input from a Secret is read inside the activity
 * that starts the gate, so RolloutWorkflow's history holds the reference, never the value.
 */
import * as k8s from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import {
  apply,
  eventually,
  resource,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
} from '../harness/rollout-env.js';

let env: RolloutEnv;

beforeAll(async () => {
  env = await startRolloutEnv('secrets');
});
afterAll(async () => {
  await env?.stop();
});

test("a gate's input from a Secret never enters RolloutWorkflow's history", async () => {
  const value = `s3cr3t-${randomBytes(8).toString('hex')}`;
  const core = env.kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedSecret({
    namespace: env.namespace,
    body: { metadata: { name: 'gate-input' }, stringData: { 'input.json': JSON.stringify({ token: value }) } },
  });
  const twd = resource(env, 'gated', { env: { VERSION: 'v1' } });
  const spec = twd.spec as Record<string, unknown> & { rollout: Record<string, unknown> };
  spec.rollout = {
    strategy: 'AllAtOnce',
    gate: { workflowType: 'exampleGate', inputFrom: { secretKeyRef: { name: 'gate-input', key: 'input.json' } } },
  };
  await apply(env, twd);
  await eventually('v1 current after its gate', async () => (await twdStatus(env, 'gated'))?.phase === 'Ready', 90_000);

  // The gate itself got the value (it is the user's workflow: its own history holds its input).
  const gates = [];
  for await (const wf of env.client.workflow.list({ query: `WorkflowType = "exampleGate"` })) {
    if (wf.workflowId.includes(`/${env.namespace}/gated/`)) gates.push(wf);
  }
  expect(gates).toHaveLength(1);
  const gateResult = (await env.client.workflow.getHandle(gates[0]!.workflowId).result()) as {
    input?: { token?: string };
  };
  expect(gateResult.input?.token).toBe(value);

  // The controller's history holds the Secret's name, not its value (payloads decoded: they are bytes).
  const history = payloadText(await workflowHandle(env, 'gated').fetchHistory());
  expect(history).toContain('gate-input');
  expect(history).not.toContain(value);
});

/** Every payload of a history, decoded as UTF-8 and joined: what a person reading the history could see. */
function payloadText(node: unknown, out: string[] = []): string {
  if (node instanceof Uint8Array) out.push(Buffer.from(node).toString('utf8'));
  else if (Array.isArray(node)) for (const item of node) payloadText(item, out);
  else if (node && typeof node === 'object') for (const value of Object.values(node)) payloadText(value, out);
  else if (typeof node === 'string') out.push(node);
  return out.join('\n');
}
