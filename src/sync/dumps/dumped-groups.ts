import type { StorageTransaction } from '../../storage/types.js';
import { getMany } from '../../storage/write-buffer.js';
import { encodeVersion, SpaceKeys, STAGING_MARK, VERSION_FIELD } from '../version/keys.js';
import { scanPages } from '../version/patch.js';
import type { GroupRecord, Meta, StoredClient } from '../version/records.js';
import type { SpaceSession } from '../version/strategy.js';
import { setOwn } from '../../base/own.js';
import { recordOf, toStored } from '../../storage/records.js';

/**
 * A space's client groups in a dump (format 3), so that a copied space keeps its clients going:
 * each group with its user and its clients' lastMutationIDs, or the marker of a group
 * housekeeping expired. Spelled as the dump spells them (`user` null: anonymous requests).
 */
export type DumpedGroup = { user: string | null; group: string } & ({ clients: Record<string, number> } | { expired: true });

/** One line of a group (a group with many clients takes several): the group, and its place among its lines. */
export interface GroupLine {
  group: DumpedGroup;
  index: number;
}

/**
 * Where a group comes in a dump: its record's key less the space's part, `-/<group>` or
 * `u<user>/<group>` with `%` and `/` escaped, so an export reads the groups in dump order off
 * the store's own order, a page at a time.
 */
export function groupOrder(user: string | null, group: string): string {
  return ANY_SPACE.group(user ?? undefined, group).slice(ANY_SPACE.groupPrefix.length);
}

const ANY_SPACE = new SpaceKeys('');

/**
 * The client groups of `space` as `tx` sees them (the export's snapshot, the one its entries
 * came from: a lastMutationID is good only with the data it was read with), a page at a time in
 * {@link groupOrder}.
 */
export async function* exportGroups(tx: StorageTransaction, space: string): AsyncGenerator<DumpedGroup[]> {
  const keys = new SpaceKeys(space);
  for await (const page of scanPages(tx, { prefix: keys.groupPrefix })) {
    const found = page.map(([key, record]) => ({ ...keys.groupOf(key), expired: 'expired' in (record as GroupRecord) }));
    // A group's clients are its rows in the lastMutationID index (a range each); their records
    // then come in one read for the page, on a database one round trip.
    const members: string[][] = [];
    for (const { userID, clientGroupID, expired } of found) {
      const prefix = keys.lmidPrefix(userID, clientGroupID);
      const ids: string[] = [];
      if (!expired) for await (const rows of scanPages(tx, { prefix })) for (const [row] of rows) ids.push(row.slice(prefix.length + VERSION_FIELD));
      members.push(ids);
    }
    const wanted = found.flatMap(({ userID }, i) => members[i]!.map((id) => keys.client(userID, id)));
    const records = (wanted.length === 0 ? [] : await getMany(tx, wanted)) as Array<StoredClient | undefined>;
    let at = 0;
    yield found.map(({ userID, clientGroupID, expired }, i): DumpedGroup => {
      const user = userID ?? null;
      const held = members[i]!.map((id) => [id, records[at++]] as const);
      if (expired) return { user, group: clientGroupID, expired: true };
      const clients: Record<string, number> = {};
      // The client record is what a push checks: its lastMutationID, and only a client of this group.
      for (const [id, record] of held) {
        // setOwn: a client may be named "__proto__".
        if (record?.group === clientGroupID) setOwn(clients, id, record.lmid);
      }
      return { user, group: clientGroupID, clients };
    });
  }
}

/** The staging area of import `id`'s client groups, beside that of its entries (`SpaceKeys.staging(id)`). */
export function groupsArea(keys: SpaceKeys, id: string): string {
  return keys.staging(id + GROUPS);
}

/** The import a staging area's name (the key segment after the space) belongs to: both its areas, and its mark, are one import's. */
export function importOfArea(area: string): string {
  if (area.endsWith(GROUPS)) return area.slice(0, -GROUPS.length);
  // The area of a dump's history (dumped-history.ts).
  if (area.endsWith('.log')) return area.slice(0, -'.log'.length);
  return area.endsWith(STAGING_MARK) ? area.slice(0, -STAGING_MARK.length) : area;
}

const GROUPS = '.groups';

/** Writes checked group lines into import `id`'s staging area, each at its group's order and its place among the group's lines. */
export async function stageGroups(tx: StorageTransaction, space: string, id: string, lines: readonly GroupLine[]): Promise<void> {
  const area = groupsArea(new SpaceKeys(space), id);
  for (const { group, index } of lines) await tx.put(area + groupOrder(group.user, group.group) + '/' + encodeVersion(index), toStored(group));
}

/** A client record of the dump that was not written, and why. */
export interface SkippedClient {
  userID: string | null;
  clientGroupID: string;
  clientID: string;
  reason: string;
}

/** What a step of applying an import's client groups did. */
export interface GroupsStep {
  /** Whether every staged group is applied. */
  done: boolean;
  /** Client records written (new, or their lastMutationID raised). */
  written: number;
  skipped: SkippedClient[];
  /** Whether it wrote an expired group's marker: the space's meta record must then say so, see {@link noteExpired}. */
  expired: boolean;
}

/**
 * Applies staged group lines of import `id` in `session`, from the first left, until about
 * `limit` clients are done; each applied line is removed. Each client goes through the session as
 * a push's does (`putClient`: its record, and its row in the lastMutationID index at the
 * session's new version, which a pull reports), so its next push continues from its
 * lastMutationID and its next pull learns it. What the space knows wins where it knows more:
 *
 * - a lastMutationID is never lowered: the space may have run mutations past the dump's, and a
 *   lower one would run them again;
 * - a client the space has in another group (of the same user) stays there: a client belongs to
 *   one group for ever, and a push from that group would otherwise take it over;
 * - a group the space expired stays expired: the space forgot which mutations it ran for it, so
 *   its clients start over (ClientStateNotFound), as they would have;
 * - an expired group's marker is written only where the space has no record of the group: one
 *   it has active knows its clients.
 *
 * Groups are per user: a group of the same ID under another user is another group, untouched.
 */
export async function applyGroups(tx: StorageTransaction, session: SpaceSession, keys: SpaceKeys, id: string, limit: number, now: number): Promise<GroupsStep> {
  const area = groupsArea(keys, id);
  const rows = await tx.scan({ prefix: area, limit });
  const lines = rows.map(([row, value]) => [row, recordOf<DumpedGroup>(value)] as const);
  // What the step reads, in one go: a database answers in one round trip, and the session's reads then hit its cache.
  const reads = lines.flatMap(([, line]) => [
    keys.group(line.user ?? undefined, line.group),
    ...('clients' in line ? Object.keys(line.clients).map((client) => keys.client(line.user ?? undefined, client)) : []),
  ]);
  if (reads.length > 0) await getMany(tx, reads);
  const step: GroupsStep = { done: rows.length < limit, written: 0, skipped: [], expired: false };
  let clients = 0;
  for (const [i, [row, line]] of lines.entries()) {
    const userID = line.user ?? undefined;
    const seen = await session.groupSeen(userID, line.group);
    if ('expired' in line) {
      if (seen === undefined) {
        await tx.put(keys.group(userID, line.group), { expired: now } satisfies GroupRecord);
        step.expired = true;
      }
    } else if (seen === 'expired') {
      for (const clientID of Object.keys(line.clients))
        step.skipped.push({
          userID: line.user,
          clientGroupID: line.group,
          clientID,
          reason: 'the space expired its group (housekeeping): the client starts over in a new group',
        });
    } else {
      await session.touchGroup(userID, line.group, seen);
      for (const [clientID, lmid] of Object.entries(line.clients)) {
        const held = await session.getClient(userID, clientID);
        if (held !== undefined && held.clientGroupID !== line.group) {
          step.skipped.push({
            userID: line.user,
            clientGroupID: line.group,
            clientID,
            reason: `the space has the client in group ${JSON.stringify(held.clientGroupID)}, where it stays`,
          });
        } else if (held === undefined || held.lastMutationID < lmid) {
          await session.putClient(userID, clientID, { clientGroupID: line.group, lastMutationID: lmid });
          step.written++;
        }
      }
    }
    await tx.del(row);
    clients += 'clients' in line ? Object.keys(line.clients).length : 1;
    if (clients >= limit) {
      step.done &&= i === lines.length - 1;
      break;
    }
  }
  return step;
}

/**
 * Marks in the meta record, as housekeeping does, that the space has expired groups, once the
 * session committed (it writes the record from its own copy): a client of protocol 0 it forgot
 * then gets ClientStateNotFound rather than an error. A space with no meta record has had no
 * write, so no client of protocol 0 with a lastMutationID to tell.
 */
export async function noteExpired(tx: StorageTransaction, keys: SpaceKeys): Promise<void> {
  const meta = (await tx.get(keys.meta)) as Meta | undefined;
  if (meta !== undefined && !meta.expiredGroups) await tx.put(keys.meta, { ...meta, expiredGroups: true } satisfies Meta);
}
