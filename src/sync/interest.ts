import { compareUTF8 } from '../base/utf8.js';
import type { JSONValue } from '../protocol/json.js';
import { indexTouch } from './version/index-rows.js';
import type { Prefixes } from './version/prefixes.js';

/**
 * What a pull's answer under a view depends on: the keys its prefixes cover, and what the view
 * read to choose them. A change that touches none of it leaves both the view and what it covers
 * as they were, so the client's next pull would be empty: its poke stream need not be told.
 */
export class ViewInterest {
  readonly #prefixes: Prefixes;
  readonly #keys: ReadonlySet<string>;
  /** Prefixes the view scanned (a scan reads whatever starts with its prefix, segment or not). */
  readonly #scans: readonly string[];
  /** What the view read of indexes, as ranges of their {@link indexTouch} keys. */
  readonly #ranges: readonly IndexRange[];

  constructor(prefixes: Prefixes, reads: ViewReads) {
    this.#prefixes = prefixes;
    this.#keys = reads.keys;
    this.#scans = reads.scans;
    this.#ranges = reads.ranges;
  }

  /** Whether a change of `key` may change this pull's answer. */
  concerns(key: string): boolean {
    return (
      this.#prefixes.covers(key) ||
      this.#keys.has(key) ||
      this.#scans.some((prefix) => key.startsWith(prefix)) ||
      this.#ranges.some(({ within, from, to }) => key.startsWith(within) && compareUTF8(key, from) >= 0 && (to === undefined || compareUTF8(key, to) <= 0))
    );
  }
}

/** The reads of one run of a view: keys got, prefixes scanned. */
export class ViewReads {
  readonly keys = new Set<string>();
  readonly scans: string[] = [];

  readonly ranges: IndexRange[] = [];

  /** False once the view read more than an interest keeps ({@link MAX_READS}): its pokes then go unfiltered. */
  get kept(): boolean {
    return this.keys.size + this.scans.length + this.ranges.length <= MAX_READS;
  }

  /**
   * Follows a scan of the index `name` as its pages are handed out: the range it records ends at
   * the last secondary key handed out (the view may stop anywhere in a page), or at the end of
   * `prefix` once the scan ran out. A view that reads one list's todos from `[list]` and stops at
   * the next list's so depends on that list alone, not on every list after it.
   */
  async *indexScan<T extends readonly [readonly [string, string], JSONValue]>(
    name: string,
    prefix: string,
    start: { secondary: string } | undefined,
    pages: AsyncIterable<ReadonlyArray<T>>,
  ): AsyncGenerator<ReadonlyArray<T>> {
    const from = indexTouch(name, start !== undefined && compareUTF8(start.secondary, prefix) > 0 ? start.secondary : prefix);
    const range: IndexRange = { within: indexTouch(name, prefix), from, to: from };
    if (this.kept) this.ranges.push(range);
    for await (const page of pages) {
      const last = page.at(-1);
      if (last !== undefined) range.to = indexTouch(name, last[0][0]);
      yield page;
    }
    range.to = undefined;
  }

  get(key: string): void {
    if (this.kept) this.keys.add(key);
  }

  scan(prefix: string): void {
    if (this.kept) this.scans.push(prefix);
  }
}

/** Reads an interest keeps; a view that reads more (a scan of every todo, say) is not filtered. */
const MAX_READS = 1_000;

/** A range of an index a view read: {@link indexTouch} keys under `within`, from `from` to `to` (undefined: its end). */
interface IndexRange {
  within: string;
  from: string;
  to: string | undefined;
}
