/** Which exit code each kind of failure gives: scripts depend on these staying put. */
import * as k8s from '@kubernetes/client-node';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { CommanderError } from 'commander';
import { CliError, ExitCode, errorMessage, exitCodeOf, exitCodesHelp } from '../../cli/exit-codes.js';

/** An error as @grpc/grpc-js makes it (what isGrpcServiceError recognizes). */
function grpcError(code: number, details: string): Error {
  return Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });
}

describe('exitCodeOf', () => {
  test.each([
    ['a CliError keeps its code', new CliError('x', ExitCode.NotFound), 3],
    ['--help', new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'), 0],
    ['an unknown option', new CommanderError(1, 'commander.unknownOption', "error: unknown option '--x'"), 2],
    ['a refused update', new WorkflowUpdateFailedError('refused', undefined), 1],
    ['no such workflow', new WorkflowNotFoundError('not found', 'glidepath/a/b', undefined), 3],
    ['gRPC NOT_FOUND', grpcError(5, 'namespace not found'), 3],
    ['gRPC UNAVAILABLE', grpcError(14, 'connection refused'), 4],
    ['gRPC UNAUTHENTICATED', grpcError(16, 'bad api key'), 4],
    ['gRPC PERMISSION_DENIED', grpcError(7, 'not allowed'), 4],
    ['gRPC INTERNAL', grpcError(13, 'boom'), 1],
    ['Kubernetes 404', new k8s.ApiException(404, 'not found', {}, {}), 3],
    ['Kubernetes 403', new k8s.ApiException(403, 'forbidden', {}, {}), 4],
    ['Kubernetes 401', new k8s.ApiException(401, 'unauthorized', {}, {}), 4],
    ['Kubernetes 500', new k8s.ApiException(500, 'oops', {}, {}), 1],
    [
      'connection refused',
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), { code: 'ECONNREFUSED' }),
      4,
    ],
    [
      'a wrapped network error',
      new Error('request failed', {
        cause: Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' }),
      }),
      4,
    ],
    ['the SDK giving up connecting', new Error('Failed to connect before the deadline'), 4],
    ['anything else', new Error('something else'), 1],
    ['not even an Error', 'a string', 1],
  ])('%s → %d', (_what, err, code) => {
    expect(exitCodeOf(err)).toBe(code);
  });

  test('--help lists every code once', () => {
    for (const code of Object.values(ExitCode)) expect(exitCodesHelp).toMatch(new RegExp(`^  ${code}  \\S`, 'm'));
  });
});

describe('errorMessage', () => {
  test("an error with the causes that add something: the SDK's words and the gRPC status under them", () => {
    const err = new Error('Failed to query Workflow', { cause: grpcError(13, 'INTERNAL: boom') });
    expect(errorMessage(err)).toBe('Failed to query Workflow: 13 INTERNAL: boom');
    expect(errorMessage(new Error('x: y', { cause: new Error('y') }))).toBe('x: y');
    expect(errorMessage(new CliError('refused: not paused', ExitCode.Failed))).toBe('refused: not paused');
    expect(errorMessage('plain')).toBe('plain');
  });
});
