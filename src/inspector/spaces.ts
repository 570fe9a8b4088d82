import type { SyncContext } from '../context/context.js';
import { allSpaces } from '../context/collect-garbage.js';
import { moveInProgress } from '../backend/move.js';
import { quotaOf } from '../sync/transactions/quota.js';
import { META_PREFIX, SpaceKeys, spaceOfMeta } from '../sync/version/keys.js';
import type { Meta } from '../sync/version/records.js';
import { getMany } from '../storage/write-buffer.js';
import type { SpaceRecord, SpaceRow, SpacesPage } from './api-types.js';
import { recordOf } from '../storage/records.js';

/**
 * A page of the spaces list, read from the spaces' meta records alone (their version, and the
 * entries, bytes and history every write keeps there): never a count of their rows, so a page
 * costs the same with ten spaces or a hundred thousand. On one store, a page is one scan of the
 * meta records from `after`; a store made of several is listed whole first (each part says which
 * of its spaces are in use there), then paged.
 */
export async function spacesPage(ctx: SyncContext, prefix: string, after: string | undefined, limit: number): Promise<SpacesPage> {
  const storage = ctx.storage;
  let found: Array<[space: string, meta: Meta | undefined]>;
  if (storage.parts === undefined) {
    const from = META_PREFIX + new SpaceKeys(prefix).meta.slice(META_PREFIX.length);
    const start = after === undefined ? undefined : { key: new SpaceKeys(after).meta, exclusive: true };
    const rows = await storage.transaction((tx) => tx.scan({ prefix: from, start, limit: limit + 1 }), { readOnly: true });
    found = rows.map(([key, value]) => [spaceOfMeta(key), recordOf<Meta>(value)]);
  } else {
    const names = (await allSpaces(storage)).filter((space) => space.startsWith(prefix) && (after === undefined || space > after)).slice(0, limit + 1);
    found = await Promise.all(
      names.map(async (space): Promise<[string, Meta | undefined]> => {
        const [meta] = await storage.transaction((tx) => getMany(tx, [new SpaceKeys(space).meta]), { readOnly: true, space });
        return [space, meta as Meta | undefined];
      }),
    );
  }
  const more = found.length > limit;
  const live = ctx.state.live;
  const spaces = await Promise.all(
    found
      .slice(0, limit)
      .map(
        async ([space, meta]): Promise<SpaceRow> => ({ ...(await spaceRecord(ctx, space, meta)), activity: live?.activity(space) ?? { pushes: 0, pulls: 0 } }),
      ),
  );
  return { spaces, ...(more && { next: spaces.at(-1)!.space }) };
}

/** What `meta`, the record of `space`, says, with its quota, and on a routed storage where it lives and its move. */
export async function spaceRecord(ctx: SyncContext, space: string, meta: Meta | undefined): Promise<SpaceRecord> {
  const quota = quotaOf(ctx.quotas, space);
  const parts = ctx.storage.parts;
  const [store, move] = parts === undefined ? [undefined, undefined] : await Promise.all([parts.locate(space), moveInProgress(ctx, space)]);
  return {
    space,
    version: meta?.version ?? 0,
    ...(meta?.entries !== undefined && { entries: meta.entries }),
    ...(meta?.bytes !== undefined && { bytes: meta.bytes }),
    ...(meta?.history !== undefined && { history: meta.history }),
    ...(quota && { quota: { ...quota } }),
    ...(store !== undefined && { store }),
    ...(move !== undefined && { move }),
  };
}
