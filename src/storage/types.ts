/**
 * The storage seam: the one interface every store implements.
 *
 * viewsync keeps all of its state (entries, versions, client records) in a flat, ordered
 * key-value space of string keys and JSON values. A store only has to offer transactions over
 * that space. What a store must guarantee:
 *
 * 1. **Atomicity.** A read-write transaction whose callback resolves is committed whole; one whose
 *    callback rejects (or whose commit fails) leaves no trace. `transaction` then rejects.
 * 2. **Serialisable writes.** Read-write transactions behave as if they ran one after another.
 *    The global version strategy depends on it: a version is read and bumped inside a push
 *    transaction, so two pushes must never both read the same version (spec, global version
 *    rule 5). A store may get there with a lock, `SERIALIZABLE` isolation plus retries, or a
 *    single writer. Transactions of different spaces (see
 *    {@link TransactionOptions.space}) touch disjoint keys, so a store should let them run side
 *    by side: one space's slow push must not hold up another space.
 * 3. **Consistent snapshots.** Every read inside one transaction (read-only or not) sees one
 *    committed state plus that transaction's own writes, never a half-committed one.
 * 4. **Ordering.** Keys order by their UTF-8 bytes ({@link compareUTF8}), as the client orders
 *    them; `scan` returns entries in that order.
 * 5. **Values.** Values are JSON values. A store may keep the object it was given (the caller
 *    never mutates a value after `put` nor one returned by `get` or `scan`), or serialise it.
 */
export interface Storage {
  /**
   * Runs `fn` in a transaction and resolves with its result once committed.
   * Retrying is the store's business: `fn` may run more than once, so it must have no effects
   * outside `tx` (viewsync's own callbacks have none).
   */
  transaction<T>(fn: (tx: StorageTransaction) => Promise<T>, options: TransactionOptions): Promise<T>;
  /**
   * The longest key, in UTF-8 bytes, the store can hold, when it has such a bound (PostgreSQL's
   * btree index rows). A mutator's write whose rows would be longer fails that mutation alone,
   * with a `RangeError` saying so, instead of failing the commit. Default: no bound.
   */
  readonly maxKeyBytes?: number;
  /**
   * Optional, for a store whose reads may miss a commit a client has already read: milliseconds
   * a pull whose cookie names a version of its space that the store does not show yet keeps
   * reading again (after 10, 20, 40 ms...) before it answers ClientStateNotFound, which makes
   * the client start over. PostgreSQL with standbys under synchronous replication needs it: a
   * standby may show a commit before its primary does, and a client's next pull may go to the
   * primary. Default: 0, no wait (a cookie ahead of the store is one of commits it lost).
   */
  readonly catchUpMs?: number;
  /**
   * Optional: runs `reads` against one consistent snapshot of committed state, in one round trip
   * on a database and outside any transaction (no BEGIN, no COMMIT), and resolves with each
   * read's rows. A pull that needs nothing more (an up-to-date one, or one a few changes
   * behind) is then one statement. A store in process (memory, SQLite) has no need of it:
   * without it, pulls read in a read-only transaction. Reads name keys of `options.space` only,
   * like a transaction of that space.
   */
  readMany?(reads: readonly RangeRead[], options: { space?: string | undefined }): Promise<RangeRow[][]>;
  /**
   * Optional, for a store made of several, each space in one of them (`routedStorage`): its
   * parts. What works across spaces (health checks, housekeeping, polling for pokes, inspect)
   * asks each part in turn, so that one part down fails only its own spaces.
   */
  readonly parts?: StoreParts;
  /**
   * Optional: whether the store runs one transaction over several spaces' deliveries lanes
   * ({@link TransactionOptions.spaces}). Without it, a webhook's work in many spaces takes a
   * transaction a space.
   */
  readonly manySpaces?: boolean;
}

/** The parts of a store made of several: see {@link Storage.parts}. */
export interface StoreParts {
  /** The parts, by name. */
  readonly stores: Readonly<Record<string, Storage>>;
  /** The name of the part that holds `space`'s copy in use now. */
  locate(space: string): Promise<string>;
  /** Which of `spaces`, each with rows in part `store`, have their copy in use there (a part may keep what a move left). */
  inUse(store: string, spaces: readonly string[]): Promise<string[]>;
}

/**
 * One read of {@link Storage.readMany}: the entries a scan with these options returns, and with
 * `join`, for each entry, the value at another key made from its key.
 */
export interface RangeRead extends ScanOptions {
  /**
   * For each entry read, also read the key made of `join.prefix` and the entry's key after the
   * read's `prefix` and `join.skip` more characters, which must be ASCII (an index row's target:
   * `v/<space>/<version>/<key>` joins `e/<space>/<key>`).
   */
  join?: { prefix: string; skip: number } | undefined;
}

/** An entry {@link Storage.readMany} read: key, value, and with `join`, the joined key's value (undefined: none). */
export type RangeRow = readonly [key: string, value: StoredValue, joined?: StoredValue | undefined];

/** Options for {@link Storage.transaction}. */
export interface TransactionOptions {
  /** True for pulls: the callback only reads, so a store may use a cheaper snapshot. */
  readOnly: boolean;
  /**
   * The space the transaction works in, when it works in one. It then reads and writes only that
   * space's keys, which no transaction of another space touches, so a store may lock per space
   * (viewsync's own transactions always name one). Without it, a transaction may touch any key
   * and must be isolated from all others.
   */
  space?: string | undefined;
  /**
   * Which of its space's rows a read-write transaction writes, for a store that can lock them
   * apart (see {@link WriteLane}); without it, any of them. A store may ignore it and lock
   * the whole space, as for a transaction without it.
   */
  lane?: WriteLane | undefined;
  /**
   * Instead of `space`, on a store with {@link Storage.manySpaces}: the spaces whose deliveries
   * lanes (with `lane: 'deliveries'`) one read-write transaction works in, a webhook's claims or
   * records in many spaces at once, each space locked as a transaction of its lane alone would
   * lock it. A store takes their locks in one order, so that two such transactions never deadlock.
   */
  spaces?: readonly string[] | undefined;
}

/**
 * The lanes of a space whose writers may run side by side, so that webhook deliveries never wait
 * for pushes, nor pushes for deliveries:
 * - `'data'`: entries, clients, the meta record, and rows appended to the change log after its
 *   last version (a push, `transact`); never a delivery row, never an older log row.
 * - `'deliveries'`: the webhooks' delivery rows alone (`h/<space>/`), reading the rest.
 * Transactions of one lane exclude each other; one of no lane excludes both (it may write
 * anything: housekeeping trims the log, a move fences the space). A store that runs a data and
 * a deliveries transaction of one space at once must still show each of their reads a committed
 * state (never the other's writes before it commits): a deliveries transaction may then see a
 * push commit between two of its reads, which only adds rows past the version it read first.
 */
export type WriteLane = 'data' | 'deliveries';

/** A JSON value as stored. */
export type StoredValue = null | boolean | number | string | readonly StoredValue[] | { readonly [key: string]: StoredValue };

/** The operations available inside a transaction. */
export interface StorageTransaction {
  /** The value at `key`, or `undefined` when there is none. */
  get(key: string): Promise<StoredValue | undefined>;
  /** Sets `key` to `value`. Rejects in a read-only transaction. */
  put(key: string, value: StoredValue): Promise<void>;
  /** Removes `key`; removing a missing key is not an error. Rejects in a read-only transaction. */
  del(key: string): Promise<void>;
  /** Entries in key order that match `options`, at most `options.limit` of them. */
  scan(options: ScanOptions): Promise<ReadonlyArray<readonly [string, StoredValue]>>;
  /**
   * The values at `keys`, in their order. Optional: a store over a network implements it to
   * read many keys in one round trip; without it, viewsync calls `get` for each.
   */
  getMany?(keys: readonly string[]): Promise<Array<StoredValue | undefined>>;
  /**
   * What {@link scan} returns, each value as the JSON text the store holds (what `JSON.stringify`
   * made of it). Optional: a store that keeps values as JSON text implements it so that an
   * export copies that text instead of parsing and serialising every value again.
   */
  scanText?(options: ScanOptions): Promise<ReadonlyArray<readonly [string, string]>>;
  /**
   * Optional, in read-write transactions: a name for the database as it runs now, which changes
   * whenever it may have come back with fewer commits than it acknowledged (a failover to a
   * standby that had not received them all, a restore from a backup) and seldom otherwise. A
   * space written under another incarnation than its last write skips ahead in versions, so that
   * no version a lost commit gave a client is ever given to another commit (see `Meta.gaps`).
   * PostgreSQL's is the server's start time, read with the space's lock; SQLite's is the
   * store's, made when it is opened. A store whose commits cannot be lost needs none.
   */
  incarnation?(): Promise<string | undefined>;
}

/** Which entries a {@link StorageTransaction.scan} returns. */
export interface ScanOptions {
  /** Only keys that start with this string. */
  prefix: string;
  /** Only keys at or after this key (after it when `exclusive`). */
  start?: { key: string; exclusive?: boolean } | undefined;
  /** At most this many entries; all of them when absent. */
  limit?: number | undefined;
}
