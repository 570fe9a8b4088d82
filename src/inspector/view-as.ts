import type { SyncContext } from '../context/context.js';
import { read } from '../backend/read.js';
import { coversKey, Prefixes } from '../sync/version/prefixes.js';
import type { ViewAsPage, ViewedKey } from './api-types.js';

/**
 * What a user's view yields and which of the space's keys it lets through, and why: the view
 * runs as a pull of that user would run it (through a read transaction, indexes and all), and a
 * page of the space's keys is read from the same snapshot, each marked with the prefix that
 * covers it, or none. So "why doesn't Bob see list 7" is answered by the view's own answer.
 */
export async function viewAs(
  ctx: SyncContext,
  space: string,
  userID: string | undefined,
  clientGroupID: string,
  prefix: string,
  after: string | undefined,
  limit: number,
): Promise<ViewAsPage> {
  const view = ctx.view;
  return read(ctx, space, async (tx) => {
    let prefixes: Prefixes;
    let refused: string | undefined;
    if (view === undefined) prefixes = Prefixes.canonical(['']);
    else {
      try {
        prefixes = await Prefixes.of(await view(tx, { userID, clientGroupID }), ctx.limits);
      } catch (error) {
        // A pull of this user is refused with it: the answer to "why", not a failure of ours.
        refused = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        prefixes = Prefixes.none;
      }
    }
    const entries: ViewedKey[] = [];
    let next: string | undefined;
    const start = after === undefined ? undefined : { key: after, exclusive: true };
    for await (const [key] of tx.scan({ prefix, start, limit: limit + 1 }).entries()) {
      if (entries.length === limit) {
        next = entries.at(-1)!.key;
        break;
      }
      const because = prefixes.covers(key) ? prefixes.list.find((each) => coversKey(each, key)) : undefined;
      entries.push({ key, received: because !== undefined, ...(because !== undefined && { because }) });
    }
    return {
      userID: userID ?? null,
      clientGroupID,
      prefixes: [...prefixes.list],
      ...(refused !== undefined && { refused }),
      entries,
      ...(next !== undefined && { next }),
      received: entries.filter((entry) => entry.received).length,
    };
  });
}
