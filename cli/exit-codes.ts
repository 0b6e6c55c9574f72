/**
 * What the CLI's exit code says, for scripts: one small vocabulary, documented in `--help` and docs/controls.md
 * ("Exit codes").
 * Pure: which code an error means is decided here from its shape, never from where it was thrown.
 */
import * as k8s from '@kubernetes/client-node';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, isGrpcServiceError } from '@temporalio/client';
import { CommanderError } from 'commander';

export const ExitCode = {
  /** Done: the answer is printed. */
  Ok: 0,
  /** A control was refused (`refused: <why>`), or the command failed for another reason it names. */
  Failed: 1,
  /** The command line is wrong (unknown command or flag, a bad `ns/name`, a Temporal profile that does not exist). */
  Usage: 2,
  /** No such resource or rollout workflow. */
  NotFound: 3,
  /** Temporal or Kubernetes could not be reached, or refused our credentials; or no controller answers for the rollout. */
  CannotConnect: 4,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** The `Exit codes:` section of every command's `--help`. */
export const exitCodesHelp = [
  'Exit codes:',
  '  0  ok',
  '  1  refused or failed (a control the rollout refused prints "refused: <why>")',
  '  2  usage error (unknown command or flag, bad NAMESPACE/NAME, unknown Temporal profile)',
  '  3  not found (no such resource or rollout)',
  '  4  cannot connect: Temporal or Kubernetes unreachable or refusing the credentials, or no controller answering',
].join('\n');

/** An error whose exit code is known where it is thrown. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** gRPC status codes that mean the server was not reached, or did not let us in. */
const grpcCannotConnect = new Set([
  14, // UNAVAILABLE
  16, // UNAUTHENTICATED
  7, // PERMISSION_DENIED
]);
/** Node's network errors. */
const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The error, or one of its causes, that satisfies `test`. */
export function findCause(err: unknown, test: (e: unknown) => boolean): unknown {
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (test(e)) return e;
  }
  return undefined;
}

/**
 * The exit code an error means.
 * @example exitCodeOf(new WorkflowNotFoundError('…', 'glidepath/ns/x', undefined)) === ExitCode.NotFound
 */
export function exitCodeOf(err: unknown): ExitCode {
  if (err instanceof CliError) return err.exitCode;
  if (err instanceof CommanderError) return err.exitCode === 0 ? ExitCode.Ok : ExitCode.Usage;
  if (err instanceof WorkflowUpdateFailedError) return ExitCode.Failed;
  if (findCause(err, (e) => e instanceof WorkflowNotFoundError)) return ExitCode.NotFound;
  const grpc = findCause(err, isGrpcServiceError);
  if (grpc) {
    const code = (grpc as { code: number }).code;
    if (code === 5) return ExitCode.NotFound; // NOT_FOUND
    if (grpcCannotConnect.has(code)) return ExitCode.CannotConnect;
    return ExitCode.Failed;
  }
  const api = findCause(err, (e) => e instanceof k8s.ApiException) as k8s.ApiException<unknown> | undefined;
  if (api) {
    if (api.code === 404) return ExitCode.NotFound;
    if (api.code === 401 || api.code === 403) return ExitCode.CannotConnect;
    return ExitCode.Failed;
  }
  if (findCause(err, (e) => networkCodes.has(String((e as { code?: unknown }).code ?? ''))))
    return ExitCode.CannotConnect;
  // The SDK's own words when it gives up connecting (a wrong address, TLS to a plain server…).
  if (
    findCause(
      err,
      (e) =>
        e instanceof Error &&
        /Failed to connect before the deadline|No connection established|connect ECONNREFUSED/i.test(e.message),
    )
  ) {
    return ExitCode.CannotConnect;
  }
  return ExitCode.Failed;
}

/**
 * The message to print: the error's, with its causes' where they add something (the SDK's "Failed to query
 * Workflow" says little without the gRPC status under it).
 */
export function errorMessage(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    const message = e instanceof Error ? e.message : String(e);
    if (message && !parts.some((p) => p.includes(message))) parts.push(message);
    if (e instanceof CliError) break; // says all it means to
  }
  return parts.join(': ') || 'unknown error';
}
