import type { JSONValue } from '../../protocol/json.js';

/** The records of the global version strategy, as stored (see keys.ts for where). */

/** A space's meta record, written by every push that changed something. */
export type Meta = {
  version: number;
  /** Random ID of this incarnation of the space. */
  epoch: string;
  /** What the cookie's `order` adds to the version (see cookie.ts). */
  base: number;
  /** The newest version of a tombstone housekeeping removed: older cookies get a reset. */
  floor?: number;
  /** Housekeeping has expired client groups here: a client it forgot gets ClientStateNotFound. */
  expiredGroups?: true;
  /**
   * The version from which every change is in the prefix index (see keys.ts), flat keys such as
   * `todo/<id>` included; absent: it is not kept. Believed only while `indexedAt` is `version`.
   */
  indexFrom?: number;
  /**
   * The version of the last write that kept the index. A write by a viewsync that does not know
   * these fields (0.1, whose index left out keys of one `/`: a downgrade) leaves them
   * behind the version, and the index restarts at the next write that keeps it.
   */
  indexedAt?: number;
  /** Written by viewsync 0.1 (its index left out keys of one `/`); no longer read. */
  prefixIndexFrom?: number;
  /** The indexes views read whose rows are whole (name: its definition, see indexes.ts), believed only while `indexesAt` is `version`. */
  indexes?: Record<string, string>;
  /** The version of the last write that kept `indexes`; behind `version`, a write kept them otherwise and they are rebuilt. */
  indexesAt?: number;
  /**
   * Live entries, and the UTF-8 bytes of their keys and JSON values (see quota.ts): kept exact by
   * every write, for quotas. Absent in a space last written before viewsync kept them: counted
   * by a scan the first time a quota needs them.
   */
  entries?: number;
  bytes?: number;
  /** The bytes of its history (change log rows and tombstones, see quota.ts), kept by every write and housekeeping; absent in a space last written before viewsync kept it. */
  history?: number;
  /**
   * How many erasures (`eraseData`) rewrote rows of the change log, ever. An erasure rewrites rows
   * older than the version it makes, which a move's catch-up (src/route/copy.ts), copying the log
   * by version, would miss: it copies the whole log again when this differs from its copy's.
   */
  erasures?: number;
  /** How many mutations of older schema versions were rejected in the space, ever: numbers the ring of their rows (schema/rejected.ts). */
  rejected?: number;
  /**
   * The version after which the change log (see change-log.ts) holds every change, believed only
   * while `feedAt` is `version`; absent: the log was never kept. Housekeeping raises it as it
   * trims the log.
   */
  feedFrom?: number;
  /** The version of the last write that kept the change log; behind `version`, a write did not, and the log restarts. */
  feedAt?: number;
  /** The change feed was turned off in this space (`viewsync feed off`): writers leave its log until a context with `changes` writes (see feed-record.ts). */
  feedOff?: true;
  /** Signs this space's view cookies (signature.ts); never sent. Absent in a space no write reached since viewsync 0.2. */
  secret?: string;
  /** The store's incarnation at the last write (see `StorageTransaction.incarnation`); absent where the store has none. */
  incarnation?: string;
  /**
   * Versions skipped when a write found the store in another incarnation than the last write
   * did, each `[from, to]`, oldest first: a commit the store lost (a failover, a restore) may
   * have given a client a version between them, and a cookie there is answered as lost. At most
   * a few are kept (see global-version.ts).
   */
  gaps?: Array<[from: number, to: number]>;
};

/** An entry at the version that last wrote it, or its tombstone. */
export type Entry = { ver: number; val: JSONValue; del?: undefined } | { ver: number; del: true };

/** What the server knows of a client. */
export interface StoredClient {
  group: string;
  lmid: number;
  ver: number;
}

/** A client group that pushed: when it was last seen (coarsely), or when housekeeping expired it. */
export type GroupRecord = { seen: number; schema?: string } | { expired: number };

/** What a view name in a cookie stands for (see view.ts), and when a pull last issued it. */
export interface ViewRecord {
  /** The user the view is of (null: anonymous); the name is only good for that user. */
  user: string | null;
  /** The view's prefixes, in canonical form. */
  prefixes: string[];
  /** The rule they follow (`RULE` in prefixes.ts); absent in a record from before it: not believed. */
  rule?: string;
  used: number;
}

/**
 * What made a change: a client's mutation, a call of the app's backend, a data migration
 * (`runMigration`), or a history tool: a restore to an older version (`restoreSpace`), a revert of
 * what a cause made (`revertChanges`), or an erasure (`eraseData`).
 */
export type ChangeOrigin =
  | { kind: 'mutation'; name: string; clientGroupID: string; clientID: string; mutationID: number; userID: string | null }
  | { kind: 'backend'; call: 'transact' | 'mutate' | 'import'; name?: string; userID: string | null }
  | { kind: 'migration'; name: string }
  | { kind: 'restore'; to: number; prefix: string }
  | { kind: 'revert'; cause: RevertCause }
  | { kind: 'erase' };

/**
 * The changes a revert undoes (`revertChanges`): those made by every field given, within
 * `versions` (inclusive) and at or after `since` (ms since the epoch) when given.
 */
export interface RevertCause {
  /** One mutation: its client and mutation ID. */
  mutation?: { clientID: string; mutationID: number };
  clientGroupID?: string;
  /** The user the changes were made for (a mutation's, or a backend call's `userID`). */
  userID?: string;
  /** A mutator's name (a client's mutation, or `mutate`). */
  mutator?: string;
  /** A window of versions, both ends included: a release's, say. */
  versions?: [from: number, to: number];
  /** Changes committed at or after this time only. */
  since?: number;
}

/**
 * A mutation of an older schema version that was not applied: its upgrade was missing or threw,
 * or today's mutator refused what it became. Kept in the space (`inspect`), put in the change feed
 * as an event of topic {@link REJECTED_TOPIC}, and told to `onError`; its client moves on, as for
 * any mutation that fails (spec, push rule 6).
 */
export interface RejectedMutation {
  clientGroupID: string;
  clientID: string;
  /** The mutation's ID. */
  id: number;
  /** The mutator name the client sent. */
  name: string;
  args: JSONValue | undefined;
  /** The schema version the client sent it under. */
  schemaVersion: string;
  /** Why: the error's name and message. */
  reason: string;
  /** When, in milliseconds since the epoch (the context's clock). */
  at: number;
  userID: string | null;
}
