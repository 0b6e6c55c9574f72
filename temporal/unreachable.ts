/**
 * Why a Temporal server could not be connected to. The SDK's connect says only "Failed to connect before the
 * deadline"; a person fixing a connection needs the cause: nothing listens there, the host is unknown, nothing
 * answers, or TCP works and the TLS handshake or gRPC does not.
 */
import { connect } from 'node:net';

/** Reaches `hostPort` over TCP once (within `timeoutMs`) and says what stands in the way of a connection. */
export async function whyUnreachable(hostPort: string, tls: boolean, timeoutMs = 2_000): Promise<string> {
  const at = hostPort.lastIndexOf(':');
  const host = hostPort.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(hostPort.slice(at + 1));
  if (at < 0 || !Number.isInteger(port)) return `${hostPort} is not host:port`;
  const tcp = await new Promise<string | undefined>((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.once('connect', () => (socket.destroy(), resolve(undefined)));
    socket.once(
      'timeout',
      () => (socket.destroy(), resolve(`no answer from ${hostPort} within ${timeoutMs / 1000} s`)),
    );
    socket.once('error', (err: NodeJS.ErrnoException) => {
      socket.destroy();
      if (err.code === 'ECONNREFUSED') resolve(`connection refused by ${hostPort} (nothing listens there)`);
      else if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') resolve(`host ${host} not found`);
      else resolve(`${hostPort}: ${err.code ?? err.message}`);
    });
  });
  if (tcp) return tcp;
  return tls
    ? `${hostPort} accepts TCP, but the TLS handshake or gRPC failed (check the TemporalConnection's tls settings and certificates)`
    : `${hostPort} accepts TCP but does not answer gRPC in plain text (a TLS endpoint? set tls in the TemporalConnection)`;
}
