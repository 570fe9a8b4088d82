import { utf8Length } from '../../base/utf8.js';

/**
 * Where the sync layer keeps things in the store's flat key space, per space:
 *
 * - `m/<space>`: the space's meta record, `{version, epoch}`;
 * - `e/<space>/<key>`: an entry, `{ver, val}` or a tombstone `{ver, del: true}`;
 * - `v/<space>/<ver>/<key>`: the version index, one row per entry at its latest version, so a
 *   pull finds what changed since a cookie by a range scan;
 * - `c/<space>/<user>/<clientID>`: a client record, `{group, lmid, ver}`;
 * - `l/<space>/<user>/<group>/<ver>/<clientID>`: the lastMutationID index of a group, value `lmid`;
 * - `g/<space>/<user>/<group>`: a group that pushed, `{seen}` (its last activity, coarse), or
 *   `{expired}` once housekeeping removed its clients (that marker is never removed);
 * - `a/<space>/<seen>/<user>/<group>`: the groups by last activity, value `[userID, group]`, so
 *   housekeeping finds the oldest by a range scan;
 * - `x/<space>/<expired>/<user>/<group>`: written by earlier versions (expired groups by expiry,
 *   to remove their markers); housekeeping removes what is left of it;
 * - `t/<space>/<ver>/<key>`: the tombstones by version, value the time of the delete;
 * - `w/<space>/<view>`: a view record, `{user, prefixes, used}`: the prefixes a cookie's view name
 *   stands for, and when a pull last issued it (coarse);
 * - `u/<space>/<used>/<view>`: the view records by last use, so housekeeping finds the oldest;
 * - `b/<space>/<segment>/<segment>/<ver>/<key>`: the prefix index, written while a view is
 *   configured: the version index again, by the key's first two segments (`doc/<id>` of
 *   `doc/<id>/title`, `todo/<id>` of the flat key `todo/<id>`; a key of one segment has no row),
 *   so that a pull whose view is prefixes like `doc/<id>/` or `todo/<id>` reads the changes
 *   under them, not every change to the space;
 * - `n/<space>/<index>/<secondary>\u0000<key>`: the indexes views read (`indexes`, see
 *   indexes.ts), a row per live entry in each, kept by every write;
 * - `f/<space>/<ver>/<seq>`: the change log the change feed reads, while it is on (see
 *   change-log.ts): each change a commit made, in order, with its value before and after and
 *   what made it, and the events mutators emitted;
 * - `p/<space>/<ver>/<key>`: a checkpoint of the space's history (history/checkpoints.ts): every
 *   live entry's value as of `<ver>`, so that a read as of a version reads the nearest checkpoint
 *   and the log between, never the whole log; `q/<space>/<ver>` is its record, `{done, after, at}`;
 * - `h/<space>/<subscription>`: a webhook subscription's delivery state in the space (see
 *   webhooks), and `h/<space>/<subscription>/<from>` its deliveries;
 * - `i/<space>/<import>/<key>`: an import's staging area (`importSpace`), the dump's entries
 *   checked and waiting to be applied; `<import>` starts with the time it began, so housekeeping
 *   can remove one a crashed import left;
 * - `i/<space>/<import>.groups/<user>/<group>/<line>`: beside it, the dump's client groups
 *   (dumped-groups.ts), each line of a group at its place among the group's lines;
 * - `i/<space>/<import>!/`: the import's mark, written before anything is staged and sorted
 *   before its areas' rows, so housekeeping removes it first: an import whose mark is gone has
 *   lost staged rows and applies nothing more (import-batch.ts);
 * - `j/<space>/<slot>`: the latest mutations of older schema versions that could not be applied
 *   (src/sync/schema/rejected.ts), a ring of `MAX_REJECTED` slots, for `inspect`;
 * - `k/<space>/<migration>`: how far the migration of that name got in the space (see
 *   migrations/migration-step.ts): the last key it did, or that it is done; never removed, so a
 *   migration runs once per space;
 * - `r/<space>/`: in a routed store (`routedStorage`), whether this store's copy of the space is
 *   the one in use, or where the space went or is coming from (src/route/route-record.ts).
 *
 * And one row for the whole store: `s/feed`, whether it keeps the change feed (see
 * feed/feed-record.ts).
 *
 * Clients and groups are per user (`<user>` is `-` when requests are anonymous, else `u` and the
 * user ID), so no user can see, join or block another's. Space, user and group IDs are escaped
 * so that no `/` inside them can make one prefix cover another; user keys and client IDs come
 * last, where any string is safe.
 */
export class SpaceKeys {
  readonly meta: string;
  readonly entryPrefix: string;
  readonly versionPrefix: string;
  readonly activityPrefix: string;
  readonly expiredPrefix: string;
  readonly tombstonePrefix: string;
  readonly viewUsePrefix: string;
  readonly stagingPrefix: string;
  /** The change log's rows (see change-log.ts). */
  readonly logPrefix: string;
  /** The checkpoints' rows, and their records (see history/checkpoints.ts). */
  readonly checkpointPrefix: string;
  readonly checkpointRecordPrefix: string;
  /** The webhook deliveries' rows. */
  readonly deliveryPrefix: string;
  /** The rejected mutations of older schema versions (src/sync/schema/rejected.ts). */
  readonly rejectedPrefix: string;
  /** The migrations' progress records. */
  readonly migrationPrefix: string;
  readonly groupPrefix: string;
  readonly clientPrefix: string;
  /** The route record, in a routed store. */
  readonly route: string;
  readonly #space: string;
  #spaceBytes: number | undefined;

  constructor(space: string) {
    this.#space = escapeID(space);
    this.meta = `m/${this.#space}`;
    this.entryPrefix = `e/${this.#space}/`;
    this.versionPrefix = `v/${this.#space}/`;
    this.activityPrefix = `a/${this.#space}/`;
    this.expiredPrefix = `x/${this.#space}/`;
    this.tombstonePrefix = `t/${this.#space}/`;
    this.viewUsePrefix = `u/${this.#space}/`;
    this.stagingPrefix = `${STAGING_PREFIX}${this.#space}/`;
    this.logPrefix = `f/${this.#space}/`;
    this.deliveryPrefix = `h/${this.#space}/`;
    this.checkpointPrefix = `p/${this.#space}/`;
    this.checkpointRecordPrefix = `q/${this.#space}/`;
    this.rejectedPrefix = `j/${this.#space}/`;
    this.migrationPrefix = `k/${this.#space}/`;
    this.groupPrefix = `g/${this.#space}/`;
    this.clientPrefix = `c/${this.#space}/`;
    this.route = `${ROUTE_PREFIX}${this.#space}/`;
  }

  /**
   * The prefixes of every row of this space but its meta record (read by key: `m/<space>` is a
   * prefix of the next space's) and its route record: what a move copies and a move's clean-up
   * removes. Entries and their indexes first, then the client records.
   */
  get rowPrefixes(): { versioned: readonly string[]; whole: readonly string[] } {
    const s = this.#space;
    // The versioned rows are caught up by version; the rest are compared whole (src/route/copy.ts).
    return {
      versioned: [this.entryPrefix, this.versionPrefix, this.tombstonePrefix, `b/${s}/`, this.logPrefix],
      whole: [
        this.checkpointRecordPrefix,
        this.checkpointPrefix,
        this.groupPrefix,
        this.clientPrefix,
        `l/${s}/`,
        this.activityPrefix,
        this.expiredPrefix,
        `w/${s}/`,
        this.viewUsePrefix,
        this.stagingPrefix,
        `n/${s}/`,
        this.deliveryPrefix,
        this.rejectedPrefix,
        this.migrationPrefix,
      ],
    };
  }

  /** Where the index named `name` keeps its rows (see indexes.ts). */
  index(name: string): string {
    return `n/${this.#space}/${escapeID(name)}/`;
  }

  /** The row of `key` in the index named `name`, under its secondary key. */
  indexRow(name: string, secondary: string, key: string): string {
    return `${this.index(name)}${secondary}\u0000${key}`;
  }

  /** The change log's row `seq` (from 0) of `version`. */
  logRow(version: number, seq: number): string {
    return this.logPrefix + encodeVersion(version) + '/' + seq.toString(16).padStart(SEQ_WIDTH, '0');
  }

  /** The version and sequence number of a change log row's key (the inverse of {@link logRow}). */
  logPlace(row: string): { version: number; seq: number } {
    const rest = row.slice(this.logPrefix.length);
    return { version: decodeVersion(rest.slice(0, VERSION_FIELD - 1)), seq: parseInt(rest.slice(VERSION_FIELD), 16) };
  }

  /** Where the checkpoint of `version` keeps its rows. */
  checkpoint(version: number): string {
    return this.checkpointPrefix + encodeVersion(version) + '/';
  }

  /** The record of the checkpoint of `version`. */
  checkpointRecord(version: number): string {
    return this.checkpointRecordPrefix + encodeVersion(version);
  }

  /** The delivery state of the webhook named `name` in this space (a name holds no `/`). */
  delivery(name: string): string {
    return this.deliveryPrefix + name;
  }

  /** Where the webhook named `name` keeps its deliveries, by the place in the log each ended at. */
  deliveryLog(name: string): string {
    return this.deliveryPrefix + name + '/';
  }

  /** The row of a rejected mutation, in its slot of the ring. */
  rejected(slot: number): string {
    return this.rejectedPrefix + slot.toString(16).padStart(SEQ_WIDTH, '0');
  }

  /** The progress record of the migration named `name` (a name holds no `/`). */
  migration(name: string): string {
    return this.migrationPrefix + name;
  }

  /** The staging area of the import named `id` (its start time, then random: see `stagingID`). */
  staging(id: string): string {
    return `${this.stagingPrefix}${id}/`;
  }

  /** The mark of the import named `id`, there while its staging areas are whole (see `claimStaging`). */
  stagingMark(id: string): string {
    return this.staging(id + STAGING_MARK);
  }

  /** The record of the view named `id` (a name is base64url: no escaping needed). */
  view(id: string): string {
    return `w/${this.#space}/${id}`;
  }

  /**
   * Where the prefix index keeps the changes under `bucket`, the first two segments of keys.
   * A bucket holds one `/`, so the one after it tells `doc/1` from `doc/10`.
   */
  prefixIndex(bucket: string): string {
    return `b/${this.#space}/${bucket}/`;
  }

  /** The prefix index's row of `key`, changed at `version` (its bucket is {@link bucketOf} it). */
  prefixIndexRow(bucket: string, version: number, key: string): string {
    return this.prefixIndex(bucket) + encodeVersion(version) + '/' + key;
  }

  /**
   * The length in bytes of the longest store key a write of `key` makes (its row in the version
   * index or among the tombstones, or in the prefix index, where its bucket comes twice), as the
   * SQL stores keep it: UTF-8, with U+0000 and U+0001 two bytes each (`toTextKey`).
   */
  longestRow(key: string, prefixIndex: boolean): number {
    this.#spaceBytes ??= storedLength(this.#space);
    const bucket = prefixIndex ? bucketOf(key) : undefined;
    return 3 + this.#spaceBytes + VERSION_FIELD + (bucket === undefined ? 0 : storedLength(bucket) + 1) + storedLength(key);
  }

  /** A view record's row in the use index, at `time`. */
  viewUse(time: number, id: string): string {
    return this.viewUsePrefix + encodeVersion(time) + '/' + id;
  }

  group(userID: string | undefined, group: string): string {
    return `${this.groupPrefix}${userPart(userID)}/${escapeID(group)}`;
  }

  /** The user and group of a group record's key (the inverse of {@link group}). */
  groupOf(key: string): { userID: string | undefined; clientGroupID: string } {
    const [user, group] = key.slice(this.groupPrefix.length).split('/') as [string, string];
    return { userID: userOf(user), clientGroupID: unescapeID(group) };
  }

  /** The user and client ID of a client record's key (the inverse of {@link client}). */
  clientOf(key: string): { userID: string | undefined; clientID: string } {
    const rest = key.slice(this.clientPrefix.length);
    const slash = rest.indexOf('/');
    return { userID: userOf(rest.slice(0, slash)), clientID: rest.slice(slash + 1) };
  }

  /** A group's row in the activity index (`a/`), at `time`. */
  groupAt(prefix: string, time: number, userID: string | undefined, group: string): string {
    return `${prefix}${encodeVersion(time)}/${userPart(userID)}/${escapeID(group)}`;
  }

  tombstone(version: number, key: string): string {
    return this.tombstonePrefix + encodeVersion(version) + '/' + key;
  }

  /** The user key of a tombstone's row (the inverse of {@link tombstone}). */
  tombstoneKey(row: string): string {
    return row.slice(this.tombstonePrefix.length + VERSION_FIELD);
  }

  entry(key: string): string {
    return this.entryPrefix + key;
  }

  version(version: number, key: string): string {
    return this.versionPrefix + encodeVersion(version) + '/' + key;
  }

  client(userID: string | undefined, clientID: string): string {
    return `${this.clientPrefix}${userPart(userID)}/${clientID}`;
  }

  lmidPrefix(userID: string | undefined, group: string): string {
    return `l/${this.#space}/${userPart(userID)}/${escapeID(group)}/`;
  }

  lmid(userID: string | undefined, group: string, version: number, clientID: string): string {
    return this.lmidPrefix(userID, group) + encodeVersion(version) + '/' + clientID;
  }
}

/**
 * The bucket of the prefix index `key` falls in: its first two segments (`doc/<id>` of
 * `doc/<id>/title`, the whole of `todo/<id>`), or undefined for a key of one segment. Two
 * segments, as in `doc/<id>/` or `member/<user>/`, are what views are made of; one more row per
 * change is what the index costs.
 */
export function bucketOf(key: string): string | undefined {
  const first = key.indexOf('/');
  if (first < 0) return undefined;
  const second = key.indexOf('/', first + 1);
  return second < 0 ? key : key.slice(0, second);
}

/**
 * The one bucket holding every key a view's `prefix` covers (see `coversKey`), or undefined when
 * they spread over many: `''`, a segment (`todo`, which covers `todo/<id>` for every id) or a
 * segment and its `/` (`doc/`).
 */
export function bucketOfPrefix(prefix: string): string | undefined {
  const first = prefix.indexOf('/');
  return first === prefix.length - 1 ? undefined : bucketOf(prefix);
}

/** Fixed-width hex, so that string order is number order for every safe integer. */
export function encodeVersion(version: number): string {
  return version.toString(16).padStart(VERSION_WIDTH, '0');
}

/** The number a fixed-width hex field stands for. */
export function decodeVersion(field: string): number {
  return parseInt(field, 16);
}

/** What ends an import's name in its mark's key: `!` sorts before `.` and `/`, so the mark is the import's first row. */
export const STAGING_MARK = '!';

/** The staging areas' keys start with this; {@link spaceOfStaging} reads the space from one. */
export const STAGING_PREFIX = 'i/';

/** The space whose staging area holds the row at `key`. */
export function spaceOfStaging(key: string): string {
  return unescapeID(key.slice(STAGING_PREFIX.length, key.indexOf('/', STAGING_PREFIX.length)));
}

/** The route records' keys start with this; {@link spaceOfRoute} reads the space from one. */
export const ROUTE_PREFIX = 'r/';

/** The space whose route record is at `key`. */
export function spaceOfRoute(key: string): string {
  return unescapeID(key.slice(ROUTE_PREFIX.length, -1));
}

/** The spaces' meta keys start with this; the rest of such a key is {@link spaceOfMeta}'s. */
export const META_PREFIX = 'm/';

/** The space whose meta record is at `key`. */
export function spaceOfMeta(key: string): string {
  return unescapeID(key.slice(META_PREFIX.length));
}

/** The length of `text` in bytes as the SQL stores keep keys: UTF-8, with U+0000 and U+0001 two bytes each. */
export function storedLength(text: string): number {
  const bytes = utf8Length(text);
  return LOW.test(text) ? bytes + text.replace(NOT_LOW, '').length : bytes;
}

const LOW = /[\u0000\u0001]/;
const NOT_LOW = /[^\u0000\u0001]/g;

/**
 * Escapes `/` (and `%`, to stay reversible). Unlike encodeURIComponent it accepts any string,
 * lone surrogates included, which JSON can carry.
 */
function escapeID(id: string): string {
  // Most IDs have neither: a search is cheaper than two replacements that copy.
  if (!id.includes('%') && !id.includes('/')) return id;
  return id.replaceAll('%', '%25').replaceAll('/', '%2F');
}

function unescapeID(id: string): string {
  return id.replaceAll('%2F', '/').replaceAll('%25', '%');
}

/** The user a key's user part names (see {@link userPart}). */
function userOf(part: string): string | undefined {
  return part === '-' ? undefined : unescapeID(part.slice(1));
}

/** The user's part of a client or group key: `-` for anonymous requests, never a user's. */
function userPart(userID: string | undefined): string {
  return userID === undefined ? '-' : 'u' + escapeID(userID);
}

/** Characters a version takes in a key, plus the `/` after it. */
export const VERSION_FIELD = 15;

const VERSION_WIDTH = 14;

/** Hex digits of a change log row's number within its version: far more rows than one commit can make. */
const SEQ_WIDTH = 8;
