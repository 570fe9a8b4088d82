import type { Storage } from '../../src/index.js';
import type { RangeRow } from '../../src/store.js';

/**
 * `storage` with a `readMany` where it has none, made of its own transactions: so that a store
 * in process runs pulls' plans as a database does (one snapshot either way).
 */
export function withReadMany(storage: Storage): Storage {
  if (storage.readMany) return storage;
  return {
    transaction: (fn, options) => storage.transaction(fn, options),
    readMany: (reads, { space }) =>
      storage.transaction(
        (tx) =>
          Promise.all(
            reads.map(async (read): Promise<RangeRow[]> => {
              const rows = await tx.scan(read);
              const { join } = read;
              if (join === undefined) return rows.map(([key, value]) => [key, value]);
              const skip = read.prefix.length + join.skip;
              return Promise.all(rows.map(async ([key, value]): Promise<RangeRow> => [key, value, await tx.get(join.prefix + key.slice(skip))]));
            }),
          ),
        { readOnly: true, space },
      ),
  };
}
