import type { SyncContext } from '../context/context.js';
import { routerOf } from '../route/routed-storage.js';
import { type MoveOptions, type MoveResult, moveSpaceBetween } from '../route/move-space.js';
import { checkSpace } from './transact.js';
import { checkContext } from '../context/state.js';
import { surveySpace } from '../route/survey.js';
import { SpaceKeys } from '../sync/version/keys.js';
import { eachRow } from '../storage/each-row.js';

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

/** A move of a space in progress, as its stores' route records tell it (see src/route/route-record.ts). */
export interface MoveState {
  from: string;
  to: string;
  /** `copying` (the target's copy is being made), `freezing` (writes wait for the switch), `complete` (the copy is whole; the commit is next), `promoting` (committed; the source's rows are still to go). */
  step: 'copying' | 'freezing' | 'complete' | 'promoting';
  /** Entries the target's copy holds so far, and the entries of the copy in use: the copy's progress. */
  copied: number;
  of: number;
}

/**
 * The move of `space` in progress, or undefined when none is (or the storage is not routed): read
 * from every store's route record, so it sees a move another process runs. Counts the target's
 * entries, so it costs a read of them.
 */
export async function moveInProgress(ctx: SyncContext, space: string): Promise<MoveState | undefined> {
  checkContext(ctx);
  const router = routerOf(ctx.storage);
  if (router === undefined) return undefined;
  const holdings = await surveySpace(router.stores, space);
  let move: Omit<MoveState, 'copied' | 'of'> | undefined;
  for (const [name, { record }] of holdings) {
    if (record?.state === 'incoming') {
      const source = holdings.get(record.from)?.record;
      const step = source?.state === 'moved' ? 'promoting' : source?.state === 'moving' ? (record.complete === undefined ? 'freezing' : 'complete') : 'copying';
      move = { from: record.from, to: name, step };
    } else if (record?.state === 'here' && record.from !== undefined && holdings.get(record.from)?.rows)
      move = { from: record.from, to: name, step: 'promoting' };
  }
  if (move === undefined) return undefined;
  const keys = new SpaceKeys(space);
  const count = async (store: string) => {
    let entries = 0;
    await eachRow(router.stores[store]!, keys.entryPrefix, (_, value) => void (!(value as { del?: true }).del && entries++), space);
    return entries;
  };
  const [copied, of] = await Promise.all([count(move.to), count(move.step === 'promoting' ? move.to : move.from)]);
  return { ...move, copied, of };
}
