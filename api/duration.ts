/**
 * Go-style durations (`metav1.Duration`: "90s", "1h30m", "250ms"), the format Kubernetes users write.
 * Pure: imported by the CRD schema, the watcher and workflow code alike.
 */

const unitMs: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

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

const unitNs: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const maxNs = (1n << 63n) - 1n;

/**
 * A duration in whole nanoseconds exactly as Go's time.ParseDuration (and so kube-apiserver's CEL `duration()`)
 * reads it: fractions below 1ns are cut off ("0.5ns" is 0), and past int64 nanoseconds (about 2562047h) it is no
 * duration at all (undefined), which CEL refuses. Follows Go's leadingInt / leadingFraction step by step.
 * @example durationNanos('1.5us') === 1500n
 */
export function durationNanos(text: string): bigint | undefined {
  if (!new RegExp(durationPattern).test(text)) return undefined;
  let total = 0n;
  for (const [, int, frac = '', unit] of text.matchAll(/([0-9]+)(?:\.([0-9]+))?(ns|us|µs|ms|s|m|h)/g)) {
    const whole = BigInt(int!);
    if (whole > 1n << 63n) return undefined;
    // Go keeps fraction digits while they fit in 63 bits, and scales them in float64.
    let f = 0n;
    let scale = 1;
    for (const digit of frac) {
      const next = f * 10n + BigInt(digit);
      if (f > maxNs / 10n || next > 1n << 63n) break;
      f = next;
      scale *= 10;
    }
    const u = unitNs[unit!]!;
    if (whole > (1n << 63n) / u) return undefined;
    let v = whole * u;
    if (f > 0n) {
      v += BigInt(Math.trunc(Number(f) * (Number(u) / scale)));
      if (v > 1n << 63n) return undefined;
    }
    total += v;
    if (total > 1n << 63n) return undefined;
  }
  return total > maxNs ? undefined : total;
}
