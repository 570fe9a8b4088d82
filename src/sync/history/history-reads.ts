import type { JSONValue } from '../../protocol/json.js';
import type { Storage } from '../../storage/types.js';
import { SpaceKeys } from '../version/keys.js';
import type { Meta } from '../version/records.js';
import { asOfPages } from './as-of.js';
import { changesBetween, checkKept, type LoggedChange } from './log-reads.js';

/**
 * The reads of a space's history, each in one read-only snapshot: the space as of a version, and
 * the changes of a key, a prefix or the space. What the backend's `at` and `readHistory` and the
 * HTTP door's `GET …/history` answer.
 */

/** Options for `at` (backend/history.ts). */
export interface AtOptions {
  /** Only keys that start with this. Default: every key. */
  prefix?: string;
  /** Only keys after this one, to read on from a page's `next`. */
  after?: string;
  /** At most this many entries; `more` says whether there were more. Default: all. */
  limit?: number;
}

/** A space as it was at a version (see `at`). */
export interface AsOf {
  version: number;
  /** Its entries then, in key order. */
  entries: Array<[key: string, value: JSONValue]>;
  /** There were more entries than `limit`: read on with `after: next`. */
  more: boolean;
  next?: string;
}

/** The space as it was at `version`, a page of `options.limit` entries (see `at`). */
export async function readAsOf(storage: Storage, space: string, version: number, options: AtOptions = {}): Promise<AsOf> {
  const limit = options.limit ?? Infinity;
  if (!(limit === Infinity || (Number.isSafeInteger(limit) && limit > 0)))
    throw new TypeError(`limit must be a whole number of at least 1, got ${JSON.stringify(options.limit)}`);
  const keys = new SpaceKeys(space);
  return storage.transaction(
    async (tx) => {
      const meta = (await tx.get(keys.meta)) as Meta | undefined;
      const entries: Array<[string, JSONValue]> = [];
      for await (const page of asOfPages(tx, keys, space, meta, version, options.prefix ?? '', options.after)) {
        for (const entry of page) {
          if (entries.length === limit) return { version, entries, more: true, next: entries.at(-1)![0] };
          entries.push(entry);
        }
      }
      return { version, entries, more: false };
    },
    { readOnly: true, space },
  );
}

/** Options for `readHistory` (backend/history.ts). */
export interface ReadHistoryOptions {
  /** The changes of this key alone. */
  key?: string;
  /** The changes of keys that start with this. Default: every key. */
  prefix?: string;
  /** Changes after this version only (a page's `version` reads on). Default: the oldest kept. */
  after?: number;
  /** At most this many changes, whole versions at a time. Default: 1,000; at most 10,000. */
  limit?: number;
}

/** A page of a space's history (see `readHistory`). */
export interface HistoryPage {
  /** Each change of the keys asked for, oldest first: its version, time, values before and after (absent: none) and what made it. */
  changes: LoggedChange[];
  /** The versions the space's history keeps. */
  kept: { from: number; to: number };
  /** Read on after this version: the last one this page read. */
  version: number;
  more: boolean;
}

/** A page of the space's history (see `readHistory`). */
export async function readHistoryPage(storage: Storage, space: string, options: ReadHistoryOptions = {}): Promise<HistoryPage> {
  const limit = options.limit ?? 1_000;
  if (!(Number.isSafeInteger(limit) && limit > 0 && limit <= 10_000))
    throw new TypeError(`limit must be a whole number from 1 to 10,000, got ${JSON.stringify(options.limit)}`);
  // Both would be a question with two answers: refused, as the CLI and HTTP refuse it, not one picked.
  if (options.key !== undefined && options.prefix !== undefined) throw new TypeError('readHistory takes key or prefix, not both');
  const keys = new SpaceKeys(space);
  const wanted = options.key !== undefined ? (key: string) => key === options.key : (key: string) => key.startsWith(options.prefix ?? '');
  return storage.transaction(
    async (tx) => {
      const meta = (await tx.get(keys.meta)) as Meta | undefined;
      const kept = checkKept(space, meta, meta?.version ?? 0);
      const after = options.after ?? kept.from;
      // A version past the space's is refused too: the reader saw versions this history never had (the space was replaced).
      if (options.after !== undefined) checkKept(space, meta, after);
      const changes: LoggedChange[] = [];
      let version = after;
      for await (const page of changesBetween(tx, keys, after, kept.to)) {
        for (const change of page) {
          // A page ends between versions, so that reading on after `version` misses nothing.
          if (changes.length >= limit && change.version !== version) return { changes, kept, version, more: true };
          version = change.version;
          if (wanted(change.key)) changes.push(change);
        }
      }
      return { changes, kept, version: kept.to, more: false };
    },
    { readOnly: true, space },
  );
}
