/**
 * The controller's logs: one JSON object per line, with the resource, build ID and workflow ID whenever the line is
 * about one (the SDK adds the workflow ID to workflow and activity lines; the resource is read from it).
 */
import type { LogLevel, LogMetadata, Logger } from '@temporalio/common';

const levels: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/** `glidepath/<installation>/<namespace>/<name>` → `<namespace>/<name>` (other workflow IDs: none). */
export function resourceOfWorkflowId(workflowId: unknown): string | undefined {
  if (typeof workflowId !== 'string') return undefined;
  const m = /^glidepath\/[^/]+\/([^/]+)\/([^/]+)$/.exec(workflowId);
  return m ? `${m[1]}/${m[2]}` : undefined;
}

/** One log line's object: time, level, message, then resource / buildId / workflowId, then the rest. Pure. */
export function logRecord(
  level: LogLevel,
  message: string,
  meta: LogMetadata | undefined,
  at: Date,
): Record<string, unknown> {
  const { resource, buildId, workflowId, ...rest } = meta ?? {};
  const record: Record<string, unknown> = { ts: at.toISOString(), level: level.toLowerCase(), msg: message };
  const namespaced =
    typeof rest.namespace === 'string' && typeof rest.name === 'string' && !workflowId
      ? `${rest.namespace}/${rest.name}`
      : undefined;
  const who = resource ?? resourceOfWorkflowId(workflowId) ?? namespaced;
  if (who !== undefined) record.resource = who;
  if (buildId !== undefined) record.buildId = buildId;
  if (workflowId !== undefined) record.workflowId = workflowId;
  for (const [key, value] of Object.entries(rest)) record[key] = value instanceof Error ? value.message : value;
  return record;
}

/** A Temporal `Logger` writing JSON lines at `level` and above (the SDK's own lines come through it too). */
export class JsonLogger implements Logger {
  private readonly threshold: number;

  constructor(
    level: LogLevel,
    private readonly write: (line: string) => void = (line) => process.stdout.write(line),
  ) {
    this.threshold = levels.indexOf(level);
  }

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (levels.indexOf(level) < this.threshold) return;
    let line: string;
    try {
      line = JSON.stringify(logRecord(level, message, meta, new Date()));
    } catch {
      line = JSON.stringify(logRecord(level, message, { unserializable: String(meta) }, new Date()));
    }
    this.write(`${line}\n`);
  }

  trace(message: string, meta?: LogMetadata): void {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata): void {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata): void {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata): void {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata): void {
    this.log('ERROR', message, meta);
  }
}
