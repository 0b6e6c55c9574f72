/**
 * The CLI as a person uses it: typed into a shell in a real pseudo-terminal (tmux, 160×50), against a live
 * Progressive rollout (real kube-apiserver, Temporal dev server, the controller, simulated pods), and judged by
 * what the screen shows. `glidepath` and `kubectl-glidepath` on the shell's PATH are the package's own bins,
 * linked as `npm link` would, in a copy of the package without dist/ so they run this checkout's source.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import {
  apply,
  eventually,
  resource,
  startRolloutEnv,
  taskQueueOf,
  twdStatus,
  type RolloutEnv,
} from '../harness/rollout-env.js';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const steps = [
  { rampPercentage: 25, pauseDuration: '12s' },
  { rampPercentage: 60, pauseDuration: '1h' },
];

/** A tmux server of our own (its own socket), a shell per window, and what their screens show. */
class Terminal {
  private commands = 0;

  constructor(
    private readonly socket: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  tmux(...args: string[]): string {
    const res = spawnSync('tmux', ['-L', this.socket, '-f', '/dev/null', ...args], { env: this.env, encoding: 'utf8' });
    if (res.error) throw new Error(`tmux: ${res.error.message} (install it: scripts/servers/debian-packages.sh tmux)`);
    if (res.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${res.stderr}`);
    return res.stdout;
  }

  /** A window running a shell, 160×50. */
  open(window: string): void {
    const shell = ['bash', '--norc', '--noprofile'];
    if (this.commands === 0 && !this.hasServer())
      this.tmux('new-session', '-d', '-x', '160', '-y', '50', '-s', 'cli', '-n', window, ...shell);
    else this.tmux('new-window', '-d', '-t', 'cli', '-n', window, ...shell);
    this.commands++;
  }

  private hasServer(): boolean {
    return spawnSync('tmux', ['-L', this.socket, 'has-session', '-t', 'cli'], { env: this.env }).status === 0;
  }

  /** Types a line and presses Enter, as a person would. */
  type(window: string, line: string): void {
    this.tmux('send-keys', '-t', `cli:${window}`, '-l', line);
    this.tmux('send-keys', '-t', `cli:${window}`, 'Enter');
  }

  key(window: string, key: string): void {
    this.tmux('send-keys', '-t', `cli:${window}`, key);
  }

  /** What the window shows now (wrapped lines joined). */
  screen(window: string): string {
    return this.tmux('capture-pane', '-p', '-J', '-t', `cli:${window}`);
  }

  /** Everything the window showed, scrollback included. */
  scrollback(window: string): string {
    return this.tmux('capture-pane', '-p', '-J', '-S', '-', '-t', `cli:${window}`);
  }

  /** Polls the screen until `test` finds what it looks for; fails with the screen as it was. */
  async waitFor<T>(
    window: string,
    what: string,
    test: (screen: string) => T | null | undefined | false,
    timeoutMs = 30_000,
  ): Promise<T> {
    let last = '';
    try {
      return await eventually(what, () => test((last = this.screen(window))) ?? undefined, timeoutMs, 200);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n--- the screen of ${window}:\n${last}`);
    }
  }

  /** Types `command`, waits until it exits, and returns what it printed and its exit code. */
  async run(window: string, command: string, timeoutMs = 30_000): Promise<{ output: string; code: number }> {
    const n = ++this.commands;
    const tail = `; echo "exit ${n}: $?"`;
    this.type(window, `${command}${tail}`);
    const done = new RegExp(`^exit ${n}: (\\d+)$`, 'm');
    let all = '';
    const code = await eventually(
      `"${command}" to exit`,
      () => {
        const m = done.exec((all = this.scrollback(window)));
        return m ? Number(m[1]) : undefined;
      },
      timeoutMs,
      200,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n--- the screen of ${window}:\n${all.split('\n').slice(-50).join('\n')}`);
    });
    const lines = all.split('\n');
    const start = lines.findIndex((l) => l.endsWith(tail));
    const end = lines.findIndex((l) => done.test(l));
    return { output: lines.slice(start + 1, end).join('\n'), code };
  }

  kill(): void {
    spawnSync('tmux', ['-L', this.socket, 'kill-server'], { env: this.env });
  }
}

let env: RolloutEnv;
let term: Terminal;
let linked: string;
let target: string;
let v1 = '';
let pinned: WorkflowHandle | undefined;

beforeAll(async () => {
  env = await startRolloutEnv('cli-term');
  target = `${env.namespace}/orders`;
  // `npm link` of the package without dist/: the bins on PATH, running the source through tsx.
  linked = mkdtempSync(join(tmpdir(), 'glidepath-cli-'));
  const pkg = join(linked, 'package');
  mkdirSync(join(pkg, 'bin'), { recursive: true });
  for (const file of ['launch.js', 'glidepath.js', 'kubectl-glidepath.js'])
    copyFileSync(join(repo, 'bin', file), join(pkg, 'bin', file));
  copyFileSync(join(repo, 'package.json'), join(pkg, 'package.json'));
  for (const dir of ['cli', 'node_modules']) symlinkSync(join(repo, dir), join(pkg, dir));
  const path = join(linked, 'path');
  mkdirSync(path);
  symlinkSync(join(pkg, 'bin', 'glidepath.js'), join(path, 'glidepath'));
  symlinkSync(join(pkg, 'bin', 'kubectl-glidepath.js'), join(path, 'kubectl-glidepath'));

  const { NODE_OPTIONS: _jestsOwn, ...inherited } = process.env;
  const kubectl = process.env.GLIDEPATH_KUBECTL ? [dirname(process.env.GLIDEPATH_KUBECTL)] : [];
  term = new Terminal(`glidepath-cli-${process.pid}-${randomBytes(3).toString('hex')}`, {
    ...inherited,
    PATH: [path, ...kubectl, process.env.PATH].join(':'),
    PS1: '$ ',
    HOME: linked, // no ~/.kube/config or temporal.toml of the machine's: the environment says where
    KUBECONFIG: process.env.KUBECONFIG,
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    TEMPORAL_NAMESPACE: process.env.TEMPORAL_NAMESPACE ?? 'default',
  });
  term.open('main');
  term.open('watch');

  // v1 current with a workflow pinned to it, then v2 rolling out Progressive.
  await apply(env, resource(env, 'orders', { strategy: 'Progressive', steps, env: { VERSION: 'v1' } }));
  v1 = await eventually('v1 current', async () => {
    const s = await twdStatus(env, 'orders');
    return s?.phase === 'Ready' ? s.currentVersion?.buildID : undefined;
  });
  pinned = await env.client.workflow.start('exampleWork', {
    taskQueue: taskQueueOf(env, 'orders'),
    workflowId: `${env.namespace}-pinned`,
  });
  await eventually(
    'the pinned workflow on v1',
    async () => (await pinned!.describe()).raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId === v1,
  );
}, 120_000);

afterAll(async () => {
  term?.kill();
  await pinned?.terminate('test over').catch(() => {});
  await env?.stop();
  if (linked) rmSync(linked, { recursive: true, force: true });
});

afterEach(() => {
  expect(env.violations).toEqual([]);
});

test('kubectl glidepath --help: the plugin runs through kubectl, each command documents itself and the exit codes', async () => {
  const { output, code } = await term.run('main', 'kubectl glidepath status --help');
  expect(code).toBe(0);
  expect(output).toContain('Usage: kubectl glidepath status [options] [resource]');
  expect(output).toContain('-w, --watch');
  expect(output).toMatch(
    /Exit codes:\n {2}0 {2}ok\n {2}1 {2}refused or failed.*\n {2}2 {2}usage error.*\n {2}3 {2}not found.*\n {2}4 {2}cannot connect/,
  );

  const usage = await term.run('main', 'glidepath frob');
  expect(usage.code).toBe(2);
  expect(usage.output).toContain("unknown command 'frob'");
});

test('status --watch: the progress bar and ramp % of a Progressive rollout, the time left counting down, updating as the rollout moves', async () => {
  await apply(env, resource(env, 'orders', { strategy: 'Progressive', steps, env: { VERSION: 'v2' } }));
  term.type('watch', `glidepath status ${target} --watch; echo "watch exited: $?"`);

  // Step 1: a quarter of the bar, 25 %, the seconds left in the 12 s step, the versions with v1's pinned execution.
  const first = await term.waitFor(
    'watch',
    'step 1 at 25%',
    (s) => /ramp {4}(█+)(░+) {4}25% {3}step 1 of 2 · (\d+)s left of 12s/.exec(s),
    60_000,
  );
  expect(first[1]!.length).toBe(10); // 25 % of 40 cells
  expect(first[2]!.length).toBe(30);
  const screen = term.screen('watch');
  expect(screen).toContain(`${target}   Ramping   Progressive, generation 2`);
  expect(screen).toContain('steps   25% ◀ › 60% › 100%');
  expect(screen).toMatch(/BUILD +ROLE +STATUS +TRAFFIC +OPEN +SINCE/);
  expect(screen).toMatch(new RegExp(`${v1} +current +Current +75% +1\\b`)); // the pinned workflow
  expect(screen).toMatch(/ +target +Ramping +25% +0 +\d+s/);

  // The clock counts down on the screen without anything typed.
  const left = Number(first[3]);
  await term.waitFor('watch', 'the time left to count down', (s) => {
    const m = /step 1 of 2 · (\d+)s left/.exec(s);
    return m && Number(m[1]) < left;
  });

  // Then the rollout moves on: step 2, 60 %, the bar longer.
  const second = await term.waitFor(
    'watch',
    'step 2 at 60%',
    (s) => /ramp {4}(█+)(░+) {4}60% {3}step 2 of 2 · (?:59m\d+s|1h0?m?\d*s?) left of 1h/.exec(s),
    30_000,
  );
  expect(second[1]!.length).toBe(24);
  expect(term.screen('watch')).toMatch(new RegExp(`${v1} +current +Current +40% +1\\b`));
  expect(term.screen('watch')).toContain('steps   25% ✔ › 60% ◀ › 100%');
});

test('pause from another terminal answers with the phase; the watch shows it paused; a second pause is refused (exit 1); q quits the watch', async () => {
  const paused = await term.run('main', `glidepath pause ${target} looking at errors`);
  expect(paused.code).toBe(0);
  expect(paused.output).toMatch(
    new RegExp(`^paused ${target}: Paused — Paused \\(.* left in step 2/2\\): looking at errors$`, 'm'),
  );

  await term.waitFor(
    'watch',
    'the watch to show Paused',
    (s) => s.includes(`${target}   Paused`) && /60% {3}step 2 of 2 · paused with \S+ left of 1h/.test(s),
  );

  const again = await term.run('main', `glidepath pause ${target}`);
  expect(again.code).toBe(1);
  expect(again.output).toMatch(/^refused: .*paused/m);

  term.key('watch', 'q');
  await term.waitFor('watch', 'the watch to end with exit code 0', (s) => /^watch exited: 0$/m.test(s));
});

test('status -o json: the same view as data a script can parse', async () => {
  const { output, code } = await term.run('main', `glidepath status ${target} -o json`);
  expect(code).toBe(0);
  const view = JSON.parse(output) as {
    phase: string;
    paused: boolean;
    step: { number: number; count: number; rampPercentage: number };
    rampPercentage: number;
    versions: { buildId: string; role: string; traffic: number; openExecutions: number }[];
  };
  expect(view).toMatchObject({
    phase: 'Paused',
    paused: true,
    rampPercentage: 60,
    step: { number: 2, count: 2, rampPercentage: 60 },
  });
  expect(view.versions).toContainEqual(
    expect.objectContaining({ buildId: v1, role: 'current', traffic: 40, openExecutions: 1 }),
  );

  const history = await term.run('main', `glidepath history ${target} -o yaml`);
  expect(history.code).toBe(0);
  expect(history.output).toMatch(
    /- at: \S+\n {2}kind: control\n {2}what: pause\n {2}who: \S+.*\n {2}why: looking at errors/,
  );
});

test('an unknown resource: the not-found exit code, saying what was looked for', async () => {
  const { output, code } = await term.run('main', `glidepath status ${env.namespace}/nope`);
  expect(code).toBe(3);
  expect(output).toContain(`${env.namespace}/nope: no TemporalWorkerDeployment or WorkerDeployment of that name`);

  const listed = await term.run('main', `glidepath list -n ${env.namespace}`);
  expect(listed.code).toBe(0);
  expect(listed.output).toMatch(new RegExp(`^${env.namespace} +orders +Paused +${v1} +\\S+ +\\S+$`, 'm'));
});
