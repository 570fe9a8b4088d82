import type { JSONValue } from '../../protocol/json.js';
import type { StorageTransaction } from '../../storage/types.js';
import type { SpaceKeys } from '../version/keys.js';
import type { ChangeOrigin, Meta } from '../version/records.js';
import { toStored } from '../../storage/records.js';

/**
 * The change log of a space (`f/<space>/<version>/<seq>`, see keys.ts): every change a commit made,
 * in the order it made them, each with its value before and after and what made it, and the
 * events mutators emitted (see base/emit.ts). Written in the commit's own transaction, so a version
 * is in the log whole or not at all; read by the change feed (feed-pages.ts), trimmed by
 * housekeeping once older than its retention. Holding every before-value, it is also what a
 * version history or a point-in-time restore of the space would read.
 */

/** One row of the log, as stored: a change of `key` (no `before`: it was absent; no `after`: deleted), or an event. */
export type LogRow =
  | { at: number; key: string; before?: JSONValue; after?: JSONValue; by: ChangeOrigin; erased?: Erased }
  | { at: number; topic: string; payload: JSONValue; by: ChangeOrigin; erased?: 'payload' };

/**
 * Which of a change's values an erasure removed (see history/erase.ts): its value before, after,
 * or both. The row keeps its place, its key and what made it.
 */
export type Erased = 'before' | 'after' | 'both';

/** A session's writing of the log: each row numbered within its version, stamped with the commit's time and origin. */
export class ChangeLog {
  readonly #tx: StorageTransaction;
  readonly #keys: SpaceKeys;
  readonly #at: number;
  /** Rows written at the version being made; reset when a commit moves on. */
  #seq = 0;
  #origin: ChangeOrigin = { kind: 'backend', call: 'transact', userID: null };

  constructor(tx: StorageTransaction, keys: SpaceKeys, at: number) {
    this.#tx = tx;
    this.#keys = keys;
    this.#at = at;
  }

  /** Who makes the writes recorded from now on. */
  set origin(origin: ChangeOrigin) {
    this.#origin = origin;
  }

  get origin(): ChangeOrigin {
    return this.#origin;
  }

  /** Records a change of `key` at `version`, from `before` to `after` (undefined: absent). */
  change(version: number, key: string, before: JSONValue | undefined, after: JSONValue | undefined): Promise<void> {
    const row: LogRow = { at: this.#at, key, by: this.#origin };
    if (before !== undefined) row.before = before;
    if (after !== undefined) row.after = after;
    return this.#put(version, row);
  }

  /** Records an event emitted at `version` (see base/emit.ts). */
  event(version: number, topic: string, payload: JSONValue): Promise<void> {
    return this.#put(version, { at: this.#at, topic, payload, by: this.#origin });
  }

  /** The version's rows are all written: the next commit's start again at 0. */
  committed(): void {
    this.#seq = 0;
  }

  #put(version: number, row: LogRow): Promise<void> {
    return this.#tx.put(this.#keys.logRow(version, this.#seq++), toStored(row));
  }
}

/**
 * The version after which the log holds every change, believed only while the last write kept
 * it (`feedAt` is the meta record's version); undefined: it is not whole now. A write without the
 * log (the feed off, or a viewsync without it) leaves `feedAt` behind, and the log restarts at
 * the next write that keeps it: a cursor from before is then refused, never given a gap.
 */
export function feedFrom(meta: Meta | undefined): number | undefined {
  if (meta === undefined) return 0;
  return meta.feedAt !== undefined && meta.feedAt === meta.version ? meta.feedFrom : undefined;
}
