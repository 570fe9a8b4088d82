import { compareUTF8 } from '../base/utf8.js';
import type { ScanOptions, StorageTransaction, StoredValue } from './types.js';

/** What a {@link WriteBuffer} reads through to: a transaction, or a store's committed state. */
export type StorageReader = Pick<StorageTransaction, 'get' | 'scan' | 'getMany' | 'scanText' | 'incarnation'>;

/**
 * Writes held in memory over what `base` holds, read back merged with it: `get` and `scan` see
 * the buffered puts and deletes as if they were written. Stores whose database cannot keep a
 * transaction open across awaits (SQLite, a Durable Object) or should not (PostgreSQL: one
 * statement per write) buffer a transaction's writes here and apply them in one go at commit;
 * group commit gives each push one, so a push that fails leaves nothing in the shared
 * transaction.
 *
 * With `cacheReads`, a key read once is not read from `base` again: only for a transaction that
 * nobody else can write under (its space is locked).
 */
export class WriteBuffer implements StorageTransaction {
  /** The buffered writes, in the order first written; `undefined` deletes. */
  readonly writes = new Map<string, StoredValue | undefined>();
  readonly #base: StorageReader;
  readonly #cache: Map<string, StoredValue | undefined> | undefined;
  readonly incarnation: StorageTransaction['incarnation'];

  constructor(base: StorageReader, { cacheReads = false } = {}) {
    this.#base = base;
    this.#cache = cacheReads ? new Map() : undefined;
    this.incarnation = base.incarnation && (() => base.incarnation!());
  }

  async get(key: string): Promise<StoredValue | undefined> {
    if (this.writes.has(key)) return this.writes.get(key);
    const cache = this.#cache;
    if (cache?.has(key)) return cache.get(key);
    const value = await this.#base.get(key);
    cache?.set(key, value);
    return value;
  }

  async getMany(keys: readonly string[]): Promise<Array<StoredValue | undefined>> {
    const cache = this.#cache;
    const missing = [...new Set(keys.filter((key) => !this.writes.has(key) && !cache?.has(key)))];
    const fetched = new Map<string, StoredValue | undefined>();
    if (missing.length > 0) {
      const found = await getMany(this.#base, missing);
      missing.forEach((key, i) => {
        fetched.set(key, found[i]);
        cache?.set(key, found[i]);
      });
    }
    return keys.map((key) => (this.writes.has(key) ? this.writes.get(key) : fetched.has(key) ? fetched.get(key) : cache?.get(key)));
  }

  async put(key: string, value: StoredValue): Promise<void> {
    this.writes.set(key, value);
  }

  async del(key: string): Promise<void> {
    this.writes.set(key, undefined);
  }

  async scan(options: ScanOptions): Promise<ReadonlyArray<readonly [string, StoredValue]>> {
    const { prefix, start, limit = Infinity } = options;
    if (limit <= 0) return [];
    if (this.writes.size === 0) return this.#base.scan(options);
    // Each buffered write hides at most one row, so this many rows always fill the page: any
    // buffered key past the last row read lands past `limit` once merged.
    const rows = await this.#base.scan({ prefix, start, limit: limit + this.writes.size });
    const fromStart = start !== undefined && compareUTF8(start.key, prefix) >= 0;
    const [from, after] = [fromStart ? start.key : prefix, fromStart && start.exclusive === true];
    const merged = new Map<string, StoredValue | undefined>(rows);
    for (const [key, value] of this.writes) {
      if (key.startsWith(prefix) && compareUTF8(key, from) >= (after ? 1 : 0)) merged.set(key, value);
    }
    const live = [...merged].filter((entry): entry is [string, StoredValue] => entry[1] !== undefined);
    return live.sort(([a], [b]) => compareUTF8(a, b)).slice(0, limit);
  }

  async scanText(options: ScanOptions): Promise<ReadonlyArray<readonly [string, string]>> {
    // The base's text is the committed value: only good while nothing here overlays it.
    return this.writes.size === 0 ? scanText(this.#base, options) : asText(await this.scan(options));
  }

  /** Writes the buffered writes into `tx`. */
  async flushTo(tx: Pick<StorageTransaction, 'put' | 'del'>): Promise<void> {
    for (const [key, value] of this.writes) {
      if (value === undefined) await tx.del(key);
      else await tx.put(key, value);
    }
  }
}

/** `reader.getMany(keys)`, or a `get` for each key where the reader has no `getMany`. */
export function getMany(reader: StorageReader, keys: readonly string[]): Promise<Array<StoredValue | undefined>> {
  return reader.getMany ? reader.getMany(keys) : Promise.all(keys.map((key) => reader.get(key)));
}

/** `reader.scanText(options)`, or its `scan` with each value serialised where it has none. */
export async function scanText(reader: StorageReader, options: ScanOptions): Promise<ReadonlyArray<readonly [string, string]>> {
  return reader.scanText ? reader.scanText(options) : asText(await reader.scan(options));
}

function asText(entries: ReadonlyArray<readonly [string, StoredValue]>): Array<readonly [string, string]> {
  return entries.map(([key, value]) => [key, JSON.stringify(value)] as const);
}
