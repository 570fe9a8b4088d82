import type { StorageTransaction } from '../../storage/types.js';
import { decodeVersion, type SpaceKeys } from '../version/keys.js';
import { recordOf } from '../../storage/records.js';

/** The records of a space's history checkpoints (`q/<space>/<ver>`, see checkpoints.ts). */

/** A checkpoint's record: whether it is whole, and the last key written while it is being built. */
export interface CheckpointRecord {
  done: boolean;
  after?: string;
  /** When it was begun, ms since the epoch. */
  at: number;
}

/** The versions of the whole checkpoints of a space, oldest first. */
export async function doneCheckpoints(tx: StorageTransaction, keys: SpaceKeys): Promise<number[]> {
  return (await checkpointRecords(tx, keys)).filter(([, record]) => record.done).map(([version]) => version);
}

/** Every checkpoint record of a space, whole or being built, oldest first (a few: see CHECKPOINT_EVERY in checkpoints.ts). */
export async function checkpointRecords(tx: StorageTransaction, keys: SpaceKeys): Promise<Array<[number, CheckpointRecord]>> {
  const rows = await tx.scan({ prefix: keys.checkpointRecordPrefix });
  return rows.map(([row, record]) => [decodeVersion(row.slice(keys.checkpointRecordPrefix.length)), recordOf<CheckpointRecord>(record)]);
}
