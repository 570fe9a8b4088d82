import type { RangeRead, RangeRow, Storage } from './types.js';
import { getMany } from './write-buffer.js';

/**
 * `storage.readMany(reads)`, or for a store without it, the same reads in one read-only
 * transaction: one snapshot either way. An entry without a joined value has none (`[key, value]`).
 */
export function readRanges(storage: Storage, reads: readonly RangeRead[], space: string | undefined): Promise<RangeRow[][]> {
  if (storage.readMany) return storage.readMany(reads, { space });
  return storage.transaction(
    (tx) =>
      Promise.all(
        reads.map(async (read): Promise<RangeRow[]> => {
          const rows = await tx.scan(read);
          const { join } = read;
          if (join === undefined) return rows.map(([key, value]) => [key, value]);
          const skip = read.prefix.length + join.skip;
          const joined = await getMany(tx, rows.map(([key]) => join.prefix + key.slice(skip)));
          return rows.map(([key, value], i) => [key, value, joined[i]]);
        }),
      ),
    { readOnly: true, space },
  );
}
