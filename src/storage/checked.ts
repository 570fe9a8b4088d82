import { hasLoneSurrogate } from '../base/utf8.js';
import type { ScanOptions, StorageTransaction } from './types.js';
import { getMany, type StorageReader } from './write-buffer.js';

/**
 * Runs `fn` over `tx`, refusing use after it settled, writes when read-only, and keys a database
 * cannot hold (half a surrogate pair has no UTF-8 form); `incarnation` is the store's (see
 * {@link StorageTransaction.incarnation}).
 */
export async function runChecked<T>(
  fn: (tx: StorageTransaction) => Promise<T>,
  tx: StorageReader & Partial<StorageTransaction>,
  writable: boolean,
  incarnation?: () => Promise<string | undefined>,
): Promise<T> {
  let open = true;
  const check = (key: string, write = false): void => {
    if (!open) throw new Error('The storage transaction is already finished');
    if (write && !writable) throw new Error('Cannot write in a read-only transaction');
    if (hasLoneSurrogate(key)) throw new Error(`Key ${JSON.stringify(key)} has a lone surrogate, which has no UTF-8 form`);
  };
  const checkScan = (options: ScanOptions): void => {
    check(options.prefix);
    if (options.start !== undefined) check(options.start.key);
  };
  try {
    return await fn({
      get: async (key) => (check(key), tx.get(key)),
      getMany: async (keys) => (keys.forEach((key) => void check(key)), getMany(tx, keys)),
      put: async (key, value) => (check(key, true), tx.put!(key, value)),
      del: async (key) => (check(key, true), tx.del!(key)),
      scan: async (options) => {
        checkScan(options);
        return tx.scan(options);
      },
      ...(incarnation && { incarnation }),
      ...(tx.scanText && {
        scanText: async (options: ScanOptions) => {
          checkScan(options);
          return tx.scanText!(options);
        },
      }),
    });
  } finally {
    open = false;
  }
}
