import { compareUTF8 } from '../../base/utf8.js';
import { Prefixes } from './prefixes.js';
import type { SpaceKeys } from './keys.js';

// The entry rows a reset reads, as ranges in the order it reads them. In key order, a range per
// prefix of the view. With a first sync's `order`, the keys of each prefix named come first, in
// that order (those of the view only, less those an earlier one sent), then the rest of the view
// in key order. A region with holes in it (the rest, around the prefixes sent first) is read as
// ranges between the holes, so every key is read in exactly one range: a page's cursor (a range's
// number and the last row read) then names where the next page starts, whatever the order.

/**
 * Entry rows a reset reads: those starting with `prefix`, from `start` on and before `end`; or
 * (`only`) the one row `prefix` itself.
 */
export interface EntryRange {
  readonly prefix: string;
  readonly only?: true;
  readonly start?: { readonly key: string; readonly exclusive?: true };
  readonly end?: string;
}

/** The entry rows of `view` (all the space without one), the keys of `order`'s prefixes first. */
export function entryRanges(keys: SpaceKeys, view: Prefixes | undefined, order: readonly string[] = []): EntryRange[] {
  const all = view ?? WHOLE;
  const ranges: EntryRange[] = [];
  const add = (regions: Array<{ prefix: string; except: Prefixes }>) => {
    for (const { prefix, except } of regions) ranges.push(...regionRanges(keys, prefix, except));
  };
  const sent: string[] = [];
  for (const first of order) {
    // Outside the view, a prefix names nothing: only the view's keys under it are read.
    add(Prefixes.canonical([first]).intersect(all).minus(Prefixes.canonical(sent)));
    sent.push(first);
  }
  add(all.minus(Prefixes.canonical(sent)));
  return ranges;
}

const WHOLE = Prefixes.canonical(['']);

/**
 * The rows of the keys `region` covers (`coversKey`) less those `except` covers (prefixes inside
 * it), in key order: for `list/a`, the row of `list/a` itself, then those under `list/a/` around
 * the holes. The keys a prefix `x` covers are the row `x` and the rows under `x/`, which sort
 * from `x/` up to `x0` (`0` follows `/`): one row and one run of rows, cut out of the region.
 */
function regionRanges(keys: SpaceKeys, region: string, except: Prefixes): EntryRange[] {
  const ranges: EntryRange[] = [];
  let under = region;
  if (region !== '' && !region.endsWith('/')) {
    ranges.push({ prefix: keys.entry(region), only: true });
    under = region + '/';
  }
  const prefix = keys.entry(under);
  const holes: Array<{ from: string; to?: string }> = [];
  for (const x of except.list) {
    if (!x.endsWith('/')) holes.push({ from: keys.entry(x) });
    const slashed = x.endsWith('/') ? x : x + '/';
    holes.push({ from: keys.entry(slashed), to: keys.entry(slashed.slice(0, -1) + '0') });
  }
  // Canonical prefixes cover none of each other, so their holes never overlap.
  holes.sort((a, b) => compareUTF8(a.from, b.from));
  let start: EntryRange['start'];
  for (const hole of holes) {
    const empty = start === undefined ? hole.from === prefix : !start.exclusive && start.key === hole.from;
    if (!empty) ranges.push({ prefix, ...(start && { start }), end: hole.from });
    start = hole.to === undefined ? { key: hole.from, exclusive: true } : { key: hole.to };
  }
  // A hole that runs to the region's end leaves nothing after it.
  if (start === undefined || start.key.startsWith(prefix)) ranges.push({ prefix, ...(start && { start }) });
  return ranges;
}
