import type { SyncContext } from '../context/context.js';
import { checkContext } from '../context/state.js';
import { type FeedPage, readSpaceFeed } from '../sync/feed/feed-pages.js';
import { readStoreFeed, type StoreFeedPage } from '../sync/feed/store-feed.js';
import { allSpaces } from '../context/collect-garbage.js';
import { checkSpace } from './transact.js';

/** Options for {@link readChanges}. */
export interface ReadChangesOptions {
  /** The cursor to read after, as the feed gave it out (a change's `cursor`, a page's), or an export's `version`. Default: `"0"`, the space's start. */
  after?: string;
  /** At most this many changes. Default: 1,000; at most 10,000. A page also stops past about 4 MB of JSON. */
  limit?: number;
}

/**
 * A page of `space`'s change feed: the changes committed after the cursor `after`, in commit
 * order (by version, then in the order the commit made them), each key set or deleted with its
 * value before and after and what made it (a client's mutation, or a backend call), and the
 * events mutators emitted. Read from one snapshot. Pass the page's `cursor` to read on; `more`
 * says there was more to read at once. The feed needs the context option `changes` on when the
 * writes were made.
 *
 * Never a gap: a cursor whose changes are no longer all in the log (trimmed past
 * `retention.changesMs`, made while the feed was off, or read from commits the store then lost)
 * rejects with a `ChangesGoneError`; start again from an export, whose header's `version` is the
 * cursor to follow it with. A malformed cursor rejects with a `ChangeCursorError`.
 *
 * @example
 * let after = await loadCursor();
 * for (;;) {
 *   const page = await readChanges(ctx, 'acme', { after });
 *   for (const change of page.changes) await index(change);
 *   await saveCursor((after = page.cursor));
 *   if (!page.more) break;
 * }
 */
export async function readChanges(ctx: SyncContext, space: string, options: ReadChangesOptions = {}): Promise<FeedPage> {
  checkContext(ctx);
  checkSpace(space);
  return readSpaceFeed(ctx.storage, space, options.after ?? '0', options.limit);
}

/** Options for {@link followChanges}. */
export interface FollowChangesOptions extends ReadChangesOptions {
  /** Stops following: the iteration ends. */
  signal?: AbortSignal;
  /**
   * Milliseconds to wait for a change before reading again when there was none: the notifier's
   * notices (pokes) end the wait at once, from every instance it reaches. Default: 1,000.
   */
  pollMs?: number;
}

/**
 * {@link readChanges} page after page, for ever: each page as soon as it has changes, waiting for
 * the next change when there is none, until `signal` aborts. A page with no changes is not
 * yielded. Rejects as `readChanges` does.
 *
 * @example
 * for await (const page of followChanges(ctx, 'acme', { after, signal })) await handle(page);
 */
export async function* followChanges(ctx: SyncContext, space: string, options: FollowChangesOptions = {}): AsyncGenerator<FeedPage> {
  checkContext(ctx);
  checkSpace(space);
  const { signal } = options;
  const pollMs = options.pollMs ?? 1_000;
  let wake: (() => void) | undefined;
  let noticed = false;
  const unsubscribe = await ctx.notifier.subscribe(space, () => {
    noticed = true;
    wake?.();
  });
  const aborted = () => wake?.();
  signal?.addEventListener('abort', aborted);
  try {
    let after = options.after ?? '0';
    while (signal?.aborted !== true) {
      noticed = false;
      const page = await readChanges(ctx, space, { after, ...(options.limit !== undefined && { limit: options.limit }) });
      after = page.cursor;
      if (page.changes.length > 0) yield page;
      if (page.more || noticed || signal?.aborted) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        wake = () => (clearTimeout(timer), resolve());
      });
      wake = undefined;
    }
  } finally {
    signal?.removeEventListener('abort', aborted);
    unsubscribe();
  }
}

/** Options for {@link readAllChanges}. */
export interface ReadAllChangesOptions {
  /** The cursor a page of {@link readAllChanges} gave out; default: every space from its start. */
  after?: string;
  /** At most this many changes, across spaces. Default: 1,000; at most 10,000. */
  limit?: number;
}

/**
 * A page of the change feed of every space of the store: each space's changes after its cursor
 * in `after`, space after space, starting where the last page left off, up to `limit`. Costs a
 * read of every space per page (a space with nothing new, one key): for a store of many spaces,
 * read the spaces that matter with {@link readChanges}. Rejects as `readChanges` does, naming the
 * space.
 *
 * @example
 * let after: string | undefined;
 * for (;;) {
 *   const page = await readAllChanges(ctx, { after });
 *   await ship(page.changes);
 *   after = page.cursor;
 *   if (!page.more) break;
 * }
 */
export async function readAllChanges(ctx: SyncContext, options: ReadAllChangesOptions = {}): Promise<StoreFeedPage> {
  checkContext(ctx);
  return readStoreFeed(ctx.storage, await allSpaces(ctx.storage), options.after, options.limit);
}
