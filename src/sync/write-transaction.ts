import type { JSONValue } from '../protocol/json.js';
import { compareUTF8, hasLoneSurrogate } from '../storage/compare-utf8.js';
import { frozenJSONCopy } from './frozen-json.js';
import type { SpaceSession } from './strategy.js';

/**
 * What a mutator gets on the server: the methods of the client's `WriteTransaction`, so one
 * mutator source runs on both sides, plus who is mutating. Values it reads are frozen.
 */
export interface WriteTransaction {
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
  /** The value at `key`, or undefined. */
  get(key: string): Promise<JSONValue | undefined>;
  /** Whether `key` has a value. */
  has(key: string): Promise<boolean>;
  /** Whether the space holds no entries at all. */
  isEmpty(): Promise<boolean>;
  /** Entries in key order (UTF-8 byte order, as on the client). */
  scan(options?: ScanOptions): ScanResult;
  /** Sets `key` to a JSON value (copied and frozen). */
  set(key: string, value: JSONValue): Promise<void>;
  /** Removes `key`; resolves to whether it had a value. */
  del(key: string): Promise<boolean>;
}

/** Which entries {@link WriteTransaction.scan} returns, as on the client. */
export interface ScanOptions {
  /** Only keys starting with this string. */
  prefix?: string;
  /** Start at this key, or just after it when `exclusive`. */
  start?: { key: string; exclusive?: boolean };
  /** At most this many entries. */
  limit?: number;
}

/** The result of a scan: iterate it for values, or ask for keys, entries or an array. */
export interface ScanResult extends AsyncIterable<JSONValue> {
  /** The values in key order. */
  values(): ScanIterator<JSONValue>;
  /** The keys in order. */
  keys(): ScanIterator<string>;
  /** `[key, value]` pairs in key order. */
  entries(): ScanIterator<readonly [string, JSONValue]>;
  /** All values, as an array. */
  toArray(): Promise<JSONValue[]>;
}

/** An async iterable that can also collect itself. */
export interface ScanIterator<T> extends AsyncIterable<T> {
  /** Everything, as an array. */
  toArray(): Promise<T[]>;
}

const DELETED = Symbol('deleted');

/**
 * A transaction for one mutation. Its writes wait in a buffer until the mutator returns, then
 * `flush` hands them to the space; when the mutator throws they are dropped. This is what keeps
 * a failing mutator's writes out of a batch on every store, with or without savepoints.
 */
export class MutationTransaction implements WriteTransaction {
  readonly reason = 'authoritative';
  readonly location = 'server';
  readonly #space: SpaceSession;
  readonly #writes = new Map<string, JSONValue | typeof DELETED>();
  #open = true;

  constructor(
    space: SpaceSession,
    readonly clientID: string,
    readonly mutationID: number,
    readonly userID: string | undefined,
  ) {
    this.#space = space;
  }

  async get(key: string): Promise<JSONValue | undefined> {
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

  scan(options: ScanOptions = {}): ScanResult {
    const entries = () => this.#entries(options);
    const values = iterator(async function* () {
      for await (const [, value] of entries()) yield value;
    });
    return {
      [Symbol.asyncIterator]: () => values[Symbol.asyncIterator](),
      values: () => values,
      keys: () =>
        iterator(async function* () {
          for await (const [key] of entries()) yield key;
        }),
      entries: () => iterator(entries),
      toArray: () => values.toArray(),
    };
  }

  async set(key: string, value: JSONValue): Promise<void> {
    this.#checkKey(key);
    this.#writes.set(key, frozenJSONCopy(value));
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
    // A mutator that forgot an `await` would otherwise write into whatever runs next.
    if (!this.#open) throw new Error(`The transaction of mutation ${this.mutationID} is closed`);
  }

  #checkKey(key: unknown): void {
    this.#check();
    // Args come from the wire: without this, `del(args.key)` with a number would delete "0".
    if (typeof key !== 'string') throw new TypeError(`A key must be a string, got ${key === null ? 'null' : typeof key}`);
    // Keys order by their UTF-8 bytes; refuse one with none here, alike in every store.
    if (hasLoneSurrogate(key)) throw new TypeError(`Key ${JSON.stringify(key)} holds a lone surrogate, which has no UTF-8 form`);
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

function iterator<T>(make: () => AsyncIterable<T>): ScanIterator<T> {
  return {
    [Symbol.asyncIterator]: () => make()[Symbol.asyncIterator](),
    async toArray() {
      const out: T[] = [];
      for await (const item of make()) out.push(item);
      return out;
    },
  };
}
