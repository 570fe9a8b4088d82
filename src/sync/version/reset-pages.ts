import type { PatchOperation } from '../../protocol/pull-response.js';
import type { Storage, StorageTransaction } from '../../storage/types.js';
import type { SpaceKeys } from './keys.js';
import { entryText, type Patch, type TextPut } from './patch.js';
import type { Entry } from './records.js';
import type { Prefixes } from './prefixes.js';
import { compareUTF8 } from '../../base/utf8.js';
import { type EntryRange, entryRanges } from './reset-ranges.js';
import { recordOf } from '../../storage/records.js';

// A reset (a clear, then every live entry of the space or of a view) read a page at a time. The
// pull's own transaction reads the first pages; a space larger than that is read on, page by
// page, each in a short read-only transaction of its own, as the answer is sent: the server holds
// a page or two of a big space at a time, never all of it, and no transaction (nor the memory
// store's space lock) stays open while a slow client reads. The pages then come from different
// snapshots: each sends only the entries it finds as they were in the first (of a version up to
// the first's), and the pull ends with the changes since the first (process-pull.ts), which makes
// the whole answer that of its last snapshot. Nothing written after the first snapshot is sent
// before that last pull checks it may be (a view can have lost the prefix it was written under).

/** Where a reset read in pages has got to: the ranges of entry rows it reads, and how far. */
export interface ResetCursor {
  readonly ranges: readonly EntryRange[];
  /** The space's version in the pull's own transaction: a page leaves out entries written since. */
  readonly version: number;
  /** The range being read. */
  readonly range: number;
  /** The last row read in it; undefined: none yet. */
  readonly after: string | undefined;
}

/** A page of a reset: its operations, about the characters of their JSON (0: not known), and where the next page starts. */
export interface ResetPage {
  patch: Array<PatchOperation | TextPut>;
  chars: number;
  next: ResetCursor | undefined;
}

/**
 * The start of a reset of `view` (all the space without one), the keys of `order`'s prefixes
 * first (reset-ranges.ts): a clear, then the entries the pull's
 * transaction reads, at most {@link FIRST_ROWS} of them and about {@link PAGE_CHARS} characters
 * of values (a space of less is answered whole), and where the rest starts. Pages grow from
 * {@link FIRST_PAGE} rows: a small space costs one read.
 */
export async function resetStart(
  tx: StorageTransaction,
  keys: SpaceKeys,
  version: number,
  view?: Prefixes,
  order?: readonly string[],
): Promise<{ patch: Patch; rest: ResetCursor | undefined }> {
  const patch: Array<PatchOperation | TextPut> = [{ op: 'clear' }];
  let cursor: ResetCursor | undefined = { ranges: entryRanges(keys, view, order), version, range: 0, after: undefined };
  let read = 0;
  let chars = 0;
  for (let rows = FIRST_PAGE; cursor !== undefined && read < FIRST_ROWS && chars < PAGE_CHARS; ) {
    const page = await readPage(tx, keys, cursor, rows, true);
    for (const op of page.patch) patch.push(op);
    read += rows;
    chars += page.chars;
    cursor = page.next;
    // No more than the characters left, at this page's size of row: the start is a page of a first sync in pages.
    const perRow = page.patch.length === 0 ? 0 : page.chars / page.patch.length;
    rows = Math.min(nextRows(rows, page), perRow === 0 ? Infinity : Math.max(1, Math.ceil((PAGE_CHARS - chars) / perRow)));
  }
  return { patch, rest: cursor };
}

/**
 * The rest of a reset from `cursor`, a page at a time, each read in a read-only transaction of
 * `space` of its own. The next page is read while the caller sends the last. Stopping the
 * iteration (`return`) stops the reads.
 *
 * With `room` (a first sync in pages), which tells how many characters the caller may still send:
 * each page is read once the last was sent, no more rows than fit the room at the last page's
 * characters a row, and once the room is used up the generator returns where the next page
 * would start.
 */
export async function* resetRest(
  storage: Storage,
  space: string,
  keys: SpaceKeys,
  cursor: ResetCursor,
  room?: () => number,
): AsyncGenerator<Patch, ResetCursor | undefined, undefined> {
  const read = (from: ResetCursor, rows: number) => storage.transaction((tx) => readPage(tx, keys, from, rows), { readOnly: true, space });
  if (room !== undefined) return yield* fitted(read, cursor, room);
  let rows = PAGE_ROWS;
  let next: Promise<ResetPage> | undefined = read(cursor, rows);
  try {
    while (next !== undefined) {
      const page: ResetPage = await next;
      rows = nextRows(rows, page);
      next = page.next && read(page.next, rows);
      if (page.patch.length > 0) yield page.patch;
    }
    return undefined;
  } finally {
    // Stopped early (the client went): the page read ahead is nobody's, its failure too.
    next?.catch(() => {});
  }
}

/** {@link resetRest} with `room`: pages that fit it, read one after another. */
async function* fitted(
  read: (from: ResetCursor, rows: number) => Promise<ResetPage>,
  cursor: ResetCursor,
  room: () => number,
): AsyncGenerator<Patch, ResetCursor | undefined, undefined> {
  let rows = FIRST_PAGE;
  let perRow: number | undefined;
  for (let at: ResetCursor | undefined = cursor; at !== undefined; ) {
    // A page's own answer starts with at least one read (a pull from a page's cookie sent nothing yet).
    const left = room();
    if (left <= 0) return at;
    if (perRow !== undefined) rows = Math.max(1, Math.min(rows, Math.ceil(left / perRow)));
    const page = await read(at, rows);
    rows = nextRows(rows, page);
    at = page.next;
    if (page.patch.length === 0) continue;
    yield page.patch;
    // What the page took of the room, now that it is sent: the size of the next one's rows.
    perRow = Math.max(1, (left - room()) / page.patch.length);
  }
  return undefined;
}

/**
 * The rows to read after a page of `rows`: twice as many, up to {@link PAGE_ROWS}; where the
 * store tells the values' text (`scanText`), as many as make about {@link PAGE_CHARS} characters
 * at the last page's size of value, so a page of large values holds fewer rows.
 */
function nextRows(rows: number, page: ResetPage): number {
  const doubled = Math.min(rows * 2, PAGE_ROWS);
  if (page.chars === 0) return doubled;
  return Math.max(MIN_PAGE_ROWS, Math.min(doubled, Math.floor((rows * PAGE_CHARS) / page.chars)));
}

/** Where a page of a first sync in pages left a reset of `view` in `order` as of `version` (page-cookie.ts). */
export function resumeAt(
  keys: SpaceKeys,
  version: number,
  view: Prefixes | undefined,
  order: readonly string[],
  at: { range: number; after: string | undefined },
): ResetCursor {
  return { ranges: entryRanges(keys, view, order), version, range: at.range, after: at.after };
}

/**
 * Up to `limit` rows from `cursor` on, across ranges; the live ones of a version up to the
 * cursor's as puts, their values as text where the store keeps text. A store that keeps values
 * as objects tells no size: with `measure`, they are serialised to count their characters (for
 * the pull's own first pages only, which bound what it holds: see resetStart).
 */
async function readPage(tx: StorageTransaction, keys: SpaceKeys, cursor: ResetCursor, limit: number, measure = false): Promise<ResetPage> {
  const patch: Array<PatchOperation | TextPut> = [];
  const skip = keys.entryPrefix.length;
  const { ranges, version } = cursor;
  let { range, after } = cursor;
  let chars = 0;
  let rows = 0;
  while (range < ranges.length && rows < limit) {
    const { prefix, only, start, end } = ranges[range]!;
    const options = { prefix, start: after === undefined ? start : { key: after, exclusive: true }, limit: only ? 1 : limit - rows };
    let last: string | undefined;
    let count: number;
    // A range with an end (the rest of a first sync around the prefixes sent first) stops there;
    // the rows read past it are read again in their own range.
    let ended = false;
    const past = (row: string) => end !== undefined && compareUTF8(row, end) >= 0 && (ended = true);
    if (tx.scanText !== undefined) {
      const texts = await tx.scanText(options);
      for (const [row, record] of texts) {
        if (past(row)) break;
        if (only && row !== prefix) continue;
        const { ver, text } = entryText(record);
        if (text === undefined || ver > version) continue;
        const key = row.slice(skip);
        patch.push({ op: 'put', key, text });
        chars += PUT_CHARS + key.length + text.length;
      }
      count = texts.length;
      last = texts[count - 1]?.[0];
    } else {
      const entries = await tx.scan(options);
      for (const [row, stored] of entries) {
        if (past(row)) break;
        const entry = recordOf<Entry>(stored);
        if ((only && row !== prefix) || entry.del || entry.ver > version) continue;
        const key = row.slice(skip);
        patch.push({ op: 'put', key, value: entry.val });
        if (measure) chars += PUT_CHARS + key.length + JSON.stringify(entry.val).length;
      }
      count = entries.length;
      last = entries[count - 1]?.[0];
    }
    rows += count;
    if (only || ended || count < options.limit) {
      // The range is read: on to the next.
      range++;
      after = undefined;
    } else after = last;
  }
  return { patch, chars, next: range < ranges.length ? { ranges, version, range, after } : undefined };
}

/**
 * The rows of a reset's first page. Few, as the values may be large (up to `limits.valueBytes`
 * each) and the first page is read before their size is known.
 */
const FIRST_PAGE = 32;
/** The rows a pull's own transaction reads of a reset at most; a space of more is read on as it is sent. */
export const FIRST_ROWS = 8192;
/** The most rows a page of a reset holds, and the fewest. */
const PAGE_ROWS = 4096;
const MIN_PAGE_ROWS = 1;
/** The characters a page aims at, where the store tells them. */
const PAGE_CHARS = 1024 * 1024;
/** The characters of a put besides its key and value: `{"op":"put","key":"","value":},`. */
const PUT_CHARS = 30;
