import type { Storage, StorageTransaction } from '../../storage/types.js';
import { SpaceKeys } from '../version/keys.js';
import type { Meta } from '../version/records.js';

/**
 * Whether a store keeps the change feed is a property of its data, not of one process's
 * options: a write that left a space's log behind (the CLI, an instance on an older config)
 * would break every webhook and reader of that space for good. So the store records it: each
 * space's meta record says whether the last write to it kept its log (`feedAt`), and the store
 * holds one record (`s/feed`, see keys.ts) for the spaces no write has logged yet. A context with
 * `changes` keeps the log and sets the store's record on; every other writer keeps the log where
 * the data says so; `viewsync feed off` (turnOffChangeFeed) is the one way to stop it.
 */

/** Where a store records whether it keeps the change feed (in each store of a routed storage). */
export const FEED_RECORD = 's/feed';

/** The store's record, as stored: the feed on, or turned off, since `at` (ms since the epoch). */
export interface FeedRecord {
  on: boolean;
  at: number;
}

/** What a write session does with a space's log: keep it, leave it, or leave it and mark the space off. */
export type LogDecision = 'keep' | 'leave' | 'leave-off';

/**
 * Whether a write to the space whose meta record is `meta` keeps its change log, by what the
 * data says (the writer's own `changes` aside, which always keeps it):
 *
 * | the space | its log |
 * |---|---|
 * | new | as the store's record says |
 * | never logged | left: it starts with the first write of a context with `changes` |
 * | kept by its last write | kept, whoever writes |
 * | turned off (`feedOff`) and kept until now | as the store's record says (it may be on again) |
 * | turned off and left since | left: a context with `changes` starts it again |
 * | left behind by a writer that did not know this rule (an older viewsync) | as the store's record says |
 *
 * Where the store says off, the space is marked off, so that its writes read the store's record
 * once. Only those cases read it: the hot path (a space whose log is kept, or never was) reads
 * nothing more than its meta record.
 */
export async function logDecision(tx: StorageTransaction, meta: Meta | undefined): Promise<LogDecision> {
  if (meta !== undefined) {
    if (meta.feedAt === undefined) return 'leave';
    const whole = meta.feedAt === meta.version;
    if (whole && meta.feedOff !== true) return 'keep';
    if (!whole && meta.feedOff === true) return 'leave';
  }
  const on = ((await tx.get(FEED_RECORD)) as FeedRecord | undefined)?.on === true;
  return on ? 'keep' : meta === undefined ? 'leave' : 'leave-off';
}

/** The stores `storage` is made of, by name (undefined: a store of one), each keeping its own record. */
function storesOf(storage: Storage, name?: string): Array<[string | undefined, Storage]> {
  return storage.parts ? Object.entries(storage.parts.stores).flatMap(([part, store]) => storesOf(store, part)) : [[name, storage]];
}

/** The store's record in each of its stores (null: none yet), by the store's name (undefined: a store of one). */
export async function readFeedRecords(storage: Storage): Promise<Array<[string | undefined, FeedRecord | null]>> {
  return Promise.all(
    storesOf(storage).map(
      async ([name, store]) =>
        [name, await store.transaction(async (tx) => ((await tx.get(FEED_RECORD)) as FeedRecord | undefined) ?? null, { readOnly: true })] as [
          string | undefined,
          FeedRecord | null,
        ],
    ),
  );
}

/**
 * Sets the store's record (in each of its stores) to `on` at `now`, where it says otherwise:
 * read first, so that a store already saying so takes no write, and no store-wide lock.
 */
export async function writeFeedRecord(storage: Storage, on: boolean, now: number): Promise<void> {
  await Promise.all(
    storesOf(storage).map(async ([, store]) => {
      const says = async (tx: StorageTransaction) => ((await tx.get(FEED_RECORD)) as FeedRecord | undefined)?.on === on;
      if (await store.transaction(says, { readOnly: true })) return;
      await store.transaction(
        async (tx) => {
          if (!(await says(tx))) await tx.put(FEED_RECORD, { on, at: now } satisfies FeedRecord);
        },
        { readOnly: false },
      );
    }),
  );
}

/** Marks `space` off (its writers then leave its log), in `tx`; resolves whether it kept its log until now. */
export async function markSpaceOff(tx: StorageTransaction, space: string): Promise<boolean> {
  const key = new SpaceKeys(space).meta;
  const meta = (await tx.get(key)) as Meta | undefined;
  if (meta === undefined || meta.feedAt === undefined || meta.feedOff === true) return false;
  await tx.put(key, { ...meta, feedOff: true } satisfies Meta);
  return true;
}
