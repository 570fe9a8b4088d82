import { compareUTF8 } from '../../base/utf8.js';
import { setOwn } from '../../base/own.js';
import type { Storage } from '../../storage/types.js';
import { ChangeCursorError, ChangesGoneError, DEFAULT_LIMIT, type FeedChange, MAX_LIMIT, parseCursor, readSpaceFeed } from './feed-pages.js';

/**
 * The change feed of every space of a store: each space's own feed (feed-pages.ts), space after
 * space, from a cursor that holds each space's cursor and the space to go on from.
 */

/** A page of the feed of every space of a store. */
export interface StoreFeedPage {
  /** Space after space; in each, in commit order. */
  changes: FeedChange[];
  /**
   * Where to read on from: JSON, `{"spaces":{"<space>":"<cursor>",…},"next":"<space>"}`, each
   * space's cursor and the space the next page starts at (so a busy space does not keep the
   * others waiting). A space it does not name is read from the oldest change its log holds
   * whole up to now: to follow a space from an export, set its cursor to the export's `version`.
   */
  cursor: string;
  /** Whether more changes were there to read when this page was read. */
  more: boolean;
}

/** A page of the feed of the store's `spaces` after the store cursor `after` (see {@link StoreFeedPage.cursor}). */
export async function readStoreFeed(storage: Storage, spaces: readonly string[], after: string | undefined, limit = DEFAULT_LIMIT): Promise<StoreFeedPage> {
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
    throw new RangeError(`readAllChanges: limit must be a whole number from 1 to ${MAX_LIMIT}, got ${String(limit)}`);
  const { spaces: cursors, next } = parseStoreCursor(after);
  let left = limit;
  // From the space the last page stopped at, round to the one before it.
  const from =
    next === undefined
      ? 0
      : Math.max(
          0,
          spaces.findIndex((space) => compareUTF8(space, next) >= 0),
        );
  const changes: FeedChange[] = [];
  let stoppedAt: string | undefined;
  for (let i = 0; i < spaces.length; i++) {
    const space = spaces[(from + i) % spaces.length]!;
    if (left === 0) {
      stoppedAt = space;
      break;
    }
    const page = await readSpace(storage, space, cursors[space], left);
    changes.push(...page.changes);
    left -= page.changes.length;
    setOwn(cursors, space, page.cursor);
    if (page.more) {
      stoppedAt = space;
      break;
    }
  }
  return { changes, cursor: JSON.stringify({ spaces: cursors, ...(stoppedAt !== undefined && { next: stoppedAt }) }), more: stoppedAt !== undefined };
}

/** A page of `space` after its cursor in a store cursor; a cursor whose changes are gone is refused, saying how the other spaces can go on. */
async function readSpace(storage: Storage, space: string, after: string | undefined, limit: number) {
  try {
    return await readSpaceFeed(storage, space, after, limit);
  } catch (error) {
    if (!(error instanceof ChangesGoneError)) throw error;
    throw new ChangesGoneError(
      `${error.message} To go on with every other space, take ${JSON.stringify(space)} out of the cursor's "spaces" (it is then read from the oldest change its log holds) or set it there to the export's version.`,
      { cause: error },
    );
  }
}

/** The spaces' cursors and the space to start at, from a store cursor; throws a `ChangeCursorError` for anything else. */
function parseStoreCursor(text: string | undefined): { spaces: Record<string, string>; next: string | undefined } {
  if (text === undefined) return { spaces: {}, next: undefined };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const { spaces, next } = (parsed ?? {}) as { spaces?: unknown; next?: unknown };
  if (typeof spaces !== 'object' || spaces === null || Array.isArray(spaces) || (next !== undefined && typeof next !== 'string')) {
    throw new ChangeCursorError('A cursor of every space is JSON, {"spaces":{"<space>":"<cursor>",…},"next":"<space>"}, as readAllChanges gave it out');
  }
  const cursors: Record<string, string> = {};
  for (const [space, cursor] of Object.entries(spaces)) {
    parseCursor(cursor);
    setOwn(cursors, space, cursor as string);
  }
  return { spaces: cursors, next };
}
