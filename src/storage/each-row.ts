import type { Storage, StoredValue } from './types.js';

/**
 * Calls `each` for every row under `prefix`, in key order, a page per read-only transaction: no
 * transaction is long, so nothing waits behind it, and the rows are not one snapshot. At most
 * `max` rows.
 */
export async function eachRow(
  storage: Storage,
  prefix: string,
  each: (key: string, value: StoredValue) => void,
  space?: string,
  max = Infinity,
): Promise<void> {
  let after: string | undefined;
  for (let left = max; left > 0; ) {
    const start = after === undefined ? undefined : { key: after, exclusive: true };
    const limit = Math.min(PAGE, left);
    const page = await storage.transaction((tx) => tx.scan({ prefix, start, limit }), { readOnly: true, space });
    for (const [key, value] of page) each(key, value);
    if (page.length < limit) return;
    left -= page.length;
    after = page.at(-1)![0];
  }
}

const PAGE = 4_096;
