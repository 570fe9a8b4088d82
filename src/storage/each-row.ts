import type { Storage, StoredValue } from './types.js';

/**
 * Calls `each` for every row under `prefix`, in key order, a page per read-only transaction: no
 * transaction is long, so nothing waits behind it, and the rows are not one snapshot.
 */
export async function eachRow(storage: Storage, prefix: string, each: (key: string, value: StoredValue) => void, space?: string): Promise<void> {
  let after: string | undefined;
  for (;;) {
    const start = after === undefined ? undefined : { key: after, exclusive: true };
    const page = await storage.transaction((tx) => tx.scan({ prefix, start, limit: PAGE }), { readOnly: true, space });
    for (const [key, value] of page) each(key, value);
    if (page.length < PAGE) return;
    after = page.at(-1)![0];
  }
}

const PAGE = 4_096;
