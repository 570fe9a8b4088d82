import type { ChangeOrigin, RejectedMutation } from './records.js';
import type { IndexDefinitions } from './indexes.js';
import type { JSONValue } from '../../protocol/json.js';
import type { Storage, StorageTransaction } from '../../storage/types.js';
import type { Patch } from './patch.js';
import type { ReadPlan } from '../batching/prefetched-read.js';
import type { Prefixes } from './prefixes.js';

/**
 * What the protocol needs of a way to compute patches: the contract of the global version
 * strategy (`global-version.ts`), the one implementation, which the pull and push processors,
 * the backend calls, imports and housekeeping all use directly. The processors speak only to a
 * {@link SpaceSession}; a second strategy (row versions) would be chosen in one place, the context.
 */
export interface Strategy {
  /** `space`, seen from inside `tx`, at `clock.now`; by `group`, when one asks (its record is read at once). */
  open(tx: StorageTransaction, space: string, clock: SessionClock, group?: GroupRef, options?: SessionOptions): Promise<SpaceSession>;
  /**
   * What a pull of `space` by `who` holding `cookie` will read, when that is known before reading
   * anything: pulls with a plan may run on those reads alone, made in one go (one statement on a
   * database, see shared-reads.ts). Undefined when it is not known (a full pull, a cookie of a
   * space this process has not read yet); a plan that falls short only costs a second read.
   */
  pullPlan?(space: string, cookie: JSONValue, who: { userID: string | undefined } & ({ clientGroupID: string } | { clientID: string })): ReadPlan | undefined;
  /** The live entries of `space`, seen from inside `tx`, without reading anything else first. */
  reader(tx: StorageTransaction, space: string, options?: SessionOptions): Pick<SpaceSession, 'get' | 'scan' | 'scanIndex'>;
  /**
   * The storage keys a push of `userID`'s group and clients reads before its mutators run, so
   * that group commit can fetch a whole group's in one round trip (`StorageTransaction.getMany`).
   */
  pushReads(space: string, userID: string | undefined, clientGroupID: string, clientIDs: Iterable<string>): string[];
  /**
   * One bounded step of housekeeping in `space`: removes at most about `limit` records of each
   * kind that `retention` lets go at `now`. `done` when nothing is left to remove.
   */
  collect(tx: StorageTransaction, space: string, now: number, retention: Retention, limit: number): Promise<Collected & { done: boolean }>;
}

/** How a session writes. */
export interface SessionOptions {
  /** Keep the prefix index too, which pulls with a view read (on when the context has a view). */
  prefixIndex?: boolean;
  /** The store's `maxKeyBytes`: writes whose rows it could not hold are refused. */
  maxKeyBytes?: number | undefined;
  /** The indexes views read (see indexes.ts): kept by this session's writes, rebuilt at its commit when the space's are not these. */
  indexes?: IndexDefinitions | undefined;
  /** Keep the change log (see change-log.ts): on when the context's change feed is. */
  feed?: boolean | undefined;
  /** Leave the change log, whatever the feed: an import that brings the space's history writes it itself (dumped-history.ts). */
  leaveLog?: boolean | undefined;
}

/** The time a session works at, and how stale a group's activity may get before it is refreshed. */
export interface SessionClock {
  now: number;
  touchEveryMs: number;
}

/** How long idle client groups and tombstones are kept, in milliseconds; `false`: for ever. */
export interface Retention {
  clientGroupsMs: number | false;
  tombstonesMs: number | false;
  /** How long the change log keeps a change (see change-log.ts). */
  changesMs: number | false;
  /** How long history keeps a version (see history/): the log is kept for the longer of the two. */
  historyMs: number | false;
  /** The fewest versions between two checkpoints of history (history/checkpoints.ts); undefined: none are begun (the context keeps no `history`). */
  checkpointEvery?: number | undefined;
}

/** What housekeeping removed. */
export interface Collected {
  /** Client groups expired (each leaves a small marker, kept for ever). */
  clientGroups: number;
  /** Client records removed with their groups. */
  clients: number;
  /** Tombstones of deleted entries removed. */
  tombstones: number;
  /** Records of views no pull named for the client-group retention. */
  views: number;
  /** Rows of the change log past its retention (changes and events). */
  changes: number;
}

/** What a space holds: its live entries, and their keys and JSON values in UTF-8 bytes (see quota.ts). */
export interface Usage {
  entries: number;
  bytes: number;
  /** The bytes of its history: change log rows and tombstones (see quota.ts). */
  history: number;
}

/** One space, seen from inside one storage transaction. */
export interface SpaceSession {
  /** The live value at `key`, if any. */
  get(key: string): Promise<JSONValue | undefined>;
  /** The live values at `keys`, in one read (a round trip on a database, not one per key). */
  getMany(keys: readonly string[]): Promise<Array<JSONValue | undefined>>;
  /**
   * Live entries in key order, from `start` (or `prefix`) on, while keys start with `prefix`, a
   * page at a time: a consumer that stops early reads little, and one that reads on pays no
   * await per entry.
   */
  scan(prefix: string, start?: { key: string; exclusive: boolean }): AsyncGenerator<ReadonlyArray<readonly [string, JSONValue]>>;
  /**
   * Live entries of the index named `name` whose secondary keys start with `prefix`, in index
   * order (secondary, then key), from `start` on, a page at a time; with `keysOnly`, their values
   * are not read (and are `null`). Throws for an index the session was not given.
   */
  scanIndex(
    name: string,
    prefix: string,
    start?: { secondary: string; key?: string | undefined; exclusive: boolean },
    keysOnly?: boolean,
  ): AsyncGenerator<ReadonlyArray<readonly [readonly [string, string], JSONValue]>>;
  /** Sets `key`, stamping the change for later pulls; `valueBytes`, when known, saves measuring the value again. */
  put(key: string, value: JSONValue, valueBytes?: number): Promise<void>;
  /** Removes `key` (softly, so pulls can report it); a missing key is no change. */
  del(key: string): Promise<void>;
  /** Whether the session keeps the change log (see change-log.ts): events can be emitted. */
  readonly logging: boolean;
  /** What a log row of this key (or topic) and values would add to the space's history (see quota.ts): 0 while the log is not kept. */
  logRowBytes(keyOrTopic: string, valuesBytes: number): number;
  /** Who makes the writes that follow, for the change log (nothing when it is off). */
  recordAs(origin: ChangeOrigin): void;
  /** Puts an event in the change log, committed with the session's writes; throws when the log is off (look at `logging` first). */
  emit(topic: string, payload: JSONValue): Promise<void>;
  /** Keeps a mutation of an older schema version that could not be applied, and puts it in the change log when kept, unless `event` is false (see rejected.ts). */
  keepRejected(record: RejectedMutation, event?: boolean): Promise<void>;
  /**
   * What the space holds now, this session's writes included: kept as counters in the space's
   * record by every write, so reading them costs nothing (see quota.ts).
   */
  usage(): Promise<Usage>;
  /**
   * Throws a `RangeError` when the store could not hold the rows a write of `key` makes (see
   * {@link SessionOptions.maxKeyBytes}); called while the mutator runs, so that such a write is
   * the mutator's error, not a failed commit.
   */
  checkWrite(key: string): void;

  /**
   * The record of `userID`'s client `clientID`, if it ever pushed to this space. Clients and
   * client groups are per user: another user's client of the same ID is another client.
   */
  getClient(userID: string | undefined, clientID: string): Promise<ClientRecord | undefined>;
  /** Creates or updates the record of `userID`'s client `clientID`. */
  putClient(userID: string | undefined, clientID: string, record: ClientRecord): Promise<void>;

  /**
   * When `userID`'s group was last seen (pushing or pulling), `'expired'` once housekeeping
   * removed its clients, undefined when it never pushed (it then has nothing to lose).
   */
  groupSeen(userID: string | undefined, clientGroupID: string): Promise<number | 'expired' | undefined>;
  /** Records that the group is active now, if its last record (`seen`) is stale. */
  touchGroup(userID: string | undefined, clientGroupID: string, seen: number | undefined, schemaVersion?: string): Promise<void>;
  /** Whether housekeeping ever expired a group of this space. */
  readonly hasExpiredGroups: boolean;

  /**
   * Makes this session's changes visible to pulls; call once, at the end of a push. Resolves
   * true when there were any (a pull would now answer differently), which is when to poke.
   */
  commit(): Promise<boolean>;
  /** The keys of the entries this session wrote, or undefined when they were too many to tell (a poke then goes to every stream). */
  touched(): readonly string[] | undefined;
  /**
   * What a client holding `cookie` needs to catch up, or `'ClientStateNotFound'`; with `group`,
   * the lastMutationIDs of that user's client group that changed since the cookie; with `view`,
   * only the entries under its prefixes (and the cookie names the view). With `waitIfAhead`,
   * `'CookieAhead'` instead of any answer when the cookie may name a commit of this space the
   * read does not show yet (see `Storage.catchUpMs`): the caller reads again later, and at last
   * without it, for the answer a cookie the store is not at gets. A reset sends the keys of
   * the prefixes `order()` gives first, in that order (a first sync's `order`), the rest in key order.
   */
  pull(
    cookie: JSONValue,
    group: GroupRef | undefined,
    view?: ResolvedView,
    waitIfAhead?: boolean,
    order?: () => readonly string[],
  ): Promise<PullResult | 'ClientStateNotFound' | 'CookieAhead'>;
  /**
   * Stores the record of `view`, which a pull named in its cookie (see {@link PullResult.viewRecord});
   * `used` is when the record was last written, if it exists.
   */
  keepView(view: ResolvedView, used: number | undefined): Promise<void>;
}

/** A user's view, as a pull computed it. */
export interface ResolvedView {
  /** The view's name in cookies (a hash of the user and the prefixes). */
  id: string;
  prefixes: Prefixes;
  userID: string | undefined;
  /** When this process last knew the view's record to be in the store, written at that time. */
  seen?: number | undefined;
}

/** What the server knows of one client. */
export interface ClientRecord {
  clientGroupID: string;
  lastMutationID: number;
}

/** A client group: its ID and the user it belongs to (undefined when requests are anonymous). */
export interface GroupRef {
  userID: string | undefined;
  clientGroupID: string;
}

/** A successful pull, before it is shaped for its protocol version. */
export interface PullResult {
  cookie: JSONValue;
  patch: Patch;
  /** Clients of the group whose lastMutationID changed since the cookie (empty without a group). */
  lastMutationIDChanges: Record<string, number>;
  /** The current view's record as the pull read it (`used` undefined: missing); absent when not read. */
  viewRecord?: { used: number | undefined } | undefined;
  /**
   * The rest of a reset too large for the pull's transaction: `patch` is its start, and this
   * reads the other entries a page at a time, each page in a read-only transaction of `space` of
   * its own (see reset-pages.ts). The answer is not whole until a pull from `cookie` adds what
   * changed meanwhile. With `room` (the characters the answer may still send), the reads may
   * stop once it is used up: the generator then returns the cookie of a page of a first sync in
   * pages (page-cookie.ts), the answer's cookie instead, which the next pull goes on from.
   */
  rest?: (storage: Storage, space: string, room?: () => number) => AsyncGenerator<Patch, JSONValue | undefined, undefined>;
}
