/**
 * Go-style durations (`metav1.Duration`: "90s", "1h30m", "250ms"), the format Kubernetes users write.
 * Pure: imported by the CRD schema, the watcher and workflow code alike.
 */

const unitMs: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The pattern the CRD schema uses; one or more `<number><unit>` parts, as Go's time.ParseDuration accepts. */
export const durationPattern = '^([0-9]+(\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$';

const part = /([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g;

/**
 * Parses a Go duration into milliseconds.
 * @example parseDuration('1m30s') === 90_000
 * @throws Error naming the text when it is not a duration.
 */
export function parseDuration(text: string): number {
  if (!new RegExp(durationPattern).test(text)) {
    throw new Error(`"${text}" is not a duration (use e.g. "30s", "5m", "1h30m")`);
  }
  let ms = 0;
  for (const [, value, unit] of text.matchAll(part)) ms += Number(value) * unitMs[unit!]!;
  return ms;
}

/** Formats milliseconds the short way people read them: 90_000 → "1m30s", 250 → "250ms". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let rest = Math.round(ms / 1000);
  const h = Math.floor(rest / 3600);
  rest -= h * 3600;
  const m = Math.floor(rest / 60);
  const s = rest - m * 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s || (!h && !m) ? `${s}s` : ''}`;
}
