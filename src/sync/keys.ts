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
 *   `{expired}` once housekeeping removed its clients;
 * - `a/<space>/<seen>/<user>/<group>` and `x/<space>/<expired>/<user>/<group>`: the groups by
 *   last activity and the expired ones by expiry, value `[userID, group]`, so housekeeping finds
 *   the oldest by a range scan;
 * - `t/<space>/<ver>/<key>`: the tombstones by version, value the time of the delete;
 * - `w/<space>/<view>`: a view record, `{user, prefixes, used}`: the prefixes a cookie's view name
 *   stands for, and when a pull last issued it (coarse);
 * - `u/<space>/<used>/<view>`: the view records by last use, so housekeeping finds the oldest;
 * - `b1/<space>/<segment>/<ver>/<key>` and `b2/<space>/<segment>/<segment>/<ver>/<key>`: the
 *   prefix index, written while a view is configured: the version index again, once by the key's
 *   first segment and once by its first two (a segment ends with `/`), so that a pull whose view
 *   is `doc/<id>/` prefixes reads the changes under them, not every change to the space.
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
  readonly #space: string;

  constructor(space: string) {
    this.#space = escapeID(space);
    this.meta = `m/${this.#space}`;
    this.entryPrefix = `e/${this.#space}/`;
    this.versionPrefix = `v/${this.#space}/`;
    this.activityPrefix = `a/${this.#space}/`;
    this.expiredPrefix = `x/${this.#space}/`;
    this.tombstonePrefix = `t/${this.#space}/`;
    this.viewUsePrefix = `u/${this.#space}/`;
  }

  /** The record of the view named `id` (a name is base64url: no escaping needed). */
  view(id: string): string {
    return `w/${this.#space}/${id}`;
  }

  /** Where the prefix index keeps the changes under `bucket`, a key's first `depth` segments. */
  prefixIndex(depth: number, bucket: string): string {
    return `b${depth}/${this.#space}/${bucket}`;
  }

  /** The prefix index's row of `key`, changed at `version`, in its bucket at `depth`. */
  prefixIndexRow(depth: number, bucket: string, version: number, key: string): string {
    return this.prefixIndex(depth, bucket) + encodeVersion(version) + '/' + key;
  }

  /** A view record's row in the use index, at `time`. */
  viewUse(time: number, id: string): string {
    return this.viewUsePrefix + encodeVersion(time) + '/' + id;
  }

  group(userID: string | undefined, group: string): string {
    return `g/${this.#space}/${userPart(userID)}/${escapeID(group)}`;
  }

  /** A group's row in the activity index (`a/`) or the expired index (`x/`), at `time`. */
  groupAt(prefix: string, time: number, userID: string | undefined, group: string): string {
    return `${prefix}${encodeVersion(time)}/${userPart(userID)}/${escapeID(group)}`;
  }

  tombstone(version: number, key: string): string {
    return this.tombstonePrefix + encodeVersion(version) + '/' + key;
  }

  entry(key: string): string {
    return this.entryPrefix + key;
  }

  version(version: number, key: string): string {
    return this.versionPrefix + encodeVersion(version) + '/' + key;
  }

  client(userID: string | undefined, clientID: string): string {
    return `c/${this.#space}/${userPart(userID)}/${clientID}`;
  }

  lmidPrefix(userID: string | undefined, group: string): string {
    return `l/${this.#space}/${userPart(userID)}/${escapeID(group)}/`;
  }

  lmid(userID: string | undefined, group: string, version: number, clientID: string): string {
    return this.lmidPrefix(userID, group) + encodeVersion(version) + '/' + clientID;
  }
}

/** How many leading segments the prefix index goes down to. */
export const PREFIX_INDEX_DEPTH = 2;

/**
 * The buckets `key` (or a prefix) falls in, shallowest first: its text up to and including its
 * first `/`, then its second, down to {@link PREFIX_INDEX_DEPTH}, as `[depth, bucket]`.
 */
export function bucketsOf(key: string): Array<[depth: number, bucket: string]> {
  const buckets: Array<[number, string]> = [];
  for (let end = key.indexOf('/'); end >= 0 && buckets.length < PREFIX_INDEX_DEPTH; end = key.indexOf('/', end + 1)) {
    buckets.push([buckets.length + 1, key.slice(0, end + 1)]);
  }
  return buckets;
}

/** Fixed-width hex, so that string order is number order for every safe integer. */
export function encodeVersion(version: number): string {
  return version.toString(16).padStart(VERSION_WIDTH, '0');
}

/** The number a fixed-width hex field stands for. */
export function decodeVersion(field: string): number {
  return parseInt(field, 16);
}

/** The spaces' meta keys start with this; the rest of such a key is {@link spaceOfMeta}'s. */
export const META_PREFIX = 'm/';

/** The space whose meta record is at `key`. */
export function spaceOfMeta(key: string): string {
  return key.slice(META_PREFIX.length).replaceAll('%2F', '/').replaceAll('%25', '%');
}

/**
 * Escapes `/` (and `%`, to stay reversible). Unlike encodeURIComponent it accepts any string,
 * lone surrogates included, which JSON can carry.
 */
function escapeID(id: string): string {
  return id.replaceAll('%', '%25').replaceAll('/', '%2F');
}

/** The user's part of a client or group key: `-` for anonymous requests, never a user's. */
function userPart(userID: string | undefined): string {
  return userID === undefined ? '-' : 'u' + escapeID(userID);
}

/** Characters a version takes in a key, plus the `/` after it. */
export const VERSION_FIELD = 15;

const VERSION_WIDTH = 14;
