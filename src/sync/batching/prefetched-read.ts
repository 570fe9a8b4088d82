import type { RangeRead, RangeRow, ScanOptions, StorageTransaction, StoredValue } from '../../storage/types.js';
import { SharingRead } from './shared-derivations.js';

/**
 * Thrown by a {@link PrefetchedRead} asked for something that was not read ahead: whoever ran the
 * job on it runs it again in a transaction.
 */
export class NotPrefetched extends Error {
  override name = 'NotPrefetched';
}

/**
 * A read-only transaction over reads made ahead of time, in one snapshot (`Storage.readMany`):
 * it answers a `get` of a key read (a read of the key as prefix, limit 1) or joined, and a scan
 * with exactly the options of a read; anything else throws {@link NotPrefetched}. So a pull runs
 * its usual code over it, and a pull that needs more than was guessed runs again for real. Pulls
 * that share it share each patch too ({@link SharingRead}).
 */
export class PrefetchedRead extends SharingRead implements StorageTransaction {
  readonly #values = new Map<string, StoredValue | undefined>();
  readonly #scans = new Map<string, ReadonlyArray<readonly [string, StoredValue]>>();

  constructor(plan: ReadPlan, results: readonly RangeRow[][]) {
    super();
    plan.gets.forEach((key, i) => {
      const row = results[i]![0];
      this.#values.set(key, row !== undefined && row[0] === key ? row[1] : undefined);
    });
    plan.scans.forEach((read, i) => {
      const rows = results[plan.gets.length + i]!;
      this.#scans.set(
        scanKey(read),
        rows.map(([key, value]) => [key, value] as const),
      );
      if (read.join === undefined) return;
      const skip = read.prefix.length + read.join.skip;
      for (const [key, , joined] of rows) this.#values.set(read.join.prefix + key.slice(skip), joined);
    });
  }

  async get(key: string): Promise<StoredValue | undefined> {
    if (!this.#values.has(key)) throw new NotPrefetched(`${JSON.stringify(key.slice(0, 100))} was not read ahead`);
    return this.#values.get(key);
  }

  async getMany(keys: readonly string[]): Promise<Array<StoredValue | undefined>> {
    return Promise.all(keys.map((key) => this.get(key)));
  }

  async scan(options: ScanOptions): Promise<ReadonlyArray<readonly [string, StoredValue]>> {
    const rows = this.#scans.get(scanKey(options));
    if (rows === undefined) throw new NotPrefetched(`a scan of ${JSON.stringify(options.prefix.slice(0, 100))} was not read ahead`);
    return rows;
  }

  put(): Promise<void> {
    return Promise.reject(new Error('Cannot write in a read-only transaction'));
  }

  del(): Promise<void> {
    return Promise.reject(new Error('Cannot write in a read-only transaction'));
  }
}

/** What a job will read: keys, and scans (with their joins). */
export interface ReadPlan {
  gets: readonly string[];
  scans: readonly RangeRead[];
}

/** The plan's reads as `Storage.readMany` takes them: each get a read of the key as prefix, at most one entry. */
export function rangesOf(plan: ReadPlan): RangeRead[] {
  return [...plan.gets.map((key) => ({ prefix: key, limit: 1 })), ...plan.scans];
}

/** What tells one scan's options from another's. */
export function scanKey({ prefix, start, limit }: ScanOptions): string {
  return JSON.stringify([prefix, start?.key ?? null, start?.exclusive === true, limit ?? null]);
}
