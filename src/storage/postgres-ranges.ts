/** The reads of the PostgreSQL store's `readMany` as ranges of stored text (postgres.ts). */
import { compareUTF8 } from '../base/utf8.js';
import { toTextKey, upperBound } from './sql.js';
import type { RangeRead } from './types.js';

/** What a range's statement depends on: its LIMIT (null: none) and whether it joins. */
export interface RangeShape {
  limit: number | null;
  join: boolean;
}

/** A read of `readMany` as its statement takes it. */
export interface Range extends RangeShape {
  /** Its place among the reads. */
  index: number;
  /** The key range as stored text, `[lo, hi)`. */
  lo: string;
  hi: string;
  /** The joined keys' prefix as stored text, and how many characters (code points) of each key as stored to drop. */
  joinPrefix: string | undefined;
  skip: number;
}

/**
 * A read of `readMany` as a range of stored text. An exclusive start is the least stored key
 * above it: stored keys never hold U+0000 (toTextKey), so none lies between the start and the
 * start followed by U+0001.
 */
export function range({ prefix, start, limit = Infinity, join }: RangeRead, index: number): Range {
  const hi = upperBound(prefix);
  const fromStart = start !== undefined && compareUTF8(start.key, prefix) >= 0;
  const lo = toTextKey(fromStart ? start.key : prefix) + (fromStart && start.exclusive === true ? '\u0001' : '');
  return {
    index,
    lo,
    hi: hi === undefined ? ABOVE_EVERY_KEY : toTextKey(hi),
    limit: Number.isFinite(limit) ? Math.max(0, Math.ceil(limit)) : null,
    join: join !== undefined,
    joinPrefix: join === undefined ? undefined : toTextKey(join.prefix),
    // PostgreSQL counts characters in code points: the prefix as stored, then `skip` ASCII ones.
    skip: join === undefined ? 0 : [...toTextKey(prefix)].length + join.skip,
  };
}

/** Most ranges in one statement; more are read in a transaction, a statement per this many. */
export const RANGES_PER_STATEMENT = 16;

/**
 * Text above every key the table can hold, for a range with no upper bound (the prefix `''`):
 * the btree holds keys of at most 2,704 bytes, so 676 code points of four bytes (U+10FFFF).
 */
const ABOVE_EVERY_KEY = '\u{10FFFF}'.repeat(677);
