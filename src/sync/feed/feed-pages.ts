import type { JSONValue } from '../../protocol/json.js';
import type { Storage, StorageTransaction } from '../../storage/types.js';
import { encodeVersion, SpaceKeys } from '../version/keys.js';
import type { ChangeOrigin, Meta } from '../version/records.js';
import { feedFrom, type LogRow } from './change-log.js';

/**
 * Reading a space's change log (change-log.ts) from a cursor, a page at a time, in one snapshot.
 * A cursor names a place in the log: after version `v` whole (`"v"`), or after its row `s`
 * (`"v.s"`). A page never skips: a cursor whose changes the log no longer holds (trimmed, written
 * without the feed, lost with commits a failover lost) is refused with a {@link ChangesGoneError}.
 */

/** One change of the feed: a key set or deleted, or an event a mutator emitted. */
export type FeedChange = {
  /** The space it happened in. */
  space: string;
  /** The version of the commit that made it: one commit, one version, all or nothing. */
  version: number;
  /** Its place among its commit's changes, from 0. */
  seq: number;
  /** Stable for ever: the same change always has the same ID (an idempotency key for receivers). */
  id: string;
  /** The cursor to read on from, after this change. */
  cursor: string;
  /** When it was committed, in milliseconds since the epoch (the committing server's clock). */
  at: number;
  /** What made it. */
  by: ChangeOrigin;
} & (
  | { op: 'set'; key: string; before?: JSONValue; after: JSONValue }
  | { op: 'del'; key: string; before: JSONValue }
  /** An event; one whose payload an erasure took out has `erased: 'payload'` and a `null` payload. */
  | { op: 'event'; topic: string; payload: JSONValue; erased?: 'payload' }
  /**
   * A set or delete (`was`) whose values an erasure took out (`eraseData`): `erased` says which;
   * a value left is there. A receiver that keeps copies erases its own (the erasure's
   * `viewsync.erased` event follows).
   */
  | { op: 'erased'; was: 'set' | 'del'; key: string; before?: JSONValue; after?: JSONValue; erased: 'before' | 'after' | 'both' }
);

/** A page of the feed of one space. */
export interface FeedPage {
  changes: FeedChange[];
  /** Where to read on from: past every change in `changes`, and past versions with none. */
  cursor: string;
  /** Whether more changes were there to read when this page was read (read on at once). */
  more: boolean;
  /** The space's version when the page was read. */
  version: number;
}

/** A cursor that is not one the feed gave out. */
export class ChangeCursorError extends TypeError {
  override name = 'ChangeCursorError';
}

/**
 * The changes after a cursor are not all in the log: it was trimmed past them, or the feed was
 * off for some of them, or the store lost commits the cursor had read. Start again from an
 * export (its header's `version` is the cursor to follow it with).
 */
export class ChangesGoneError extends Error {
  override name = 'ChangesGoneError';
}

/** A place in the log: after version `version`, whole, or after its row `seq`. */
export interface Cursor {
  version: number;
  seq?: number | undefined;
}

/** The cursor `text` stands for; throws a {@link ChangeCursorError} for anything else. */
export function parseCursor(text: unknown): Cursor {
  const match = typeof text === 'string' ? /^(0|[1-9]\d{0,15})(?:\.(0|[1-9]\d{0,9}))?$/.exec(text) : null;
  const version = match ? Number(match[1]) : NaN;
  if (!match || !Number.isSafeInteger(version))
    throw new ChangeCursorError(
      `A change feed cursor is "<version>" or "<version>.<seq>", as the feed gave it out (or "0" for the start), got ${JSON.stringify(String(text).slice(0, 60))}`,
    );
  return match[2] === undefined ? { version } : { version, seq: Number(match[2]) };
}

export function formatCursor({ version, seq }: Cursor): string {
  return seq === undefined ? String(version) : `${version}.${seq}`;
}

/**
 * A page of `space`'s feed after the cursor `after` (text), at most `limit` changes: what
 * `readChanges` and `GET …/changes` answer. Without `after`, from the oldest change its log holds
 * whole up to now (a reader new to the space has nothing a gap before it could miss).
 */
export function readSpaceFeed(storage: Storage, space: string, after: string | undefined, limit = DEFAULT_LIMIT): Promise<FeedPage> {
  const cursor = after === undefined ? undefined : parseCursor(after);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new RangeError(`readChanges: limit must be a whole number from 1 to ${MAX_LIMIT}, got ${String(limit)}`);
  return storage.transaction((tx) => readFeedPage(tx, space, cursor, { limit, maxChars: MAX_PAGE_CHARS }), { readOnly: true, space });
}

export const DEFAULT_LIMIT = 1_000;
export const MAX_LIMIT = 10_000;
/** About 4 MB of JSON a page, whatever its values: a reader holds one page at a time. */
const MAX_PAGE_CHARS = 4_000_000;

/** Bounds on one page: rows, and their JSON in characters (at least one row is always read). */
export interface PageBounds {
  limit: number;
  maxChars: number;
}

/** The changes of `space` after `after` (undefined: the oldest its log holds whole up to now), one page of them, read in `tx`. */
export async function readFeedPage(tx: StorageTransaction, space: string, from: Cursor | undefined, bounds: PageBounds): Promise<FeedPage> {
  const keys = new SpaceKeys(space);
  const meta = (await tx.get(keys.meta)) as Meta | undefined;
  // A log not whole up to now (never kept, or broken off) has nothing to read before its next start.
  const after = from ?? { version: meta === undefined ? 0 : (feedFrom(meta) ?? meta.version) };
  const latest = meta?.version ?? 0;
  const end = readableUpTo(space, meta, after);
  const start =
    after.seq === undefined ? { key: keys.logPrefix + encodeVersion(after.version + 1) } : { key: keys.logRow(after.version, after.seq), exclusive: true };
  const rows = end <= after.version && after.seq === undefined ? [] : await tx.scan({ prefix: keys.logPrefix, start, limit: bounds.limit + 1 });
  const changes: FeedChange[] = [];
  let chars = 0;
  let more = false;
  for (const [row, value] of rows) {
    const place = keys.logPlace(row);
    if (place.version > end) break;
    const change = toChange(space, place.version, place.seq, value as LogRow);
    chars += JSON.stringify(value).length;
    if (changes.length === bounds.limit || (changes.length > 0 && chars > bounds.maxChars)) {
      more = true;
      break;
    }
    changes.push(change);
  }
  const cursor = more ? changes.at(-1)!.cursor : formatCursor({ version: Math.max(end, after.version) });
  return { changes, cursor, more, version: latest };
}

/**
 * The last version whose changes a reader at `after` may read: the space's, or where the log
 * broke off. Throws a {@link ChangesGoneError} when the changes right after `after` are gone.
 */
function readableUpTo(space: string, meta: Meta | undefined, after: Cursor): number {
  const latest = meta?.version ?? 0;
  const name = JSON.stringify(space);
  const restart = ' Start again from an export (exportSpace, or viewsync export): its header\'s "version" is the cursor to follow it with.';
  if (after.version > latest) throw new ChangesGoneError(aheadMessage(after, latest, name, restart));
  // Up to date: nothing to read, so nothing can be missing, whatever the log holds.
  if (after.version === latest && after.seq === undefined) return latest;
  const lost = meta?.gaps?.find(([from, to]) => after.version > from && after.version < to);
  if (lost !== undefined)
    throw new ChangesGoneError(
      `The cursor ${formatCursor(after)} read changes of space ${name} its store lost (commits after version ${lost[0]}, in a failover or a restore).${restart}`,
    );
  const whole = feedFrom(meta);
  const from = whole ?? meta?.feedFrom;
  // Mid-version, a cursor may also have lost that version's first rows.
  if (from === undefined || after.version < from || (after.version === from && after.seq !== undefined && from > 0)) {
    const why =
      from === undefined
        ? 'the change feed was never on for it'
        : `its change log holds the changes after version ${from} only (trimmed past retention.changesMs, or started then: the feed turned on, or on again after writes that left it)`;
    throw new ChangesGoneError(`The changes of space ${name} after cursor ${formatCursor(after)} are gone: ${why}.${restart}`);
  }
  if (whole !== undefined) return latest;
  // A write that left the log (the feed off, an older viewsync) broke it off at `feedAt`: what comes before it is whole.
  const brokeAt = meta!.feedAt!;
  if (after.version >= brokeAt)
    throw new ChangesGoneError(
      `The changes of space ${name} after version ${brokeAt} were written without the change feed (it was turned off, or an older viewsync wrote them); its log starts again at the next write that keeps it.${restart}`,
    );
  return brokeAt;
}

/**
 * Why a cursor is ahead of its space, likeliest first: the feed never gives out a cursor past
 * the space's version, so it is another space's or made by hand (one ahead: the version to read
 * from, where a cursor names the last one read). Lost commits are the rare case, said last.
 */
function aheadMessage(after: Cursor, latest: number, name: string, restart: string): string {
  const oneAhead =
    after.version === latest + 1 && after.seq === undefined
      ? ` (a cursor names the last version read, not the next: "${latest}" reads what comes after version ${latest})`
      : '';
  return `The cursor ${formatCursor(after)} is ahead of space ${name}, at version ${latest}, so this space's feed has not given it out: it is another space's, or made by hand${oneAhead}. If this space's feed did give it out, its store has since lost commits (a failover, a restore).${restart}`;
}

function toChange(space: string, version: number, seq: number, row: LogRow): FeedChange {
  const place = { space, version, seq, id: `${encodeURIComponent(space)}:${version}:${seq}`, cursor: formatCursor({ version, seq }), at: row.at, by: row.by };
  if ('topic' in row) return { ...place, op: 'event', topic: row.topic, payload: row.payload, ...(row.erased !== undefined && { erased: row.erased }) };
  if (row.erased !== undefined) {
    // A set's value after was there, erased or not; a delete had none.
    const was = row.after !== undefined || row.erased !== 'before' ? 'set' : 'del';
    return {
      ...place,
      op: 'erased',
      was,
      key: row.key,
      ...(row.before !== undefined && { before: row.before }),
      ...(row.after !== undefined && { after: row.after }),
      erased: row.erased,
    };
  }
  if (row.after === undefined) return { ...place, op: 'del', key: row.key, before: row.before! };
  return { ...place, op: 'set', key: row.key, ...(row.before !== undefined && { before: row.before }), after: row.after };
}
