/**
 * `/healthz` and `/readyz` (controller-runtime's conventions): 200 `ok`, or 503 with the reason. Liveness fails
 * only when the process cannot recover by itself (a worker failed); readiness also while it starts.
 */
import { createServer, type Server } from 'node:http';

/** `true` when healthy, else why not. */
export type Check = () => true | string;

/**
 * A bind address flag (`:8081`, `127.0.0.1:8081`, `[::1]:0`; `0` turns the server off) as host and port. Throws
 * an error naming the flag when the value is not one.
 */
export function parseBindAddress(flag: string, value: string): { host: string; port: number } | undefined {
  if (value === '0') return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new Error(`--${flag}: "${value}" is not an address (HOST:PORT, :PORT, or 0 for off)`);
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

export interface ProbeServer {
  port: number;
  close(): Promise<void>;
}

/** Serves the two probes on `host:port` (port 0: any free one). */
export async function startProbeServer(
  bind: { host: string; port: number },
  checks: { live: Check; ready: Check },
): Promise<ProbeServer> {
  const server: Server = createServer((req, res) => {
    const check =
      req.url === '/healthz' || req.url === '/livez' ? checks.live : req.url === '/readyz' ? checks.ready : undefined;
    if (!check) {
      res.writeHead(404).end('not found\n');
      return;
    }
    let verdict: true | string;
    try {
      verdict = check();
    } catch (err) {
      verdict = `check failed: ${(err as Error).message}`;
    }
    if (verdict === true) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    else res.writeHead(503, { 'content-type': 'text/plain' }).end(`${verdict}\n`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(bind.port, bind.host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : bind.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
