import type { JSONValue } from '../protocol/json.js';
import { compareUTF8, hasLoneSurrogate } from '../storage/compare-utf8.js';
import { frozenJSONCopy } from './frozen-json.js';
import { fitsUTF8, type Limits, utf8Length } from './limits.js';
import type { SpaceSession } from './strategy.js';
import type { ScanIndexOptions, ScanIterator, ScanOptions, ScanResult, WriteTransaction } from './transaction.js';

const DELETED = Symbol('deleted');

/** Who runs a mutation: its client, its id, and the authenticated user. */
export interface MutationInfo {
  clientID: string;
  mutationID: number;
  userID: string | undefined;
}

/**
 * A transaction for one mutation. Its writes wait in a buffer until the mutator returns, then
 * `flush` hands them to the space; when the mutator throws they are dropped. This is what keeps
 * a failing mutator's writes out of a batch on every store, with or without savepoints.
 */
export class MutationTransaction implements WriteTransaction {
  readonly reason = 'authoritative';
  readonly location = 'server';
  readonly environment = 'server';
  readonly clientID: string;
  readonly mutationID: number;
  readonly userID: string | undefined;
  readonly #space: SpaceSession;
  readonly #limits: Pick<Limits, 'keyBytes' | 'valueBytes'>;
  readonly #writes = new Map<string, JSONValue | typeof DELETED>();
  #open = true;

  constructor(space: SpaceSession, info: MutationInfo, limits: Pick<Limits, 'keyBytes' | 'valueBytes'>) {
    this.#space = space;
    this.clientID = info.clientID;
    this.mutationID = info.mutationID;
    this.userID = info.userID;
    this.#limits = limits;
  }

  // One signature for the interface's typed overloads: the values are JSON either way.
  async get(key: string): Promise<any> {
    this.#checkKey(key);
    const written = this.#writes.get(key);
    if (written !== undefined) return written === DELETED ? undefined : written;
    return this.#space.get(key);
  }

  async has(key: string): Promise<boolean> {
    return (await this.get(key)) !== undefined;
  }

  async isEmpty(): Promise<boolean> {
    for await (const _ of this.#entries({ limit: 1 })) return false;
    return true;
  }

  scan(options: ScanOptions | ScanIndexOptions = {}): ScanResult<any, any> {
    if ('indexName' in options && options.indexName !== undefined) {
      throw new TypeError(`scan: indexes (indexName ${JSON.stringify(String(options.indexName).slice(0, 100))}) exist only on the client; scan by key prefix on the server`);
    }
    const entries = () => this.#entries(options as ScanOptions);
    const values = () =>
      iterator(async function* () {
        for await (const [, value] of entries()) yield value;
      });
    return {
      [Symbol.asyncIterator]: values,
      values,
      keys: () =>
        iterator(async function* () {
          for await (const [key] of entries()) yield key;
        }),
      entries: () => iterator(entries),
      toArray: () => values().toArray(),
    };
  }

  async set(key: string, value: JSONValue): Promise<void> {
    this.#checkKey(key);
    this.#writes.set(key, frozenJSONCopy(value, this.#limits.valueBytes));
  }

  put(key: string, value: JSONValue): Promise<void> {
    return this.set(key, value);
  }

  async del(key: string): Promise<boolean> {
    const had = await this.has(key);
    this.#writes.set(key, DELETED);
    return had;
  }

  /** Ends the mutation: its writes go to the space. */
  async flush(): Promise<void> {
    this.#open = false;
    for (const [key, value] of this.#writes) {
      if (value === DELETED) await this.#space.del(key);
      else await this.#space.put(key, value);
    }
  }

  /** Ends the mutation without writing anything. */
  discard(): void {
    this.#open = false;
    this.#writes.clear();
  }

  #check(): void {
    // A mutator that forgot an `await`, or one abandoned past its deadline, would otherwise write
    // into whatever runs next.
    if (!this.#open) throw new Error(`The transaction of mutation ${this.mutationID} is closed`);
  }

  #checkKey(key: unknown): void {
    this.#check();
    // Args come from the wire: without this, `del(args.key)` with a number would delete "0".
    if (typeof key !== 'string') throw new TypeError(`A key must be a string, got ${key === null ? 'null' : typeof key}`);
    // Keys order by their UTF-8 bytes; refuse one with none here, alike in every store.
    if (hasLoneSurrogate(key)) throw new TypeError(`Key ${JSON.stringify(key.slice(0, 100))} holds a lone surrogate, which has no UTF-8 form`);
    if (!fitsUTF8(key, this.#limits.keyBytes)) {
      throw new RangeError(`A key of ${utf8Length(key)} bytes is longer than the limit of ${this.#limits.keyBytes} (limits.keyBytes)`);
    }
  }

  /** Live entries in range, with this mutation's writes laid over the space's. */
  async *#entries({ prefix = '', start, limit = Infinity }: ScanOptions): AsyncGenerator<readonly [string, JSONValue]> {
    this.#check();
    if (typeof prefix !== 'string' || (start !== undefined && typeof start.key !== 'string')) {
      throw new TypeError('scan: prefix and start.key must be strings');
    }
    if (limit <= 0) return;
    const from = start && compareUTF8(start.key, prefix) >= 0 ? { key: start.key, exclusive: start.exclusive ?? false } : undefined;
    let count = 0;
    for await (const [key, value] of this.#merged(prefix, from)) {
      if (value === DELETED) continue;
      yield [key, value];
      if (++count >= limit) return;
    }
  }

  /** The space's entries and the buffered writes in range, merged in key order. */
  async *#merged(prefix: string, from: { key: string; exclusive: boolean } | undefined) {
    const writes = this.#writes;
    const inRange = (key: string) =>
      key.startsWith(prefix) && (from === undefined || compareUTF8(key, from.key) >= (from.exclusive ? 1 : 0));
    const buffered = [...writes.keys()].filter(inRange).sort(compareUTF8);
    let b = 0;
    for await (const [key, stored] of this.#space.scan(prefix, from)) {
      for (; b < buffered.length && compareUTF8(buffered[b]!, key) < 0; b++) yield [buffered[b]!, writes.get(buffered[b]!)!] as const;
      if (buffered[b] === key) b++;
      yield [key, writes.has(key) ? writes.get(key)! : stored] as const;
    }
    for (; b < buffered.length; b++) yield [buffered[b]!, writes.get(buffered[b]!)!] as const;
  }
}

/** An iterator over `make()`'s items that can also collect the rest of them. */
function iterator<T>(make: () => AsyncGenerator<T>): ScanIterator<T> {
  const items = make();
  return Object.assign(items, {
    async toArray() {
      const out: T[] = [];
      for await (const item of items) out.push(item);
      return out;
    },
  });
}
