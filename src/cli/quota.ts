import { historyLimit, type SpaceQuota } from '../sync/transactions/quota.js';
import { UsageError } from './usage.js';

/**
 * The quota `inspect` compares every space with, from `--quota-entries`, `--quota-bytes` and
 * `--quota-history-bytes`: the CLI cannot see the app's `quotas` option, so the operator says
 * what it is.
 */
export function quotaOption(entries: string | undefined, bytes: string | undefined, history?: string): SpaceQuota | undefined {
  if (entries === undefined && bytes === undefined && history === undefined) return undefined;
  return {
    ...(entries !== undefined && { entries: whole(entries, '--quota-entries') }),
    ...(bytes !== undefined && { bytes: sizeInBytes(bytes, '--quota-bytes') }),
    ...(history !== undefined && { historyBytes: sizeInBytes(history, '--quota-history-bytes') }),
  };
}

/** How much of its quota a space uses: `45% of 1,000 entries, 3% of 1.0 MiB, 1% of 1.0 MiB of history`; `-` with none. */
export function quotaCell(
  { entries, bytes, history, quota }: { entries: number; bytes: number; history: number; quota?: SpaceQuota | undefined },
  size: (bytes: number) => string,
): string {
  if (quota === undefined) return '-';
  const part = (used: number, limit: number | undefined, what: string) =>
    limit === undefined ? [] : [`${limit === 0 ? (used === 0 ? 0 : Infinity) : Math.round((used / limit) * 100)}% of ${what}`];
  const historyBound = historyLimit(quota);
  return [
    ...part(entries, quota.entries, `${(quota.entries ?? 0).toLocaleString('en-US')} entries`),
    ...part(bytes, quota.bytes, size(quota.bytes ?? 0)),
    ...part(history, historyBound, `${size(historyBound ?? 0)} of history`),
  ].join(', ');
}

const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

function sizeInBytes(value: string, option: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(value.trim());
  const unit = match ? BYTE_UNITS[match[2]!.toLowerCase()] : undefined;
  if (match === null || unit === undefined) throw new UsageError(`${option} takes a size such as 1000000, 500KiB, 10MiB or 1GB; got ${JSON.stringify(value)}`);
  return Math.floor(Number(match[1]) * unit);
}

function whole(value: string, option: string): number {
  if (!/^\d+$/.test(value.trim())) throw new UsageError(`${option} takes a whole number; got ${JSON.stringify(value)}`);
  return Number(value);
}
