import { fitsUTF8, hasLoneSurrogate } from '../base/utf8.js';
import type { Limits } from './transactions/limits.js';

/** Whose first sync is being ordered: the user, the client group, and the prefixes of the user's view. */
export interface FirstSyncOrderRequest {
  /** The authenticated user, or undefined when requests are anonymous. */
  userID: string | undefined;
  /** The pulling client group. */
  clientGroupID: string;
  /** The prefixes the user's view gives (canonical: sorted, none covering another); undefined without a `view`. */
  view: readonly string[] | undefined;
}

/**
 * Which key prefixes a first sync in pages sends first, in that order: a list, or a function of
 * the user and their view that returns one (see `FirstSyncOptions.order`).
 */
export type FirstSyncOrder = readonly string[] | ((request: FirstSyncOrderRequest) => readonly string[]);

/**
 * The order `option` gives `request`, checked: an array of distinct prefixes that could start a
 * key, none covered by one before it (it would say nothing more), `''` never (it is key order).
 * Throws a TypeError or RangeError that says what was wrong, naming `source`.
 */
export function orderOf(option: FirstSyncOrder, request: FirstSyncOrderRequest, limits: Pick<Limits, 'keyBytes'>): readonly string[] {
  const source = typeof option === 'function' ? 'the firstSync.order function' : 'firstSync.order';
  const order: unknown = typeof option === 'function' ? option(request) : option;
  checkOrder(order, source, limits);
  return order;
}

/** Throws unless `order` is a list of prefixes a first sync can send first (see {@link orderOf}). */
export function checkOrder(order: unknown, source: string, limits: Pick<Limits, 'keyBytes'>): asserts order is readonly string[] {
  // A promise here means an async function: the order is read inside the pull's snapshot, which waits for no app code.
  if (!Array.isArray(order))
    throw new TypeError(
      `${source} must give an array of key prefixes, got ${order === null ? 'null' : order instanceof Promise ? 'a promise (it must not be async)' : typeof order}`,
    );
  if (order.length > MAX_ORDER)
    throw new RangeError(`${source} gave ${order.length} prefixes, more than ${MAX_ORDER}: name what the first screen needs, the rest follows in key order`);
  const seen = new Set<string>();
  for (const [i, prefix] of (order as unknown[]).entries()) {
    if (typeof prefix !== 'string') throw new TypeError(`${source} gave a prefix that is not a string at [${i}]: ${prefix === null ? 'null' : typeof prefix}`);
    const shown = JSON.stringify(prefix.slice(0, 100));
    if (prefix === '') throw new TypeError(`${source} gave '' at [${i}], which covers every key: leave it out (the keys no prefix names follow in key order)`);
    if (hasLoneSurrogate(prefix)) throw new TypeError(`${source} gave the prefix ${shown}, which holds a lone surrogate`);
    if (!fitsUTF8(prefix, limits.keyBytes))
      throw new RangeError(`${source} gave a prefix longer than a key may be (limits.keyBytes, ${limits.keyBytes} bytes) at [${i}]`);
    // A prefix covered by an earlier one was sent with it: a duplicate or a slip, worth telling.
    const earlier = coveringOf(seen, prefix);
    if (earlier !== undefined)
      throw new TypeError(
        `${source} gave ${shown} at [${i}], ${earlier === prefix ? 'twice' : `after ${JSON.stringify(earlier.slice(0, 100))}, which covers it`}: each prefix once, the narrower first`,
      );
    seen.add(prefix);
  }
}

/**
 * The most prefixes an order names. What the first screen needs is a few; each page works out
 * its ranges from the order again, at a cost that grows with the square of its length.
 */
export const MAX_ORDER = 100;

/** The prefix of `set` that covers `prefix` (see `coversKey`), if any: only it or its cuts at a `/` can. */
function coveringOf(set: ReadonlySet<string>, prefix: string): string | undefined {
  if (set.has(prefix)) return prefix;
  for (let slash = prefix.indexOf('/'); slash >= 0; slash = prefix.indexOf('/', slash + 1)) {
    for (const cut of [prefix.slice(0, slash), prefix.slice(0, slash + 1)]) if (cut !== prefix && set.has(cut)) return cut;
  }
  return undefined;
}
