import type { SyncContext } from '../context/context.js';
import { routerOf } from '../route/routed-storage.js';
import { type MoveOptions, type MoveResult, moveSpaceBetween } from '../route/move-space.js';
import { checkSpace } from './transact.js';
import { checkContext } from '../context/state.js';

export type { MoveOptions, MoveProgress, MoveResult } from '../route/move-space.js';

/**
 * Moves `space` to the store named `to` of a `routedStorage`, while the space is in use: copies
 * every row of it (entries, client groups and their clients' lastMutationIDs, views), from one
 * snapshot and then what changed meanwhile, and switches it over. Its clients go on without a
 * reset, holding the same cookies; no mutation is lost or applied twice. Pulls never wait; pushes
 * to the space wait during the switch only, which copies the last few changes, at most
 * `switchTimeoutMs` (2 s by default); other spaces never wait.
 *
 * A move killed at any point (kill -9 included) leaves exactly one copy in use, and moving the
 * space again (to the same store) finishes or redoes what it left. Run one move of a space at a
 * time: a second one, concurrent, fails rather than corrupts.
 *
 * Before it writes anything, it reads where the space's data is in every store, and refuses a
 * space no store holds, and a router whose placement or directory finds the space elsewhere than
 * its data is (a router that is not the servers'): it never clears rows a move did not leave.
 *
 * @example
 * const { switchMs } = await moveSpace(ctx, 'acme', 'eu-2');
 */
export async function moveSpace(ctx: SyncContext, space: string, to: string, options: MoveOptions = {}): Promise<MoveResult> {
  checkContext(ctx);
  checkSpace(space);
  const router = routerOf(ctx.storage);
  if (router === undefined) throw new TypeError('moveSpace moves spaces between the stores of a routedStorage: this context has a single store');
  return moveSpaceBetween(router, space, to, options);
}
