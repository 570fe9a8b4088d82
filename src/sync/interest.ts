import type { Prefixes } from './view.js';

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

  constructor(prefixes: Prefixes, reads: ViewReads) {
    this.#prefixes = prefixes;
    this.#keys = reads.keys;
    this.#scans = reads.scans;
  }

  /** Whether a change of `key` may change this pull's answer. */
  concerns(key: string): boolean {
    return this.#prefixes.covers(key) || this.#keys.has(key) || this.#scans.some((prefix) => key.startsWith(prefix));
  }
}

/** The reads of one run of a view: keys got, prefixes scanned. */
export class ViewReads {
  readonly keys = new Set<string>();
  readonly scans: string[] = [];

  /** False once the view read more than an interest keeps ({@link MAX_READS}): its pokes then go unfiltered. */
  get kept(): boolean {
    return this.keys.size + this.scans.length <= MAX_READS;
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
