import type { JSONValue } from '../../protocol/json.js';
import { compareUTF8 } from '../../base/utf8.js';
import type { Storage, StorageTransaction, StoredValue } from '../../storage/types.js';
import { getMany } from '../../storage/write-buffer.js';
import { globalVersion } from '../session/global-version.js';
import { applyGroups, groupsArea, noteExpired, type SkippedClient } from './dumped-groups.js';
import { historyArea } from './dumped-history.js';
import { decodeVersion, encodeVersion, SpaceKeys, spaceOfStaging, STAGING_PREFIX } from '../version/keys.js';
import type { Entry } from '../version/records.js';
import type { SessionClock, SessionOptions, SpaceSession } from '../version/strategy.js';

/**
 * The storage side of `importSpace`: a dump's entries and client groups are first written to
 * staging areas of the space, a batch per transaction, and applied from there only once the
 * whole dump has been read and checked, so that a dump refused at any line changes nothing the
 * space's clients see.
 */

/** A new import's name: its start time first, so housekeeping can tell an abandoned one's age. */
export function stagingID(now: number): string {
  return encodeVersion(now) + '-' + crypto.randomUUID().slice(0, 8);
}

/** When the import named `id` began (see {@link stagingID}). */
export function stagingStarted(id: string): number {
  return decodeVersion(id.slice(0, id.indexOf('-')));
}

/**
 * The spaces that hold a staging area, one read each: the scan skips from a space's first row
 * past all of its rows, so a large staging area costs one read. A space's first import, killed
 * while staging, leaves one in a space with no meta record, which only this finds.
 */
export async function stagingSpaces(storage: Storage): Promise<string[]> {
  const spaces: string[] = [];
  let start: string | undefined;
  for (;;) {
    const [row] = await storage.transaction(
      (tx) => tx.scan({ prefix: STAGING_PREFIX, start: start === undefined ? undefined : { key: start, exclusive: false }, limit: 1 }),
      { readOnly: true },
    );
    if (row === undefined) return spaces;
    const space = spaceOfStaging(row[0]);
    spaces.push(space);
    // `0` is the character after `/`, which ends the space's part of its rows' keys.
    start = new SpaceKeys(space).stagingPrefix.slice(0, -1) + '0';
  }
}

/**
 * Housekeeping takes a staging area for abandoned a day after its import began (an import killed
 * midway leaves one), and removes it in batches, the import's mark first. An import still running
 * then (a huge one, or servers whose clocks are a day apart) must not go on: a replace applied
 * from what is left would delete every entry whose staged row was removed.
 */
export class StagingLostError extends Error {
  constructor(space: string, id: string) {
    super(
      `importSpace: the staging area of this import of space ${JSON.stringify(space)} (begun ${new Date(stagingStarted(id)).toISOString()}) was removed before it was applied: ` +
        'housekeeping takes a staging area for abandoned a day after its import began (did the import run that long, or are the servers’ clocks a day apart?), ' +
        'so nothing of it was applied beyond the batches already done (none, for an import of up to a thousand entries); run it again',
    );
    this.name = 'StagingLostError';
  }
}

/** Writes import `id`'s mark, before anything is staged: see {@link checkStaging}. */
export async function claimStaging(tx: StorageTransaction, space: string, id: string): Promise<void> {
  await tx.put(new SpaceKeys(space).stagingMark(id), true);
}

/** Throws {@link StagingLostError} unless import `id`'s mark is there, so its staged rows are all there too: housekeeping removes the mark first. */
export async function checkStaging(tx: StorageTransaction, space: string, id: string): Promise<void> {
  if ((await tx.get(new SpaceKeys(space).stagingMark(id))) === undefined) throw new StagingLostError(space, id);
}

/** Writes checked entries into the staging area of import `id`. */
export async function stage(tx: StorageTransaction, space: string, id: string, entries: ReadonlyArray<readonly [string, JSONValue]>): Promise<void> {
  const area = new SpaceKeys(space).staging(id);
  for (const [key, value] of entries) await tx.put(area + key, value as StoredValue);
}

/** Removes up to `limit` rows of import `id`'s staging areas (entries, client groups, history, then its mark); true when none is left. */
export async function unstage(tx: StorageTransaction, space: string, id: string, limit: number): Promise<boolean> {
  const keys = new SpaceKeys(space);
  let left = limit;
  for (const area of [keys.staging(id), groupsArea(keys, id), historyArea(keys, id), keys.stagingMark(id)]) {
    const rows = await tx.scan({ prefix: area, limit: left });
    for (const [row] of rows) await tx.del(row);
    left -= rows.length;
    if (left === 0) return false;
  }
  return true;
}

/** Where an apply stands: every entry up to `after` is done, all of them once `entriesDone`; then the client groups. */
export interface ApplyAt {
  after: string | undefined;
  entriesDone: boolean;
}

/** What a step of an apply did, and where the apply stands after it. */
export interface ApplyStep extends ApplyAt {
  /** Whether the whole import is applied. */
  done: boolean;
  /** Entries the step wrote (new or changed). */
  written: number;
  /** Entries the step deleted (replace only). */
  deleted: number;
  /** Client records the step wrote (new, or their lastMutationID raised). */
  clients: number;
  /** Client records of the dump the step did not write, and why. */
  skipped: SkippedClient[];
  /** Whether the step changed the space (it then took a new version). */
  changed: boolean;
}

/**
 * One step of applying import `id`, in one new version, as a push's changes take: a step of its
 * entries (see {@link applyEntries}) and, once they are all done, of its client groups (see
 * `applyGroups`), in the same transaction: an import of a few of each is one, so no pull sees
 * its data without the lastMutationIDs that go with it.
 */
export async function applyStep(
  tx: StorageTransaction,
  space: string,
  id: string,
  at: ApplyAt,
  options: { replace: boolean; limit: number; clock: SessionClock; session: SessionOptions },
): Promise<ApplyStep> {
  await checkStaging(tx, space, id);
  const keys = new SpaceKeys(space);
  const session = await globalVersion.open(tx, space, options.clock, undefined, options.session);
  session.recordAs({ kind: 'backend', call: 'import', userID: null });
  let { after, entriesDone } = at;
  let entries = { written: 0, deleted: 0 };
  if (!entriesDone) {
    ({ after, ...entries } = await applyEntries(tx, session, keys, id, after, options));
    entriesDone = after === undefined;
  }
  const groups = entriesDone ? await applyGroups(tx, session, keys, id, options.limit, options.clock.now) : undefined;
  const changed = await session.commit();
  if (groups?.expired) await noteExpired(tx, keys);
  if (groups?.done) await tx.del(keys.stagingMark(id));
  return { after, entriesDone, done: groups?.done ?? false, ...entries, clients: groups?.written ?? 0, skipped: groups?.skipped ?? [], changed };
}

/**
 * A step of applying import `id`'s entries: walks the staged entries (and, to replace, the space's live
 * entries) together, in key order, from just after `after`, at most `limit` of each, and makes
 * the space agree with the dump over that range. A staged entry whose value differs from the live one (or
 * that is missing) is written; with `replace`, a live entry the dump lacks is deleted. Equal
 * entries keep their version, so clients download only what the import changed. Each staged row
 * is removed once applied. Resolves with where the entries stand: undefined once all are done.
 */
async function applyEntries(
  tx: StorageTransaction,
  session: SpaceSession,
  keys: SpaceKeys,
  id: string,
  after: string | undefined,
  options: { replace: boolean; limit: number },
): Promise<{ after: string | undefined; written: number; deleted: number }> {
  const { limit } = options;
  const area = keys.staging(id);
  const staged = await tx.scan({ prefix: area, start: after === undefined ? undefined : { key: area + after, exclusive: true }, limit });
  // A replace walks the space's live entries beside the dump's, to find those the dump lacks; a
  // merge needs only the entries the dump names, however large the space.
  const live = options.replace ? await liveFrom(session, after, limit) : [];
  // Every key up to the last of a full page is known on that side; past it, only the other's.
  const ends = [staged.length === limit ? staged.at(-1)![0].slice(area.length) : undefined, live.length === limit ? live.at(-1)![0] : undefined];
  const bound = ends.filter((end): end is string => end !== undefined).sort(compareUTF8)[0];
  const within = (key: string) => bound === undefined || compareUTF8(key, bound) <= 0;
  const incoming = staged.map(([row, value]) => [row.slice(area.length), value as JSONValue] as const).filter(([key]) => within(key));
  // What the space holds at those keys, in one read (a round trip on a database, not one per key).
  const held = (await getMany(
    tx,
    incoming.map(([key]) => keys.entry(key)),
  )) as Array<Entry | undefined>;

  const unnamed = new Set(live.filter(([key]) => within(key)).map(([key]) => key));
  let written = 0;
  let deleted = 0;
  for (const [i, [key, value]] of incoming.entries()) {
    const old = held[i];
    unnamed.delete(key);
    if (old === undefined || old.del || JSON.stringify(old.val) !== JSON.stringify(value)) {
      await session.put(key, value);
      written++;
    }
    await tx.del(area + key);
  }
  for (const key of unnamed) {
    await session.del(key);
    deleted++;
  }
  return { after: bound, written, deleted };
}

/** Up to `limit` live entries of the space after `after`, in key order. */
async function liveFrom(session: SpaceSession, after: string | undefined, limit: number): Promise<Array<readonly [string, JSONValue]>> {
  const live: Array<readonly [string, JSONValue]> = [];
  const scan = session.scan('', after === undefined ? undefined : { key: after, exclusive: true });
  for await (const page of scan) {
    live.push(...page);
    if (live.length >= limit) {
      await scan.return(undefined);
      break;
    }
  }
  live.length = Math.min(live.length, limit);
  return live;
}
