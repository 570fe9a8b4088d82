import type { JSONValue } from '../../protocol/json.js';
import { compareUTF8 } from '../../base/utf8.js';
import type { QuotaExceededError } from '../../base/errors.js';
import { measuredJSONCopy } from './frozen-json.js';
import type { Limits } from './limits.js';
import { overQuota, type SpaceQuota } from './quota.js';
import { DELETED, SpaceReadTransaction } from './read-transaction.js';
import type { SpaceSession } from '../version/strategy.js';
import type { WriteTransaction } from './transaction.js';
import { EMIT } from '../../base/emit.js';

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
export class MutationTransaction extends SpaceReadTransaction implements WriteTransaction {
  readonly reason = 'authoritative';
  readonly location = 'server';
  readonly environment = 'server';
  readonly clientID: string;
  readonly mutationID: number;
  readonly userID: string | undefined;
  readonly #space: SpaceSession;
  readonly #limits: Pick<Limits, 'keyBytes' | 'valueBytes'>;
  readonly #writes = new Map<string, JSONValue | typeof DELETED>();
  /** The UTF-8 JSON bytes of each value set, measured while copying it: the space counts them. */
  readonly #bytes = new Map<string, number>();
  /** Events the mutator emitted, committed after its writes (see emit.ts), each with its payload's bytes. */
  readonly #events: Array<readonly [topic: string, payload: JSONValue, bytes: number]> = [];

  constructor(space: SpaceSession, info: MutationInfo, limits: Pick<Limits, 'keyBytes' | 'valueBytes'>) {
    super(space, limits);
    this.#space = space;
    this.clientID = info.clientID;
    this.mutationID = info.mutationID;
    this.userID = info.userID;
    this.#limits = limits;
  }

  /** A mutator's own writes are not in the space's indexes yet: an index read here would miss them. */
  protected override indexRange(name: string): never {
    throw new TypeError(
      `scan: indexes (indexName ${JSON.stringify(name.slice(0, 100))}) exist only on the client for mutators; on the server, views read them (the context's \`indexes\`), and a mutator scans by key prefix`,
    );
  }

  async set(key: string, value: JSONValue): Promise<void> {
    this.checkKey(key);
    this.#space.checkWrite(key);
    const { copy, bytes } = measuredJSONCopy(value, this.#limits.valueBytes);
    this.#writes.set(key, copy);
    this.#bytes.set(key, bytes);
  }

  put(key: string, value: JSONValue): Promise<void> {
    return this.set(key, value);
  }

  async del(key: string): Promise<boolean> {
    const had = await this.has(key);
    this.#writes.set(key, DELETED);
    return had;
  }

  /** The outbox (see emit.ts): an event committed with this mutation's writes, if it commits. */
  async [EMIT](topic: string, payload: unknown): Promise<void> {
    this.check();
    if (!this.#space.logging)
      throw new TypeError(
        'emit: events go out through the change feed, which is off on this server: turn it on with the context option `changes` (createContext({ ..., changes: {} }))',
      );
    if (typeof topic !== 'string' || topic.length === 0 || topic.length > MAX_TOPIC)
      throw new TypeError(
        `emit: a topic is a string of 1 to ${MAX_TOPIC} characters, got ${typeof topic === 'string' ? `one of ${topic.length}` : typeof topic}`,
      );
    if (this.#events.length >= MAX_EVENTS) throw new RangeError(`emit: a mutation emits at most ${MAX_EVENTS} events`);
    const { copy, bytes } = measuredJSONCopy(payload as JSONValue, this.#limits.valueBytes);
    this.#events.push([topic, copy, bytes]);
  }

  /** Whether this mutation's writes would take `space` over `quota` (see quota.ts): the error to fail it with. */
  overQuota(space: string, quota: SpaceQuota): Promise<QuotaExceededError | undefined> {
    return overQuota(
      this.#space,
      space,
      quota,
      this.#writes,
      this.#bytes,
      this.#events.map(([topic, , bytes]) => [topic, bytes] as const),
    );
  }

  /** Ends the mutation: its writes go to the space. */
  async flush(): Promise<void> {
    this.close();
    for (const [key, value] of this.#writes) {
      if (value === DELETED) await this.#space.del(key);
      else await this.#space.put(key, value, this.#bytes.get(key));
    }
    for (const [topic, payload] of this.#events) await this.#space.emit(topic, payload);
  }

  /** Ends the mutation without writing anything. */
  discard(): void {
    this.close();
    this.#writes.clear();
    this.#bytes.clear();
    this.#events.length = 0;
  }

  protected override describe(): string {
    return `The transaction of mutation ${this.mutationID}`;
  }

  protected override lookup(key: string): Promise<JSONValue | undefined | typeof DELETED> {
    const written = this.#writes.get(key);
    return written !== undefined ? Promise.resolve(written) : this.#space.get(key);
  }

  /** The space's entries and the buffered writes in range, merged in key order, a page at a time. */
  protected override async *range(prefix: string, from: { key: string; exclusive: boolean } | undefined) {
    const writes = this.#writes;
    const inRange = (key: string) => key.startsWith(prefix) && (from === undefined || compareUTF8(key, from.key) >= (from.exclusive ? 1 : 0));
    const buffered = [...writes.keys()].filter(inRange).sort(compareUTF8);
    let b = 0;
    for await (const page of this.#space.scan(prefix, from)) {
      const merged: Array<readonly [string, JSONValue | typeof DELETED]> = [];
      for (const [key, stored] of page) {
        for (; b < buffered.length && compareUTF8(buffered[b]!, key) < 0; b++) merged.push([buffered[b]!, writes.get(buffered[b]!)!]);
        if (buffered[b] === key) b++;
        merged.push([key, writes.has(key) ? writes.get(key)! : stored]);
      }
      yield merged;
    }
    yield buffered.slice(b).map((key) => [key, writes.get(key)!] as const);
  }
}

/** The longest topic, in characters. */
const MAX_TOPIC = 256;
/** Events one mutation may emit. */
const MAX_EVENTS = 1_000;
