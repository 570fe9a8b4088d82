import type { SyncContext } from '../context/context.js';
import { allSpaces } from '../context/collect-garbage.js';
import { checkContext } from '../context/state.js';
import { markSpaceOff, readFeedRecords, writeFeedRecord } from '../sync/feed/feed-record.js';

/**
 * Whether a store keeps the change feed, and turning it off. It is the store's, not a process's:
 * a context with `changes` turns it on with its first write, and from then every writer keeps
 * each space's change log (the CLI, `transact`, imports, moves, an instance whose config lacks
 * `changes`), so no write leaves a gap in a feed its readers and webhooks follow. Turning it off
 * is a step of its own (see sync/feed/feed-record.ts).
 */

/** Whether one store keeps the change feed. */
export interface FeedStatus {
  /** Its name, in a routed storage; absent for a store of one. */
  store?: string;
  /** Whether it keeps the feed: every write to a new space, and to a space whose log is kept, goes into its log. */
  on: boolean;
  /** When it was turned on or off, in milliseconds since the epoch; null: never (no context with `changes` wrote to it since viewsync kept this). */
  since: number | null;
}

/** Whether the context's store keeps the change feed: one status per store (a routed storage has several). */
export async function changeFeedStatus(ctx: SyncContext): Promise<FeedStatus[]> {
  checkContext(ctx);
  return (await readFeedRecords(ctx.storage)).map(([store, record]) => ({
    ...(store !== undefined && { store }),
    on: record?.on === true,
    since: record?.at ?? null,
  }));
}

/**
 * Turns the change feed off for the context's store: from now, writes leave the spaces' change
 * logs (what the logs hold stays readable up to now, and is trimmed as usual). First take
 * `changes` out of every server's options: a context with it goes on keeping the logs of the
 * spaces it writes, and sets the store's record on again after its first write once started
 * again. Refused from such a context. Resolves with how many spaces kept their log until now.
 *
 * @example
 * // Once no server runs with `changes`:
 * await turnOffChangeFeed(createContext({ storage, mutators: {} }));
 */
export async function turnOffChangeFeed(ctx: SyncContext): Promise<{ spaces: number }> {
  checkContext(ctx);
  if (ctx.changes !== undefined || ctx.history !== undefined) {
    const option = ctx.changes !== undefined ? 'changes' : 'history';
    throw new TypeError(
      `turnOffChangeFeed: this context keeps the change feed (its \`${option}\` option) and would go on keeping the logs of the spaces it writes: take \`changes\` and \`history\` out of every server first, then call it from a context without them (or run \`viewsync feed off\`)`,
    );
  }
  // The store first, so that no space made meanwhile starts a log.
  await writeFeedRecord(ctx.storage, false, ctx.clock());
  let spaces = 0;
  for (const space of await allSpaces(ctx.storage)) {
    if (await ctx.storage.transaction((tx) => markSpaceOff(tx, space), { readOnly: false, space })) spaces++;
  }
  return { spaces };
}
