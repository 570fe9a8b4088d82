import type { JSONValue } from '../../protocol/json.js';
import { compareUTF8, hasLoneSurrogate } from '../../base/utf8.js';
import { fitsUTF8, utf8Length } from '../../base/utf8.js';
import type { Limits } from './limits.js';
import type { SpaceSession } from '../version/strategy.js';
import type { IndexKey, ReadTransaction, ScanIndexOptions, ScanIterator, ScanOptions, ScanResult } from './transaction.js';

/** What a transaction reads the space through: a session's reads, and its indexes where views may read them. */
export type SpaceReader = Pick<SpaceSession, 'get' | 'scan'> & Partial<Pick<SpaceSession, 'scanIndex'>>;

/** Where an index scan starts: at a secondary key, or at a secondary and primary key. */
export interface IndexStart {
  secondary: string;
  key?: string | undefined;
  exclusive: boolean;
}

/** What a write laid over the space says of a key it removed. */
export const DELETED = Symbol('deleted');

/**
 * The client's `ReadTransaction` over one space, as views see it; mutation transactions add
 * their writes on top. Once closed it throws: a caller that forgot an `await`, or one abandoned
 * past its deadline, would otherwise read from (or write into) whatever runs next.
 */
export class SpaceReadTransaction implements ReadTransaction {
  protected readonly space: SpaceReader;
  readonly #limits: Pick<Limits, 'keyBytes'>;
  #open = true;

  constructor(space: SpaceReader, limits: Pick<Limits, 'keyBytes'>) {
    this.space = space;
    this.#limits = limits;
  }

  // One signature for the interface's typed overloads: the values are JSON either way.
  // biome-ignore lint/suspicious/noExplicitAny: an overloaded method's implementation answers every overload.
  async get(key: string): Promise<any> {
    this.checkKey(key);
    const value = await this.lookup(key);
    return value === DELETED ? undefined : value;
  }

  async has(key: string): Promise<boolean> {
    return (await this.get(key)) !== undefined;
  }

  async isEmpty(): Promise<boolean> {
    for await (const page of this.#pages({ limit: 1 })) if (page.length > 0) return false;
    return true;
  }

  // biome-ignore lint/suspicious/noExplicitAny: an overloaded method's implementation answers every overload.
  scan(options: ScanOptions | ScanIndexOptions = {}): ScanResult<any, any> {
    const byIndex = 'indexName' in options && options.indexName !== undefined;
    type Entry = readonly [string | IndexKey, JSONValue];
    // An index's keys are read without the values, which are a read of their own.
    const pages = (keysOnly = false): AsyncIterator<ReadonlyArray<Entry>> =>
      byIndex ? this.#indexPages(options as ScanIndexOptions, keysOnly) : this.#pages(options as ScanOptions);
    const values = () => iterator(pages(), (entry) => entry[1]);
    return {
      [Symbol.asyncIterator]: values,
      values,
      keys: () => iterator(pages(true), (entry) => entry[0]),
      entries: () => iterator(pages(), (entry) => entry),
      toArray: () => values().toArray(),
    };
  }

  /** The entries of an index in range, a page at a time; only views read indexes on the server (see indexes.ts). */
  protected indexRange(
    name: string,
    prefix: string,
    start: IndexStart | undefined,
    keysOnly: boolean,
  ): AsyncIterable<ReadonlyArray<readonly [IndexKey, JSONValue]>> {
    if (this.space.scanIndex === undefined)
      throw new TypeError(
        `scan: indexes (indexName ${JSON.stringify(name.slice(0, 100))}) are read on the server by views only, from the context's \`indexes\``,
      );
    return this.space.scanIndex(name, prefix, start, keysOnly);
  }

  async *#indexPages(
    { indexName, prefix = '', start, limit = Infinity }: ScanIndexOptions,
    keysOnly: boolean,
  ): AsyncGenerator<ReadonlyArray<readonly [IndexKey, JSONValue]>> {
    this.check();
    if (typeof indexName !== 'string' || typeof prefix !== 'string') throw new TypeError('scan: indexName and prefix must be strings');
    const key = start?.key;
    const [secondary, primary] = typeof key === 'string' ? [key, undefined] : Array.isArray(key) ? key : [undefined, undefined];
    if (key !== undefined && (typeof secondary !== 'string' || (primary !== undefined && typeof primary !== 'string')))
      throw new TypeError('scan: start.key must be a secondary key, or [secondary, primary]');
    if (limit <= 0) return;
    // Before the prefix, a start says nothing more than the prefix does.
    const from = secondary !== undefined && compareUTF8(secondary, prefix) >= 0 ? { secondary, key: primary, exclusive: start?.exclusive ?? false } : undefined;
    let left = limit;
    for await (const page of this.indexRange(indexName, prefix, from, keysOnly)) {
      if (page.length >= left) return yield page.slice(0, left);
      left -= page.length;
      yield page;
    }
  }

  /** Ends the transaction: every later call throws. */
  close(): void {
    this.#open = false;
  }

  /** The value at `key` as this transaction sees it; subclasses lay their writes over the space. */
  protected lookup(key: string): Promise<JSONValue | undefined | typeof DELETED> {
    return this.space.get(key);
  }

  /** The entries in range in key order, a page at a time, as this transaction sees them (removed ones as {@link DELETED}). */
  protected range(
    prefix: string,
    from: { key: string; exclusive: boolean } | undefined,
  ): AsyncIterable<ReadonlyArray<readonly [string, JSONValue | typeof DELETED]>> {
    return this.space.scan(prefix, from);
  }

  protected check(): void {
    if (!this.#open) throw new Error(`${this.describe()} is closed`);
  }

  /** What an error message calls this transaction. */
  protected describe(): string {
    return 'The transaction';
  }

  protected checkKey(key: unknown): asserts key is string {
    this.check();
    // Args come from the wire: without this, `del(args.key)` with a number would delete "0".
    if (typeof key !== 'string') throw new TypeError(`A key must be a string, got ${key === null ? 'null' : typeof key}`);
    // Keys order by their UTF-8 bytes; refuse one with none here, alike in every store.
    if (hasLoneSurrogate(key)) throw new TypeError(`Key ${JSON.stringify(key.slice(0, 100))} holds a lone surrogate, which has no UTF-8 form`);
    if (!fitsUTF8(key, this.#limits.keyBytes)) {
      throw new RangeError(`A key of ${utf8Length(key)} bytes is longer than the limit of ${this.#limits.keyBytes} (limits.keyBytes)`);
    }
  }

  /** Live entries in range, a page at a time. */
  async *#pages({ prefix = '', start, limit = Infinity }: ScanOptions): AsyncGenerator<ReadonlyArray<readonly [string, JSONValue]>> {
    this.check();
    if (typeof prefix !== 'string' || (start !== undefined && typeof start.key !== 'string')) {
      throw new TypeError('scan: prefix and start.key must be strings');
    }
    if (limit <= 0) return;
    const from = start && compareUTF8(start.key, prefix) >= 0 ? { key: start.key, exclusive: start.exclusive ?? false } : undefined;
    let left = limit;
    for await (const page of this.range(prefix, from)) {
      const kept = page.filter((entry): entry is readonly [string, JSONValue] => entry[1] !== DELETED);
      if (kept.length >= left) return yield kept.slice(0, left);
      left -= kept.length;
      yield kept;
    }
  }
}

/**
 * An async iterator over the items of `pages`, each mapped by `item`, that can also collect the
 * rest of them. Not a generator: a generator's yield costs a trip through the microtask queue
 * per item, and scans are the hot path of views and many mutators.
 */
function iterator<E, T>(pages: AsyncIterator<ReadonlyArray<E>>, item: (entry: E) => T): ScanIterator<T> {
  let page: ReadonlyArray<E> = [];
  let at = 0;
  let done = false;
  const next = async (): Promise<IteratorResult<T>> => {
    while (at >= page.length) {
      if (done) return { value: undefined, done: true };
      const result = await pages.next();
      if (result.done) {
        done = true;
        return { value: undefined, done: true };
      }
      page = result.value;
      at = 0;
    }
    return { value: item(page[at++]!), done: false };
  };
  const self: ScanIterator<T> = {
    next,
    async return(value?: unknown) {
      done = true;
      page = [];
      await pages.return?.();
      return { value: value as T, done: true };
    },
    [Symbol.asyncIterator]: () => self,
    async toArray() {
      const out: T[] = [];
      for (let result = await next(); !result.done; result = await next()) out.push(result.value);
      return out;
    },
  };
  return self;
}
