import { utf8Length } from '../../base/utf8.js';
import type { StorageTransaction } from '../../storage/types.js';
import type { LogRow } from '../feed/change-log.js';
import type { ChangeOrigin } from '../version/records.js';
import { valueBytes } from '../transactions/quota.js';
import type { SpaceKeys } from '../version/keys.js';
import { scanPages } from '../version/patch.js';
import { countCheckpoints } from './checkpoints.js';
import { recordOf } from '../../storage/records.js';

/**
 * A space's history, as its quota counts it (`quotas.historyBytes`, see quota.ts): what it keeps
 * of its past until retention lets it go, its change log's rows, its history's checkpoints and its tombstones, each about
 * its size as stored. Every write adds to it and housekeeping takes from it, each with the same
 * measure, so the counter in the meta record equals {@link countHistory} of the rows.
 */

/**
 * What a row of the change log counts for in a space's history, about its size as stored: its
 * key or topic, its values' JSON (`valuesBytes`: before and after, or an event's payload), what
 * made it (`originBytes`: see {@link originBytes}), and the rest of the row.
 */
export function logRowBytes(keyOrTopic: string, valuesBytes: number, originBytes: number): number {
  return LOG_ROW_OVERHEAD + utf8Length(keyOrTopic) + valuesBytes + originBytes;
}

/** The UTF-8 bytes of what made a change, as the log keeps it. */
export function originBytes(origin: ChangeOrigin): number {
  return utf8Length(JSON.stringify(origin));
}

/** What a stored row of the change log counts for: as {@link logRowBytes} counted it when it was written. */
export function storedLogRowBytes(row: LogRow): number {
  const values =
    'topic' in row ? valueBytes(row.payload) : (row.before === undefined ? 0 : valueBytes(row.before)) + (row.after === undefined ? 0 : valueBytes(row.after));
  return logRowBytes('topic' in row ? row.topic : row.key, values, originBytes(row.by));
}

/** What the tombstone of a deleted entry counts for in its space's history: its rows' keys, about. */
export function tombstoneBytes(key: string): number {
  return TOMBSTONE_OVERHEAD + 3 * utf8Length(key);
}

/** A log row's key, its time and field names, about. */
const LOG_ROW_OVERHEAD = 64;
/** A tombstone's entry, version and time rows, less their user key, about. */
const TOMBSTONE_OVERHEAD = 64;

/** A space's history, counted from its rows: its tombstones and its change log. */
export async function countHistory(tx: StorageTransaction, keys: SpaceKeys): Promise<number> {
  let history = 0;
  for await (const page of scanPages(tx, { prefix: keys.tombstonePrefix })) for (const [row] of page) history += tombstoneBytes(keys.tombstoneKey(row));
  for await (const page of scanPages(tx, { prefix: keys.logPrefix })) for (const [, row] of page) history += storedLogRowBytes(recordOf<LogRow>(row));
  return history + (await countCheckpoints(tx, keys));
}
