import type { JSONValue } from '../../protocol/json.js';
import type { StorageTransaction, StoredValue } from '../../storage/types.js';
import type { RejectedMutation } from '../version/records.js';
import { scanPages } from '../version/patch.js';
import type { SpaceKeys } from '../version/keys.js';
import { recordOf } from '../../storage/records.js';

/** The topic of the change feed's event for a rejected mutation (its payload: a {@link RejectedMutation}). */
export const REJECTED_TOPIC = 'viewsync.rejected';

/**
 * How many rejected mutations a space keeps: the latest, in a ring of rows numbered by the meta
 * record's count, so a client pushing nothing but rejected mutations costs a bounded space.
 * Housekeeping also removes those older than `retention.changesMs`.
 */
export const MAX_REJECTED = 1_000;

/** The most JSON text of a rejected mutation's args a row keeps; the feed's event has them whole. */
export const MAX_KEPT_ARGS = 16_384;

/** A rejected mutation as its row holds it: numbered, its args cut to {@link MAX_KEPT_ARGS} characters of JSON (`argsCut`). */
export type KeptRejection = Omit<RejectedMutation, 'args'> & { number: number; args?: JSONValue | undefined; argsCut?: string };

/** `record`'s row, numbered `number`. */
export function keptRecord(record: RejectedMutation, number: number): StoredValue {
  const text = JSON.stringify(record.args ?? null);
  const { args, ...rest } = record;
  return (text.length <= MAX_KEPT_ARGS ? { ...rest, number, args: args ?? null } : { ...rest, number, argsCut: text.slice(0, MAX_KEPT_ARGS) }) as StoredValue;
}

/** The `error` as a rejection's reason: its name and message, at most 1,000 characters. */
export function reasonOf(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > 1_000 ? `${text.slice(0, 999)}…` : text;
}

/** The space's kept rejected mutations, oldest first. */
export async function readRejected(tx: StorageTransaction, keys: SpaceKeys): Promise<KeptRejection[]> {
  const all: KeptRejection[] = [];
  for await (const page of scanPages(tx, { prefix: keys.rejectedPrefix })) {
    for (const [, record] of page) all.push(recordOf<KeptRejection>(record));
  }
  return all.sort((a, b) => a.number - b.number);
}

/** Removes the space's rejected mutations older than `keepMs`, for housekeeping. Returns how many it removed. */
export async function trimRejected(tx: StorageTransaction, keys: SpaceKeys, now: number, keepMs: number | false): Promise<number> {
  if (keepMs === false) return 0;
  let removed = 0;
  for (const { number, at } of await readRejected(tx, keys)) {
    if (now - at < keepMs) continue;
    await tx.del(keys.rejected(number % MAX_REJECTED));
    removed++;
  }
  return removed;
}
