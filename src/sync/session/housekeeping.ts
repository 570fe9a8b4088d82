import { trimRejected } from '../schema/rejected.js';
import type { StorageTransaction } from '../../storage/types.js';
import { getMany } from '../../storage/write-buffer.js';
import { bucketOf, decodeVersion, SpaceKeys, VERSION_FIELD } from '../version/keys.js';
import type { Entry, GroupRecord, Meta, StoredClient, ViewRecord } from '../version/records.js';
import type { Collected, Retention } from '../version/strategy.js';
import type { LogRow } from '../feed/change-log.js';
import { storedLogRowBytes, tombstoneBytes } from '../history/history-bytes.js';
import { checkpointStep } from '../history/checkpoints.js';

/**
 * One bounded step of housekeeping in a space, in the caller's transaction: the oldest tombstones
 * past their retention, the groups idle past theirs (their clients go; a marker of the group
 * stays for ever), and the staging areas of imports that crashed. Each kind is read from an index
 * in time or version order, from its oldest row, so a step reads little beyond what it removes
 * and never scans the space. Whatever it removes, the meta record remembers what pulls must
 * know: the newest version whose deletes are gone (older cookies then get a reset) and that
 * groups were expired.
 */
export async function collectSpace(
  tx: StorageTransaction,
  space: string,
  now: number,
  retention: Retention,
  limit: number,
): Promise<Collected & { done: boolean }> {
  const keys = new SpaceKeys(space);
  const counts = { clientGroups: 0, clients: 0, tombstones: 0, views: 0, changes: 0 };
  // What a crashed import left behind (see import-batch.ts): no import runs for a day.
  const abandoned = await oldest(tx, keys.stagingPrefix, limit, now - ABANDONED_IMPORT_MS, timeOf(keys.stagingPrefix));
  for (const [row] of abandoned.rows) await tx.del(row);
  let done = abandoned.done;
  const meta = (await tx.get(keys.meta)) as Meta | undefined;
  if (meta === undefined) return { ...counts, done };
  let floor = meta.floor ?? 0;

  const tombstones = await oldest(
    tx,
    keys.tombstonePrefix,
    limit,
    retention.tombstonesMs === false ? -Infinity : now - retention.tombstonesMs,
    (_, at) => at as number,
  );
  done &&= tombstones.done;
  const found = tombstones.rows.map(([row]) => {
    const rest = row.slice(keys.tombstonePrefix.length);
    return { row, version: decodeVersion(rest.slice(0, VERSION_FIELD - 1)), key: rest.slice(VERSION_FIELD) };
  });
  // One read for the batch's entries: one round trip on a database.
  const entries = (await readMany(
    tx,
    found.map(({ key }) => keys.entry(key)),
  )) as Array<Entry | undefined>;
  // The space's history counts each tombstone row and log row (see quota.ts) until they go here.
  let history = meta.history;
  for (const [i, { row, version, key }] of found.entries()) {
    if (history !== undefined) history -= tombstoneBytes(key);
    const entry = entries[i];
    if (entry?.del && entry.ver === version) {
      await tx.del(keys.entry(key));
      await tx.del(keys.version(version, key));
      // Its rows in the prefix index, if the index was kept when it was deleted.
      const bucket = bucketOf(key);
      if (bucket !== undefined) await tx.del(keys.prefixIndexRow(bucket, version, key));
      counts.tombstones++;
    }
    await tx.del(row);
    floor = Math.max(floor, version);
  }

  // A group costs two reads of its own (its clients): fewer of them a batch keeps batches short.
  const idle = await oldest(
    tx,
    keys.activityPrefix,
    Math.max(1, Math.floor(limit / 4)),
    retention.clientGroupsMs === false ? -Infinity : now - retention.clientGroupsMs,
    timeOf(keys.activityPrefix),
  );
  done &&= idle.done;
  const idleGroups = (await readMany(
    tx,
    idle.rows.map(([, value]) => keys.group(...groupOf(value))),
  )) as Array<GroupRecord | undefined>;
  for (const [i, [row, value]] of idle.rows.entries()) {
    const [userID, group] = groupOf(value);
    const record = idleGroups[i];
    // A row left behind by a later refresh is not the group's current one: only the row goes.
    if (record !== undefined && 'seen' in record && record.seen === timeOf(keys.activityPrefix)(row)) {
      counts.clients += await removeClients(tx, keys, userID, group);
      await tx.put(keys.group(userID, group), { expired: now } satisfies GroupRecord);
      counts.clientGroups++;
    }
    await tx.del(row);
  }

  // An expired group's marker is kept for ever: a client of that group may come back any time
  // (a tab reopened after months) and re-send mutations the server applied before it forgot the
  // group; without the marker they would look new and be applied twice. Earlier versions indexed
  // markers by expiry (`x/`) to remove them: only those index rows go now.
  const legacy = await tx.scan({ prefix: keys.expiredPrefix, limit });
  done &&= legacy.length < limit;
  for (const [row] of legacy) await tx.del(row);

  // A view record no pull issued for the group retention: a client holding a cookie that names
  // it gets a reset if its view changed since (and nothing worse), so it may go.
  const unused = await oldest(
    tx,
    keys.viewUsePrefix,
    limit,
    retention.clientGroupsMs === false ? -Infinity : now - retention.clientGroupsMs,
    timeOf(keys.viewUsePrefix),
  );
  done &&= unused.done;
  const ids = unused.rows.map(([row]) => row.slice(keys.viewUsePrefix.length + VERSION_FIELD));
  const views = (await readMany(
    tx,
    ids.map((id) => keys.view(id)),
  )) as Array<ViewRecord | undefined>;
  for (const [i, [row]] of unused.rows.entries()) {
    // A row left behind by a later refresh is not the record's current one: only the row goes.
    if (views[i] !== undefined && views[i].used === timeOf(keys.viewUsePrefix)(row)) {
      await tx.del(keys.view(ids[i]!));
      counts.views++;
    }
    await tx.del(row);
  }

  // The change log's oldest rows: a cursor at or before the newest version trimmed is then refused.
  // History is the log too: it goes once past both retentions.
  const logMs = retention.changesMs === false || retention.historyMs === false ? false : Math.max(retention.changesMs, retention.historyMs);
  const trimmed = await oldest(tx, keys.logPrefix, limit, logMs === false ? -Infinity : now - logMs, (_, row) => (row as LogRow).at);
  done &&= trimmed.done;
  let feedFrom = meta.feedFrom;
  for (const [row, value] of trimmed.rows) {
    await tx.del(row);
    if (history !== undefined) history -= storedLogRowBytes(value as LogRow);
    feedFrom = Math.max(feedFrom ?? 0, keys.logPlace(row).version);
    counts.changes++;
  }

  // Checkpoints of the history: the log's start may have passed one, or a new one may be due.
  const checkpoints = await checkpointStep(tx, keys, space, { ...meta, ...(feedFrom !== undefined && { feedFrom }) }, now, limit, retention.checkpointEvery);
  done &&= checkpoints.done;
  if (history !== undefined) history += checkpoints.bytes;

  // The kept rejected mutations of older schema versions (a ring, bounded already) go with the change log's retention.
  if (meta.rejected !== undefined) await trimRejected(tx, keys, now, retention.changesMs);

  if (floor !== (meta.floor ?? 0) || (counts.clientGroups > 0 && !meta.expiredGroups) || feedFrom !== meta.feedFrom || history !== meta.history) {
    await tx.put(keys.meta, {
      ...meta,
      floor,
      ...((counts.clientGroups > 0 || meta.expiredGroups) && { expiredGroups: true }),
      ...(feedFrom !== undefined && { feedFrom }),
      ...(history !== undefined && { history }),
    } satisfies Meta);
  }
  return { ...counts, done };
}

/** How old a staging area is when housekeeping takes it for abandoned. */
const ABANDONED_IMPORT_MS = 24 * 60 * 60 * 1000;

/** Up to `limit` rows under `prefix`, from the oldest, while their time is at most `cutoff`. */
async function oldest(tx: StorageTransaction, prefix: string, limit: number, cutoff: number, time: (row: string, value: unknown) => number) {
  if (cutoff === -Infinity) return { rows: [], done: true };
  const page = await tx.scan({ prefix, limit });
  // Rows are in time order (tombstones in version order, which follows time), so the first one
  // past the cutoff ends the step.
  const end = page.findIndex(([row, value]) => time(row, value) > cutoff);
  const rows = end < 0 ? page : page.slice(0, end);
  return { rows, done: end >= 0 || page.length < limit };
}

/** The values at `keys` in one read, or none for no keys (no round trip for nothing). */
function readMany(tx: StorageTransaction, keys: readonly string[]): Promise<unknown[]> {
  return keys.length === 0 ? Promise.resolve([]) : getMany(tx, keys);
}

/** The user and group an `a/` or `x/` row stands for, from its value. */
function groupOf(value: unknown): [userID: string | undefined, group: string] {
  const [user, group] = value as [string | null, string];
  return [user ?? undefined, group];
}

/** The time in an `a/` or `x/` row's key. */
function timeOf(prefix: string): (row: string) => number {
  return (row) => decodeVersion(row.slice(prefix.length, prefix.length + VERSION_FIELD - 1));
}

/** Removes a group's clients and its lastMutationID index; resolves to how many clients. */
async function removeClients(tx: StorageTransaction, keys: SpaceKeys, userID: string | undefined, group: string): Promise<number> {
  const prefix = keys.lmidPrefix(userID, group);
  let removed = 0;
  const rows = await tx.scan({ prefix });
  const clientIDs = rows.map(([row]) => row.slice(prefix.length + VERSION_FIELD));
  const clients = (await readMany(
    tx,
    clientIDs.map((clientID) => keys.client(userID, clientID)),
  )) as Array<StoredClient | undefined>;
  for (const [i, [row]] of rows.entries()) {
    const clientID = clientIDs[i]!;
    // A client record that moved to another group (it cannot, today) would not be this group's.
    if (clients[i]?.group === group) {
      await tx.del(keys.client(userID, clientID));
      removed++;
    }
    await tx.del(row);
  }
  return removed;
}
