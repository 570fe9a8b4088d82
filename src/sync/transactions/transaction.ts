import type { JSONValue } from '../../protocol/json.js';

// The transaction types mutators (and, read-only, views) see: the client's, plus the user.

/**
 * A read-only view of a space, with the read methods of the client's `ReadTransaction`. Values
 * it returns are frozen.
 */
export interface ReadTransaction {
  /** The value at `key`, or undefined. */
  get(key: string): Promise<JSONValue | undefined>;
  /** The value at `key` as the type you name (unchecked, as on the client), or undefined. */
  get<T extends JSONValue>(key: string): Promise<DeepReadonly<T> | undefined>;
  /** Whether `key` has a value. */
  has(key: string): Promise<boolean>;
  /** Whether the space holds no entries at all. */
  isEmpty(): Promise<boolean>;
  /** Entries in key order (UTF-8 byte order, as on the client). */
  scan(options?: ScanOptions): ScanResult<string, JSONValue>;
  /** Entries in key order, values typed as you name (unchecked, as on the client). */
  scan<V extends JSONValue>(options?: ScanOptions): ScanResult<string, DeepReadonly<V>>;
  /**
   * Indexes are defined in the client's options and exist only there: on the server a scan with
   * `indexName` throws. It is declared so that mutators typed for the client type-check here.
   */
  scan(options: ScanIndexOptions): ScanResult<IndexKey, JSONValue>;
  /** As above: throws on the server. */
  scan<V extends JSONValue>(options: ScanIndexOptions): ScanResult<IndexKey, DeepReadonly<V>>;
}

/**
 * What a mutator gets on the server: the client's `WriteTransaction`, so one mutator source runs
 * on both sides (a mutator typed against the client's `WriteTransaction` from `replicache` is
 * accepted as it is), plus who is mutating.
 */
export interface WriteTransaction extends ReadTransaction {
  /** The client that ran the mutation. */
  readonly clientID: string;
  /** The mutation's id, sequential per client. */
  readonly mutationID: number;
  /** The authenticated user, or undefined when requests are anonymous. */
  readonly userID: string | undefined;
  /** Always `'authoritative'` on the server, as the client names it. */
  readonly reason: 'authoritative';
  /** Always `'server'`, so shared mutator code can tell where it runs. */
  readonly location: 'server';
  /** @deprecated The client's old name for {@link location}. */
  readonly environment: 'server';
  /** Sets `key` to a JSON value (copied and frozen). */
  set(key: string, value: JSONValue): Promise<void>;
  /** @deprecated The client's old name for {@link set}. */
  put(key: string, value: JSONValue): Promise<void>;
  /** Removes `key`; resolves to whether it had a value. */
  del(key: string): Promise<boolean>;
}

/** Which entries {@link ReadTransaction.scan} returns, as on the client. */
export interface ScanOptions {
  /** Only keys starting with this string. */
  prefix?: string | undefined;
  /** Start at this key, or just after it when `exclusive`. */
  start?: { key: string; exclusive?: boolean | undefined } | undefined;
  /** At most this many entries. */
  limit?: number | undefined;
}

/** The client's options for a scan over one of its indexes (which the server does not have). */
export interface ScanIndexOptions {
  /** Only secondary keys starting with this string. */
  prefix?: string | undefined;
  /** At most this many entries. */
  limit?: number | undefined;
  /** The index, as named in the client's `indexes` option. */
  indexName: string;
  /** Start at this secondary key (and primary key), or just after it when `exclusive`. */
  start?: { key: readonly [secondary: string, primary?: string | undefined] | string; exclusive?: boolean | undefined } | undefined;
}

/** The key of an index entry on the client: its secondary and primary key. */
export type IndexKey = readonly [secondary: string, primary: string];

/** `T`, read-only all the way down, as the client types what it reads. */
export type DeepReadonly<T> = T extends null | boolean | string | number | undefined ? T : { readonly [K in keyof T]: DeepReadonly<T[K]> };

/** The result of a scan: iterate it for values, or ask for keys, entries or an array. */
export interface ScanResult<TKey = string, TValue = JSONValue> extends AsyncIterable<TValue> {
  /** The values in key order, as {@link values} gives them. */
  [Symbol.asyncIterator](): ScanIterator<TValue>;
  /** The values in key order. */
  values(): ScanIterator<TValue>;
  /** The keys in order. */
  keys(): ScanIterator<TKey>;
  /** `[key, value]` pairs in key order. */
  entries(): ScanIterator<readonly [TKey, TValue]>;
  /** All values, as an array. */
  toArray(): Promise<TValue[]>;
}

/** An async iterator that can also collect the rest of itself. */
export interface ScanIterator<T> extends AsyncIterableIterator<T> {
  /** Everything not yet iterated, as an array. */
  toArray(): Promise<T[]>;
}
