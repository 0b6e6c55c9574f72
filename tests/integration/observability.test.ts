/**
 * The controller process as an operator sees it: `/healthz` and `/readyz`, `/metrics` with the SDK's `temporal_…`
 * and Glidepath's `glidepath_…` metrics after a real rollout, JSON log lines that name the resource, and the
 * Grafana dashboard's queries naming only metrics the controller serves.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../scripts/servers/processes.js';
import { rolloutWorkflowId } from '../../api/names.js';
import { apply, eventually, resource, startRolloutEnv, twdStatus, type RolloutEnv } from '../harness/rollout-env.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dashboard = JSON.parse(
  readFileSync(new URL('../../k8s-manifests/grafana/glidepath-dashboard.json', import.meta.url), 'utf8'),
) as { panels: { title: string; targets: { expr: string }[] }[] };

let env: RolloutEnv;
let controller: ChildProcess | undefined;
let exited: Promise<number | null>;
let stdout = '';
let stderr = '';
let metricsPort: number;
let probePort: number;

const get = async (port: number, path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: res.status, body: await res.text() };
};
/** Metric name → its sample lines, from one scrape. */
async function scrape(): Promise<Map<string, string[]>> {
  const samples = new Map<string, string[]>();
  for (const line of (await get(metricsPort, '/metrics')).body.split('\n')) {
    const name = /^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]/.exec(line)?.[1];
    if (name) samples.set(name, [...(samples.get(name) ?? []), line]);
  }
  return samples;
}
/** The value of the first sample of `name` whose labels include every `labels` pair. */
function value(samples: Map<string, string[]>, name: string, labels: Record<string, string>): number | undefined {
  const line = samples.get(name)?.find((l) => Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

beforeAll(async () => {
  env = await startRolloutEnv('observe', { inProcessController: false });
  [metricsPort, probePort] = [await freePort(), await freePort()];
  controller = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'worker/main.ts',
      '--namespace',
      env.namespace,
      '--task-queue',
      `glidepath-${env.namespace}`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
      '--log-format=json',
    ],
    {
      cwd: root,
      env: { ...process.env, NODE_OPTIONS: '', GLIDEPATH_LOG_LEVEL: 'INFO' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  exited = new Promise((resolve) => controller!.once('exit', (code) => resolve(code)));
  controller.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  controller.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
});
afterAll(async () => {
  controller?.kill('SIGKILL');
  await env?.stop();
});

test('the probes: live from the start, ready once the controller runs', async () => {
  // The probe server starts before the workflow bundle is built, so liveness answers during a slow start.
  expect(
    (await eventually('/healthz answers', () => get(probePort, '/healthz').catch(() => undefined), 60_000)).status,
  ).toBe(200);
  await eventually('/readyz 200', async () => (await get(probePort, '/readyz')).status === 200, 120_000);
  expect(stdout).toContain('glidepath controller running');
  expect((await get(probePort, '/nothing')).status).toBe(404);
});

test("after a rollout /metrics has the rollout counters, durations and gauges for the resource, and the SDK's own", async () => {
  await apply(env, resource(env, 'obs', { env: { VERSION: 'v1' } }));
  const v1 = await eventually('v1 current', async () => (await twdStatus(env, 'obs'))?.currentVersion?.buildID, 60_000);
  await apply(
    env,
    resource(env, 'obs', {
      strategy: 'Progressive',
      steps: [{ rampPercentage: 30, pauseDuration: '1s' }],
      env: { VERSION: 'v2' },
    }),
  );
  await eventually(
    'v2 current',
    async () => {
      const s = await twdStatus(env, 'obs');
      return s?.phase === 'Ready' && s.currentVersion?.buildID !== v1;
    },
    90_000,
  );

  const ours = { resource_namespace: env.namespace, resource_name: 'obs' };
  // Emitted on the workflow's next task completion, the gauges on the watcher's next sighting: wait for them.
  const samples = await eventually(
    'the rollout metrics',
    async () => {
      const s = await scrape();
      return (value(s, 'glidepath_rollouts_completed_total', ours) ?? 0) >= 2 &&
        value(s, 'glidepath_rollout_phase', { ...ours, phase: 'Ready' }) === 1
        ? s
        : undefined;
    },
    30_000,
  );
  expect(value(samples, 'glidepath_rollouts_started_total', ours)).toBe(2);
  expect(value(samples, 'glidepath_step_transitions_total', ours)).toBe(1);
  // Transitions and durations by the resource's namespace only (one resource in it here); no resource_name label.
  const namespaceOnly = { resource_namespace: env.namespace };
  expect(value(samples, 'glidepath_transitions_total', { ...namespaceOnly, phase: 'Ramping', reason: 'Ramping' })).toBe(
    1,
  );
  expect(value(samples, 'glidepath_rollout_duration_seconds_count', namespaceOnly)).toBe(2);
  expect(value(samples, 'glidepath_rollout_duration_seconds_sum', namespaceOnly)).toBeGreaterThan(1); // the 1 s pause at least
  expect(value(samples, 'glidepath_phase_duration_seconds_count', { ...namespaceOnly, phase: 'Ramping' })).toBe(1);
  expect(samples.get('glidepath_phase_duration_seconds_count')?.some((l) => l.includes('resource_name='))).toBe(false);
  // Only the phases it has been in have a series: Ready at 1, every phase it left at 0.
  const phases = (samples.get('glidepath_rollout_phase') ?? []).filter(
    (l) => l.includes(`resource_namespace="${env.namespace}"`) && l.includes('resource_name="obs"'),
  );
  const byPhase = Object.fromEntries(phases.map((l) => [/phase="(\w+)"/.exec(l)![1], Number(l.split(' ').at(-1))]));
  expect(byPhase.Ready).toBe(1);
  expect(Object.entries(byPhase).filter(([phase, v]) => phase !== 'Ready' && v !== 0)).toEqual([]);
  expect(Object.keys(byPhase).length).toBeGreaterThan(1); // phases it passed through are there, at 0
  expect(byPhase.InvalidSpec).toBeUndefined();
  expect(value(samples, 'glidepath_rollout_ramp_percentage', ours)).toBe(0);
  expect(value(samples, 'glidepath_rollouts_aborted_total', {})).toBe(0); // counted from 0, not absent
  expect([...samples.keys()].filter((n) => n.startsWith('temporal_')).length).toBeGreaterThan(5);
  // Every request the controller sends is counted where it is sent: its clients' (the watcher's signal-with-start,
  // the activities' routing calls) by Glidepath, the workers' by the Temporal core.
  expect(
    value(samples, 'glidepath_temporal_requests_total', { operation: 'SignalWithStartWorkflowExecution' }),
  ).toBeGreaterThanOrEqual(1);
  expect(
    value(samples, 'glidepath_temporal_requests_total', { operation: 'SetWorkerDeploymentCurrentVersion' }),
  ).toBeGreaterThanOrEqual(1);
  expect(value(samples, 'temporal_request', { operation: 'RespondWorkflowTaskCompleted' })).toBeGreaterThanOrEqual(2);
  expect(value(samples, 'temporal_long_request', { operation: 'PollWorkflowTaskQueue' })).toBeGreaterThanOrEqual(2);
});

test('every line the controller prints is a JSON object with time, level and message; lines about the rollout name it', () => {
  const lines = stdout.split('\n').filter(Boolean);
  expect(lines.length).toBeGreaterThan(2);
  const records = lines.map((l) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch {
      throw new Error(`not a JSON line: ${l}`);
    }
  });
  for (const r of records) expect(Object.keys(r).slice(0, 3)).toEqual(['ts', 'level', 'msg']);
  const aboutOurs = records.filter((r) => r.workflowId === rolloutWorkflowId(env.installation, env.namespace, 'obs'));
  expect(aboutOurs.length).toBeGreaterThan(0);
  for (const r of aboutOurs) expect(r.resource).toBe(`${env.namespace}/obs`);
  expect(aboutOurs.some((r) => typeof r.buildId === 'string')).toBe(true);
});

test('the Grafana dashboard queries only metrics the controller serves', async () => {
  const served = new Set((await scrape()).keys());
  const named = new Set(
    dashboard.panels.flatMap((p) =>
      p.targets.flatMap((t) => t.expr.match(/\b(?:glidepath|temporal)_[a-z_]+\b/g) ?? []),
    ),
  );
  expect(named.size).toBeGreaterThan(8);
  expect([...named].filter((name) => !served.has(name))).toEqual([]);
});

test('SIGTERM stops the controller cleanly (exit 0)', async () => {
  controller!.kill('SIGTERM');
  expect(await exited).toBe(0);
  expect(stderr).not.toMatch(/Error/);
});
