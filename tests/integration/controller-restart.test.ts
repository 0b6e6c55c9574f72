/**
 * The controller is a plain process: killed with SIGKILL during a pause and started again, the rollout goes
 * on at the same step (the pause timer is durable), no step is repeated and no Deployment is duplicated.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Labels } from '../../kube/versioned-deployment.js';
import { completedActivities } from '../../scripts/history.js';
import {
  apply,
  deployments,
  eventually,
  resource,
  routing,
  routingCallTimes,
  routingCalls,
  startRolloutEnv,
  twdStatus,
  workflowHandle,
  type RolloutEnv,
} from '../harness/rollout-env.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
let env: RolloutEnv;
let controller: ChildProcess | undefined;

/** Starts `worker/main.ts` (what `npm start` runs) for this test's namespace; resolves once it is watching. */
function startControllerProcess(): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'worker/main.ts',
      '--namespace',
      env.namespace,
      '--task-queue',
      `glidepath-${env.namespace}`,
      '--metrics-bind-address=0',
      '--health-probe-bind-address=0',
    ],
    {
      cwd: root,
      env: { ...process.env, NODE_OPTIONS: '', GLIDEPATH_DRAIN_POLL_MAX: '1000' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`controller did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('glidepath controller running')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`controller exited with ${code}:\n${output}`)));
  });
}

beforeAll(async () => {
  env = await startRolloutEnv('restart', { inProcessController: false });
  controller = await startControllerProcess();
});
afterAll(async () => {
  controller?.kill('SIGKILL');
  await env?.stop();
});

test('SIGKILL during a pause: after a restart the rollout continues at the same step, nothing repeated or duplicated', async () => {
  const steps = [
    { rampPercentage: 20, pauseDuration: '6s' },
    { rampPercentage: 60, pauseDuration: '2s' },
  ];
  await apply(env, resource(env, 'svc', { strategy: 'Progressive', steps, env: { VERSION: 'v1' } }));
  const v1 = await eventually('v1 current', async () => (await twdStatus(env, 'svc'))?.currentVersion?.buildID);

  await apply(env, resource(env, 'svc', { strategy: 'Progressive', steps, env: { VERSION: 'v2' } }));
  const seen: { percentage: number; at: number }[] = [];
  const record = async () => {
    const r = await routing(env, 'svc');
    if (r.ramping && seen.at(-1)?.percentage !== r.percentage) seen.push({ percentage: r.percentage, at: Date.now() });
    return r;
  };
  await eventually('the first step', async () => (await record()).percentage === 20);
  const before = await deployments(env, 'svc');

  await new Promise((r) => setTimeout(r, 1000));
  controller!.kill('SIGKILL');
  await new Promise((r) => controller!.once('exit', r));
  controller = await startControllerProcess();

  const v2 = await eventually(
    'v2 current',
    async () => {
      const r = await record();
      return r.current && r.current !== v1 ? r.current : undefined;
    },
    60_000,
    50,
  );
  // What the rollout did is read in its history (the set-current's completion is recorded moments after the server
  // routes to v2); what polling saw of the server (it may miss a short step) never went back or repeated a step.
  const v2Calls = await eventually(
    'the set-current in the history',
    async () => {
      const calls = (await routingCalls(env, 'svc')).filter((c) => c.buildId === v2);
      return calls.some((c) => c.call === 'setCurrent') ? calls : undefined;
    },
    30_000,
    200,
  );
  expect(v2Calls).toEqual([
    { call: 'setRamping', buildId: v2, percentage: 20 },
    { call: 'setRamping', buildId: v2, percentage: 60 },
    { call: 'setCurrent', buildId: v2 },
  ]);
  const percentages = seen.map((s) => s.percentage);
  expect(percentages[0]).toBe(20);
  expect(percentages.every((p, i) => i === 0 || p > percentages[i - 1]!)).toBe(true);
  expect(percentages.every((p) => p === 20 || p === 60)).toBe(true);
  // Never early (on the server's clock), and not started over after the restart: one timer for the first step.
  const { starts, ends } = await routingCallTimes(env, 'svc', 3); // 2 ramps + set current
  expect(starts[1]! - ends[0]!).toBeGreaterThanOrEqual(6000);

  const after = await deployments(env, 'svc');
  expect([...after.keys()].filter((b) => b === v2)).toHaveLength(1);
  expect(after.get(v2)!.metadata!.uid).toBe(before.get(v2)!.metadata!.uid);
  expect([...after.values()].every((d) => d.metadata!.labels![Labels.workerDeployment] === 'svc')).toBe(true);

  // The history shows each step's routing change exactly once.
  const history = await workflowHandle(env, 'svc').fetchHistory();
  const rampCalls = completedActivities(history.events ?? []).filter((a) => a.type === 'setRamping');
  expect(rampCalls).toHaveLength(2);
  const stepTimers = (history.events ?? []).filter(
    (e) => Number(e.timerStartedEventAttributes?.startToFireTimeout?.seconds ?? 0) === 6,
  );
  expect(stepTimers).toHaveLength(1);
  expect(env.violations).toEqual([]);
});
