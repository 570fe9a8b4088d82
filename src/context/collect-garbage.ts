import { compareUTF8 } from '../base/utf8.js';
import { eachRow } from '../storage/each-row.js';
import type { Storage } from '../storage/types.js';
import { globalVersion } from '../sync/session/global-version.js';
import { stagingSpaces } from '../sync/dumps/import-batch.js';
import { META_PREFIX, spaceOfMeta } from '../sync/version/keys.js';
import type { Collected } from '../sync/version/strategy.js';
import { type ErrorInfo, type SyncContext, reportError } from './context.js';
import { checkContext } from './state.js';
import { remember } from '../base/remember.js';

/** Options for {@link collectGarbage}. */
export interface CollectOptions {
  /** Records of each kind removed per transaction, so that no push waits long behind one. Default: 64. */
  batch?: number;
}

/** What {@link collectGarbage} removed. */
export type { Collected } from '../sync/version/strategy.js';

/**
 * Removes what the retention lets go: client groups idle past `retention.clientGroupsMs` (with their
 * clients; each leaves a marker of a few dozen bytes, kept for ever, so its next request, however
 * late, gets ClientStateNotFound and the client starts a new group) and tombstones past `retention.tombstonesMs` (a pull whose cookie is older
 * than the newest one removed gets a reset), and the staging area an import left when it was
 * killed, a day after it began (in every space that has one, even a space with nothing else). Works in small transactions, so pushes and pulls
 * wait at most one of them; run it from a cron job or a Durable Object alarm, or leave it to the
 * little that runs after pushes. Only `space` when given, else every space in the store. Resolves
 * to what it removed.
 *
 * @example
 * setInterval(() => void collectGarbage(ctx).then((removed) => console.log(removed)), 60 * 60 * 1000);
 */
export async function collectGarbage(ctx: SyncContext, space?: string, options: CollectOptions = {}): Promise<Collected> {
  checkContext(ctx);
  if (space !== undefined && typeof space !== 'string') {
    throw new TypeError(
      'collectGarbage(ctx, space, options) takes the space as its second argument (a string, or undefined for every space) since 0.2; options such as batch come third',
    );
  }
  // Resolving the context checks its options first: a renamed retention throws before any work.
  ctx.state;
  const total = nothingCollected();
  const spaces = space === undefined ? await allSpaces(ctx.storage) : [space];
  for (const each of spaces) {
    const removed = await collectSpace(ctx, each, options.batch ?? 64, Infinity);
    add(total, removed);
  }
  return total;
}

/**
 * After a push, now and then, a few batches of housekeeping in its space, in the background: at
 * most one run per space and context at a time, and one a minute, the first a minute after the
 * space's first push here.
 */
export function collectAfterPush(ctx: SyncContext, space: string, info: ErrorInfo): void {
  const { retention } = ctx;
  const { housekeeping: last } = ctx.state;
  if (retention.clientGroupsMs === false && retention.tombstonesMs === false) return;
  const now = ctx.clock();
  const previous = last.get(space);
  // The first push of a space in this process starts the minute; a run comes after it.
  if (previous === undefined) {
    // The longest-known spaces are forgotten first, so it stays small.
    remember(last, space, now, 10_000);
    return;
  }
  if (previous === RUNNING || now - previous < 60_000) return;
  last.set(space, RUNNING);
  const runs = last;
  collectSpace(ctx, space, 64, 16).then(
    () => runs.set(space, now),
    (error: unknown) => (runs.set(space, now), reportError(ctx, error, info)),
  );
}

const RUNNING = -1;

async function collectSpace(ctx: SyncContext, space: string, batch: number, maxBatches: number): Promise<Collected> {
  const { retention } = ctx;
  const total = nothingCollected();
  for (let i = 0; i < maxBatches; i++) {
    const now = ctx.clock();
    const step = await ctx.storage.transaction((tx) => globalVersion.collect(tx, space, now, retention, batch), { readOnly: false, space });
    add(total, step);
    if (step.done) break;
  }
  return total;
}

function nothingCollected(): Collected {
  return { clientGroups: 0, clients: 0, tombstones: 0, views: 0, changes: 0 };
}

/** Adds what one step removed to `total`. */
function add(total: Collected, step: Collected): void {
  total.clientGroups += step.clientGroups;
  total.clients += step.clients;
  total.tombstones += step.tombstones;
  total.views += step.views;
  total.changes += step.changes;
}

/**
 * Every space with a meta record or a staging area, in order. A space's first import, killed
 * while staging, leaves a staging area and nothing else: housekeeping must still find it.
 */
export async function allSpaces(storage: Storage): Promise<string[]> {
  const parts = storage.parts;
  if (parts) {
    // Each part's spaces whose copy there is the one in use: a moved space is listed once.
    const spaces: string[] = [];
    for (const [name, part] of Object.entries(parts.stores)) spaces.push(...(await parts.inUse(name, await allSpaces(part))));
    return [...new Set(spaces)].sort(compareUTF8);
  }
  const spaces = new Set<string>();
  await eachRow(storage, META_PREFIX, (key) => spaces.add(spaceOfMeta(key)));
  for (const space of await stagingSpaces(storage)) spaces.add(space);
  return [...spaces].sort(compareUTF8);
}
