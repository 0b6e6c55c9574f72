/**
 * The command line, parsed by commander into an `Invocation`: what to do, with which flags. Pure (nothing is
 * connected or run here), so every command's arguments, help and usage errors are unit-tested.
 */
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { parseDuration } from '../api/duration.js';
import type { ControlName } from '../workflows/messages.js';
import { CliError, ExitCode, exitCodesHelp } from './exit-codes.js';
import { outputFormats, type OutputFormat } from './render.js';

/** The flags every command takes: kubectl's, `--output`, and the overrides of Temporal's environment config. */
export interface GlobalOptions {
  namespace?: string;
  allNamespaces: boolean;
  kubeconfig?: string;
  context?: string;
  output: OutputFormat;
  color: boolean;
  temporalAddress?: string;
  temporalNamespace?: string;
  temporalProfile?: string;
  temporalConfigFile?: string;
}

export type Invocation =
  | { command: 'help'; text: string }
  | { command: 'status'; resource?: string; watch: boolean; intervalMs: number; globals: GlobalOptions }
  | { command: 'list'; globals: GlobalOptions }
  | { command: 'history'; resource: string; globals: GlobalOptions }
  | { command: ControlName; resource: string; reason?: string; full?: boolean; to?: string; globals: GlobalOptions };

/** The controls, in the order `--help` lists them, with what each does. */
const controls: { name: ControlName; summary: string; description: string; example: string }[] = [
  {
    name: 'pause',
    summary: 'hold the rollout where it is',
    description: 'hold the rollout where it is (a running step pause stops counting)',
    example: 'pause prod/orders "looking at errors"',
  },
  {
    name: 'resume',
    summary: 'lift a pause',
    description:
      'lift a pause (after a failed gate under gateFailurePolicy Pause: run the gate again; a Blocked rollout: try again)',
    example: 'resume prod/orders',
  },
  {
    name: 'promote',
    summary: 'end the step waiting for promotion (--full: make the target current)',
    description:
      'end the step waiting for promotion (Manual: the go-ahead); --full: make the target current now, skipping the remaining steps',
    example: 'promote prod/orders --full "error rate flat"',
  },
  {
    name: 'abort',
    summary: 'stop the rollout; current stays current',
    description: 'stop: the target gets no new work and is sunset; current stays current',
    example: 'abort prod/orders "p99 doubled"',
  },
  {
    name: 'rollback',
    summary: 'route back to the build current before (or --to BUILD)',
    description:
      'route back at once, all at once, to the build current before (or --to BUILD); during a rollout: abort the target',
    example: 'rollback prod/orders --to 1.4.2-3fa9c01b77d2 "p99 doubled"',
  },
  {
    name: 'retry',
    summary: 'roll an aborted build out again, or rerun a failed gate',
    description: 'roll an aborted or rolled back build out again, or run a failed gate or analysis again',
    example: 'retry prod/orders "gate fixed"',
  },
];

const resourceHelp =
  'NAMESPACE/NAME of a TemporalWorkerDeployment, or NAME in the namespace -n or the kube context gives';

const connectionHelp = [
  'Connection:',
  '  Kubernetes as kubectl: --kubeconfig, else $KUBECONFIG, else ~/.kube/config; --context, else the current',
  '  context; -n, else the context\'s namespace, else "default".',
  "  Temporal (the controller's own, where the rollouts run) as the temporal CLI: the profile TEMPORAL_PROFILE",
  '  (else "default") of TEMPORAL_CONFIG_FILE (else ~/.config/temporalio/temporal.toml), overridden by',
  '  TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH,',
  '  TEMPORAL_TLS_CLIENT_KEY_PATH, TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME (and their _DATA',
  '  forms), TEMPORAL_GRPC_META_*, then by the --temporal-* flags. Default: localhost:7233, namespace "glidepath".',
].join('\n');

function milliseconds(text: string): number {
  try {
    const ms = parseDuration(text);
    if (ms < 100) throw new Error('at least 100ms');
    return ms;
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** The reason words, joined (`pause prod/orders looking at errors` is the reason "looking at errors"). */
const reasonOf = (words: string[] | undefined) => (words?.length ? words.join(' ') : undefined);

/** Where the program's output (help, errors) goes; `helpWidth` fixes the help's width instead of the terminal's. */
export interface ProgramOutput {
  out: (s: string) => void;
  err: (s: string) => void;
  helpWidth?: number;
}

/**
 * The program, with `onInvocation` called by the command that runs. Output (help, errors) goes to `write`.
 * @param name `glidepath`, or `kubectl glidepath` when run as the kubectl plugin
 */
export function cliProgram(name: string, onInvocation: (i: Invocation) => void, write: ProgramOutput): Command {
  // With a fixed width the help is the same on any terminal, or none (docs/cli-reference.md is made of it).
  const fixed = write.helpWidth;
  const program = new Command(name)
    .description("Watch and steer Glidepath rollouts: each TemporalWorkerDeployment's RolloutWorkflow in Temporal.")
    .exitOverride()
    .configureOutput({
      writeOut: write.out,
      writeErr: write.err,
      ...(fixed
        ? {
            getOutHelpWidth: () => fixed,
            getErrHelpWidth: () => fixed,
            getOutHasColors: () => false,
            getErrHasColors: () => false,
          }
        : {}),
    })
    .configureHelp({ showGlobalOptions: true })
    .showSuggestionAfterError()
    .helpCommand('help [command]', 'show help for a command')
    .addOption(
      new Option('-n, --namespace <namespace>', 'Kubernetes namespace (default: the kube context\'s, else "default")'),
    )
    .addOption(new Option('-A, --all-namespaces', 'every namespace (status, list)').default(false))
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)'))
    .addOption(new Option('--context <name>', 'kube context (default: the current one)'))
    .addOption(new Option('-o, --output <format>', 'output format').choices(outputFormats).default('table'))
    .addOption(new Option('--no-color', 'no colours (also: NO_COLOR set, or not a terminal)'))
    .addOption(
      new Option(
        '--temporal-address <host:port>',
        "the controller's Temporal (default: TEMPORAL_ADDRESS, the profile, localhost:7233)",
      ),
    )
    .addOption(
      new Option(
        '--temporal-namespace <namespace>',
        'its namespace (default: TEMPORAL_NAMESPACE, the profile, "glidepath")',
      ),
    )
    .addOption(
      new Option(
        '--temporal-profile <name>',
        'profile of the Temporal config file (default: TEMPORAL_PROFILE, "default")',
      ),
    )
    .addOption(
      new Option(
        '--temporal-config-file <path>',
        'Temporal config file (default: TEMPORAL_CONFIG_FILE, ~/.config/temporalio/temporal.toml)',
      ),
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        `  ${name} status                       every rollout in the namespace, once`,
        `  ${name} status prod/orders --watch   one rollout, live: ramp, step, time left, versions`,
        `  ${name} status -A -o yaml            every namespace, as YAML`,
        `  ${name} promote prod/orders --full "error rate flat"`,
        `  ${name} history prod/orders`,
        '',
        connectionHelp,
        '',
        exitCodesHelp,
      ].join('\n'),
    );
  // The program's own options, wherever they stood on the line (commander keeps a subcommand's apart).
  const globals = (cmd: Command) => (cmd.parent ?? cmd).opts() as GlobalOptions;
  const footer = (examples: string[]) =>
    ['', 'Examples:', ...examples.map((e) => `  ${name} ${e}`), '', exitCodesHelp].join('\n');

  program
    .command('status')
    .summary('the rollout, live with --watch: ramp, step, time left, versions')
    .description(
      'the rollout as its workflow sees it: phase, ramp and step with a progress bar, the time left in the step, the versions with their drainage and open executions',
    )
    .argument('[resource]', `${resourceHelp}; without it, every resource in the namespace (-A: in every namespace)`)
    .option('-w, --watch', 'keep the view up to date (q or Ctrl-C to quit)', false)
    .addOption(
      new Option('--interval <duration>', 'how often --watch refreshes').default(1000, '1s').argParser(milliseconds),
    )
    .addHelpText(
      'after',
      footer(['status prod/orders', 'status prod/orders -w', 'status -A', 'status orders -n prod -o json']),
    )
    .action((resource: string | undefined, opts: { watch: boolean; interval: number }, cmd: Command) =>
      onInvocation({
        command: 'status',
        ...(resource ? { resource } : {}),
        watch: opts.watch,
        intervalMs: opts.interval,
        globals: globals(cmd),
      }),
    );

  program
    .command('list')
    .summary('running rollouts with their phase and builds')
    .description(
      "running rollouts with their phase and builds (one call to Temporal's visibility; -A: every namespace)",
    )
    .addHelpText('after', footer(['list', 'list -A -o json']))
    .action((_opts: object, cmd: Command) => onInvocation({ command: 'list', globals: globals(cmd) }));

  program
    .command('history')
    .summary('who did what and why')
    .description('who did what and why: the controls taken and refused, and the phase transitions, oldest first')
    .argument('<resource>', resourceHelp)
    .addHelpText('after', footer(['history prod/orders', 'history prod/orders -o yaml']))
    .action((resource: string, _opts: object, cmd: Command) =>
      onInvocation({ command: 'history', resource, globals: globals(cmd) }),
    );

  for (const c of controls) {
    const cmd = program
      .command(c.name)
      .summary(c.summary)
      .description(
        `${c.description}.\nAnswers with the resulting phase once the control took effect, or "refused: <why>" (exit 1).`,
      )
      .argument('<resource>', resourceHelp)
      .argument('[reason...]', 'why, recorded in the history and the Event (the rest of the line)');
    if (c.name === 'promote') cmd.option('--full', 'make the target current now, skipping the remaining steps', false);
    if (c.name === 'rollback')
      cmd.option('--to <build>', 'the build to route back to (default: the one current before)');
    cmd
      .addHelpText('after', footer([c.example]))
      .action((resource: string, words: string[], opts: { full?: boolean; to?: string }, command: Command) =>
        onInvocation({
          command: c.name,
          resource,
          ...(reasonOf(words) ? { reason: reasonOf(words) } : {}),
          ...(opts.full ? { full: true } : {}),
          ...(opts.to ? { to: opts.to } : {}),
          globals: globals(command),
        }),
      );
  }
  return program;
}

/**
 * What the command line asks for. `--help` (and `help CMD`, and no command at all) is a `help` invocation
 * with its text (`helpWidth` columns wide when given, else the terminal's); a usage error is a CliError with exit
 * code 2 and commander's message.
 */
export async function parseInvocation(argv: string[], name = 'glidepath', helpWidth?: number): Promise<Invocation> {
  const out: string[] = [];
  const err: string[] = [];
  const got: { invocation?: Invocation } = {};
  const program = cliProgram(name, (i) => (got.invocation = i), {
    out: (s) => out.push(s),
    err: (s) => err.push(s),
    ...(helpWidth ? { helpWidth } : {}),
  });
  if (!argv.length) return { command: 'help', text: program.helpInformation() };
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    if (e instanceof CommanderError && e.exitCode === 0) return { command: 'help', text: out.join('') };
    if (e instanceof CommanderError) {
      const message = (err.join('') || e.message).trimEnd();
      throw new CliError(`${message}\n(see ${name} --help)`, ExitCode.Usage);
    }
    throw e;
  }
  return got.invocation ?? { command: 'help', text: program.helpInformation() };
}
