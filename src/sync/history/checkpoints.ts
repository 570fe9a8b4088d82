import type { JSONValue } from '../../protocol/json.js';
import { utf8Length } from '../../base/utf8.js';
import type { StorageTransaction } from '../../storage/types.js';
import { valueBytes } from '../transactions/quota.js';
import type { SpaceKeys } from '../version/keys.js';
import type { Meta } from '../version/records.js';
import { asOfPages } from './as-of.js';
import { checkpointRecords, type CheckpointRecord } from './checkpoint-records.js';
import { keptVersions } from './log-reads.js';
import { toStored } from '../../storage/records.js';

/**
 * Checkpoints of a space's history (`p/<space>/<ver>/<key>`, their records at `q/<space>/<ver>`):
 * the space's entries as of a version, written by housekeeping a page per step, so that a read as
 * of a version far back starts from the checkpoint nearest it instead of undoing the whole log
 * (as-of.ts). A new one is begun once the versions since the last (or since the log's start)
 * reach the space's entries, and at least {@link CHECKPOINT_EVERY}: so the checkpoints never hold
 * more rows than the log between them, and a read costs at most about two full reads. One whose
 * version the log no longer reaches is removed. They count in the space's history (quota.ts).
 */

/** The fewest versions between two checkpoints. */
export const CHECKPOINT_EVERY = 1_000;

/** What a checkpoint's row counts for in its space's history (quota.ts): its key and value, about as stored. */
export function checkpointRowBytes(key: string, value: JSONValue): number {
  return CHECKPOINT_ROW_OVERHEAD + utf8Length(key) + valueBytes(value);
}

/** How many checkpoint rows a step writes for each row it may remove. */
const BUILD_ROWS_PER_LIMIT = 16;

/** A checkpoint row's key, less its user key, about. */
const CHECKPOINT_ROW_OVERHEAD = 40;

/** What one step of checkpointing did: rows written and removed, the history bytes they add (negative: free), and whether it is done for now. */
export interface CheckpointStep {
  written: number;
  removed: number;
  bytes: number;
  done: boolean;
}

/**
 * One bounded step of checkpointing in a space (at most `limit` rows written or removed): removes
 * checkpoints the log no longer reaches, goes on building one, or begins one when one is due.
 * `every` is the fewest versions between two; undefined: none is begun (the context keeps no
 * `history`), though one begun elsewhere is finished and old ones go.
 */
export async function checkpointStep(
  tx: StorageTransaction,
  keys: SpaceKeys,
  space: string,
  meta: Meta,
  now: number,
  limit: number,
  every: number | undefined,
): Promise<CheckpointStep> {
  const step: CheckpointStep = { written: 0, removed: 0, bytes: 0, done: true };
  const kept = keptVersions(meta);
  const records = await checkpointRecords(tx, keys);
  for (const [version] of records) {
    // The log broke off (a write without it) or was trimmed past it: nothing reads from it again.
    if (kept !== undefined && version >= kept.from && version <= kept.to) continue;
    const removed = await removeRows(tx, keys.checkpoint(version), limit - step.removed);
    step.removed += removed.rows;
    step.bytes -= removed.bytes;
    if (!removed.all) return { ...step, done: false };
    await tx.del(keys.checkpointRecord(version));
  }
  if (kept === undefined) return step;
  const live = records.filter(([version]) => version >= kept.from && version <= kept.to);
  const building = live.find(([, record]) => !record.done);
  if (building !== undefined) {
    // Rows of a checkpoint are cheap to write (no index, no read but the page's): a step writes
    // more of them than of anything it removes, so that a space's checkpoint is built in minutes.
    const built = await build(tx, keys, space, meta, building[0], building[1], limit * BUILD_ROWS_PER_LIMIT);
    return { ...step, written: built.written, bytes: step.bytes + built.bytes, done: false };
  }
  if (every === undefined) return step;
  const last = live.at(-1)?.[0] ?? kept.from;
  if (kept.to - last < Math.max(every, meta.entries ?? 0)) return step;
  const begun: CheckpointRecord = { done: false, at: now };
  await tx.put(keys.checkpointRecord(kept.to), toStored(begun));
  return { ...step, done: false };
}

/** Writes the next page (at most `limit` rows) of the checkpoint of `version`, from the space as of it; marks it whole after its last. */
async function build(
  tx: StorageTransaction,
  keys: SpaceKeys,
  space: string,
  meta: Meta,
  version: number,
  record: CheckpointRecord,
  limit: number,
): Promise<{ written: number; bytes: number }> {
  const rows = keys.checkpoint(version);
  let written = 0;
  let bytes = 0;
  let after = record.after;
  for await (const page of asOfPages(tx, keys, space, meta, version, '', after)) {
    for (const [key, value] of page) {
      await tx.put(rows + key, toStored(value));
      bytes += checkpointRowBytes(key, value);
      after = key;
      if (++written === limit) {
        await tx.put(keys.checkpointRecord(version), toStored({ ...record, after }));
        return { written, bytes };
      }
    }
  }
  const { after: _, ...whole } = record;
  await tx.put(keys.checkpointRecord(version), toStored({ ...whole, done: true }));
  return { written, bytes };
}

/** Removes up to `limit` rows under `prefix`; resolves with how many, their bytes in the history, and whether none is left. */
async function removeRows(tx: StorageTransaction, prefix: string, limit: number): Promise<{ rows: number; bytes: number; all: boolean }> {
  if (limit <= 0) return { rows: 0, bytes: 0, all: false };
  const page = await tx.scan({ prefix, limit });
  let bytes = 0;
  for (const [row, value] of page) {
    await tx.del(row);
    bytes += checkpointRowBytes(row.slice(prefix.length), value as JSONValue);
  }
  return { rows: page.length, bytes, all: page.length < limit };
}

/** The bytes of every checkpoint row of a space, as its history counts them (see history-bytes.ts). */
export async function countCheckpoints(tx: StorageTransaction, keys: SpaceKeys): Promise<number> {
  let bytes = 0;
  for (const [version] of await checkpointRecords(tx, keys)) {
    const prefix = keys.checkpoint(version);
    let start: { key: string; exclusive: boolean } | undefined;
    for (;;) {
      const page = await tx.scan({ prefix, start, limit: 1_000 });
      for (const [row, value] of page) bytes += checkpointRowBytes(row.slice(prefix.length), value as JSONValue);
      if (page.length < 1_000) break;
      start = { key: page.at(-1)![0], exclusive: true };
    }
  }
  return bytes;
}
