import { compareUTF8 } from '../../base/utf8.js';
import type { JSONValue } from '../../protocol/json.js';
import type { StorageTransaction } from '../../storage/types.js';
import { definitionText, type IndexDefinition, type IndexDefinitions, secondaryOf } from './indexes.js';
import { storedLength, type SpaceKeys } from './keys.js';
import { scanPages } from './patch.js';
import type { Meta } from './records.js';
import type { SpaceSession } from './strategy.js';

/** Where an index scan starts: at a secondary key, or at a secondary and primary key. */
type Start = { secondary: string; key?: string | undefined; exclusive: boolean };
type IndexEntry = readonly [readonly [string, string], JSONValue];

/**
 * The rows of a space's indexes (`n/`, see keys.ts and indexes.ts): kept as entries change, built
 * from the entries when they are not whole, and read in index order.
 */
export class IndexRows {
  readonly #tx: StorageTransaction;
  readonly #keys: SpaceKeys;
  readonly #indexes: IndexDefinitions;
  readonly #maxKeyBytes: number | undefined;
  /** The space's live entries, as the session reads them. */
  readonly #entries: Pick<SpaceSession, 'scan' | 'getMany'>;
  /** Whether each index's rows are whole, once a scan read the meta record (a view scans once per list). */
  readonly #whole = new Map<string, boolean>();

  constructor(
    tx: StorageTransaction,
    keys: SpaceKeys,
    indexes: IndexDefinitions,
    maxKeyBytes: number | undefined,
    entries: Pick<SpaceSession, 'scan' | 'getMany'>,
  ) {
    this.#tx = tx;
    this.#keys = keys;
    this.#indexes = indexes;
    this.#maxKeyBytes = maxKeyBytes;
    this.#entries = entries;
  }

  /** Moves `key`'s rows from its value `before` to `after` (undefined: none); what changed, as {@link indexTouch} keys. */
  async write(key: string, before: JSONValue | undefined, after: JSONValue | undefined): Promise<string[]> {
    const touched: string[] = [];
    for (const [name, index] of Object.entries(this.#indexes)) {
      const from = before === undefined ? undefined : this.#secondary(name, index, key, before);
      const to = after === undefined ? undefined : this.#secondary(name, index, key, after);
      if (from === to) continue;
      if (from !== undefined) await this.#tx.del(this.#keys.indexRow(name, from, key));
      if (to !== undefined) await this.#tx.put(this.#keys.indexRow(name, to, key), null);
      for (const secondary of [from, to]) if (secondary !== undefined) touched.push(indexTouch(name, secondary));
    }
    return touched;
  }

  /**
   * Rebuilds each index whose rows are not whole (`built`: the definitions whose are), from the
   * entries; the definitions now kept, undefined for none. Called at a commit.
   */
  async keep(built: Record<string, string>): Promise<Record<string, string> | undefined> {
    const names = Object.keys(this.#indexes);
    if (names.length === 0) return undefined;
    const kept: Record<string, string> = {};
    for (const name of names) {
      const index = this.#indexes[name]!;
      const text = definitionText(index);
      kept[name] = text;
      if (built[name] === text) continue;
      // Rows of another definition, or ones a write that did not keep them left behind.
      for await (const page of scanPages(this.#tx, { prefix: this.#keys.index(name) })) for (const [row] of page) await this.#tx.del(row);
      for await (const page of this.#entries.scan(index.prefix ?? '')) {
        for (const [key, value] of page) {
          const secondary = this.#secondary(name, index, key, value);
          if (secondary !== undefined) await this.#tx.put(this.#keys.indexRow(name, secondary, key), null);
        }
      }
    }
    return kept;
  }

  /** See `SpaceSession.scanIndex`. */
  async *scan(name: string, prefix: string, start: Start | undefined, keysOnly: boolean): AsyncGenerator<ReadonlyArray<IndexEntry>> {
    const index = this.#indexes[name];
    if (index === undefined) {
      const names = Object.keys(this.#indexes);
      throw new TypeError(
        `scan: no index is named ${JSON.stringify(name.slice(0, 100))} (${names.length === 0 ? 'the context has no indexes' : `indexes: ${names.map((known) => JSON.stringify(known)).join(', ')}`})`,
      );
    }
    if (!(await this.#isWhole(name, index))) {
      yield* this.#scanEntries(index, prefix, start);
      return;
    }
    const base = this.#keys.index(name);
    const from = start && {
      key: base + start.secondary + (start.key === undefined ? '' : '\u0000' + start.key),
      exclusive: start.key !== undefined && start.exclusive,
    };
    for await (const page of scanPages(this.#tx, { prefix: base + prefix, start: from })) {
      const found = page.map(([row]) => {
        const rest = row.slice(base.length);
        const end = rest.indexOf('\u0000');
        return [rest.slice(0, end), rest.slice(end + 1)] as const;
      });
      if (keysOnly) {
        yield found.map((indexKey) => [indexKey, null] as const);
        continue;
      }
      const values = await this.#entries.getMany(found.map(([, key]) => key));
      yield found.flatMap((indexKey, i) => (values[i] === undefined ? [] : [[indexKey, values[i]!] as const]));
    }
  }

  /**
   * Whether the rows of `index` are whole, from the meta record: a pull's view reads through a
   * session that has not read it. An empty space's are.
   */
  async #isWhole(name: string, index: IndexDefinition): Promise<boolean> {
    let whole = this.#whole.get(name);
    if (whole === undefined) {
      const meta = (await this.#tx.get(this.#keys.meta)) as Meta | undefined;
      whole = meta === undefined || (meta.indexesAt === meta.version && meta.indexes?.[name] === definitionText(index));
      this.#whole.set(name, whole);
    }
    return whole;
  }

  /** An index whose rows are not whole yet (no write since it was defined): read from the entries, sorted here. */
  async *#scanEntries(index: IndexDefinition, prefix: string, start: Start | undefined): AsyncGenerator<ReadonlyArray<IndexEntry>> {
    const found: IndexEntry[] = [];
    for await (const page of this.#entries.scan(index.prefix ?? '')) {
      for (const [key, value] of page) {
        const secondary = secondaryOf(index, key, value);
        if (secondary?.startsWith(prefix)) found.push([[secondary, key], value]);
      }
    }
    found.sort(([[a, x]], [[b, y]]) => compareUTF8(a, b) || compareUTF8(x, y));
    const after =
      start === undefined
        ? found
        : found.filter(([[secondary, key]]) => {
            const bySecondary = compareUTF8(secondary, start.secondary);
            if (bySecondary !== 0 || start.key === undefined) return bySecondary >= 0;
            const byKey = compareUTF8(key, start.key);
            return start.exclusive ? byKey > 0 : byKey >= 0;
          });
    for (let i = 0; i < after.length; i += PAGE) yield after.slice(i, i + PAGE);
  }

  /** `key`'s secondary key in the index, unless it has none or its row would be longer than the store holds (it is then left out). */
  #secondary(name: string, index: IndexDefinition, key: string, value: JSONValue): string | undefined {
    const secondary = secondaryOf(index, key, value);
    if (secondary === undefined || this.#maxKeyBytes === undefined) return secondary;
    return storedLength(this.#keys.indexRow(name, secondary, key)) > this.#maxKeyBytes ? undefined : secondary;
  }
}

/**
 * What a change of an index's rows under `secondary` is told to pokes as: a key no entry has,
 * which a view that scanned the index (see interest.ts) records as a prefix.
 */
export function indexTouch(name: string, secondary: string): string {
  return `\u0000${name}\u0000${secondary}`;
}

const PAGE = 256;
