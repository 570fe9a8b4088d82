import { UsageError } from './usage.js';

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * Milliseconds from a duration option, written with its unit (`500ms`, `10s`, `5m`, `12h`, `30d`),
 * or `fallback` without one. A bare number is refused rather than guessed: `--tombstones 30`
 * read as milliseconds would remove every tombstone.
 */
export function duration(value: string | undefined, option: string, fallback: number): number {
  return durationOrForever(value, option, fallback, false) as number;
}

/** As {@link duration}, and `forever` is `false`. */
export function retentionDuration(value: string | undefined, option: string, fallback: number): number | false {
  return durationOrForever(value, option, fallback, true);
}

/** A duration in the unit that reads best: `30 s`, `500 ms`. */
export function formatDuration(ms: number): string {
  const [unit, size] = Object.entries(UNITS)
    .reverse()
    .find(([, size]) => ms >= size && ms % size === 0) ?? ['ms', 1];
  return `${ms / size} ${unit}`;
}

function durationOrForever(value: string | undefined, option: string, fallback: number, allowForever: boolean): number | false {
  if (value === undefined) return fallback;
  if (allowForever && value === 'forever') return false;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/.exec(value.trim());
  const ms = match ? Number(match[1]) * UNITS[match[2]!]! : NaN;
  if (!(ms > 0) || !Number.isFinite(ms)) {
    throw new UsageError(
      `${option} takes a duration above 0 with its unit, such as 500ms, 10s, 5m, 12h or 30d${allowForever ? `, or 'forever'` : ''}; got ${JSON.stringify(value)}`,
    );
  }
  return ms;
}
