import type { JSONValue } from '../../protocol/json.js';
import { compareUTF8 } from '../../base/utf8.js';
import type { StorageTransaction } from '../../storage/types.js';
import type { SpaceKeys } from '../version/keys.js';
import { scanPages } from '../version/patch.js';
import type { Entry, Meta } from '../version/records.js';
import { doneCheckpoints } from './checkpoint-records.js';
import { changesBetween, checkKept } from './log-reads.js';
import { recordOf } from '../../storage/records.js';

/**
 * A space as it was at a version: a base the store holds whole (the live entries, or the
 * checkpoint nearest the version, see checkpoints.ts) with the changes between it and the
 * version undone (a base after it: each key's value before its first change since) or redone (a
 * base before it: each key's value after its last change until). So a read costs about a full
 * read of the space plus the log between the version and its nearest base, never the whole log.
 * An erased value (erase.ts) reads as absent.
 */

/** A base to read the space at a version from: the live entries, or a checkpoint's rows. */
interface Base {
  version: number;
  /** The checkpoint's version; undefined: the live entries. */
  checkpoint: number | undefined;
}

/**
 * The entries of `space` under `prefix` as they were at `version`, in key order, a page at a
 * time, after the key `after` when given; a {@link HistoryGoneError} when its history does not
 * keep that version. Memory: the keys changed between the version and its base, not the space.
 */
export async function* asOfPages(
  tx: StorageTransaction,
  keys: SpaceKeys,
  space: string,
  meta: Meta | undefined,
  version: number,
  prefix = '',
  after?: string,
): AsyncGenerator<Array<[string, JSONValue]>> {
  const kept = checkKept(space, meta, version);
  const base = await nearestBase(tx, keys, kept, version);
  let changed = await changedSince(tx, keys, base.version, version, prefix);
  if (after !== undefined) changed = changed.filter(([key]) => compareUTF8(key, after) > 0);
  yield* merged(baseRows(tx, keys, base, prefix, after), changed);
}

/** The live entries, or the checkpoint whose version is nearest `version` (a tie: the live entries, which need no checkpoint read). */
async function nearestBase(tx: StorageTransaction, keys: SpaceKeys, kept: { from: number; to: number }, version: number): Promise<Base> {
  let best: Base = { version: kept.to, checkpoint: undefined };
  for (const checkpoint of await doneCheckpoints(tx, keys)) {
    // A checkpoint older than the log's start has no changes after it to redo from: it is not a base.
    if (checkpoint < kept.from || checkpoint > kept.to) continue;
    if (Math.abs(checkpoint - version) < Math.abs(best.version - version)) best = { version: checkpoint, checkpoint };
  }
  return best;
}

/**
 * The value at `version` of each key under `prefix` that changed between it and `base`, sorted
 * by key (undefined: absent then, or erased): undone from a later base, redone from an earlier one.
 */
async function changedSince(
  tx: StorageTransaction,
  keys: SpaceKeys,
  base: number,
  version: number,
  prefix: string,
): Promise<Array<[string, JSONValue | undefined]>> {
  const values = new Map<string, JSONValue | undefined>();
  const undo = base >= version;
  for await (const page of changesBetween(tx, keys, Math.min(base, version), Math.max(base, version))) {
    for (const change of page) {
      if (!change.key.startsWith(prefix)) continue;
      // Undoing: the value before the first change since the version. Redoing: after the last one.
      if (undo) {
        if (!values.has(change.key)) values.set(change.key, change.erased === 'before' || change.erased === 'both' ? undefined : change.before);
      } else {
        values.set(change.key, change.erased === 'after' || change.erased === 'both' ? undefined : change.after);
      }
    }
  }
  // In the store's order (UTF-8), which the merge with the base's rows follows.
  return [...values].sort(([a], [b]) => compareUTF8(a, b));
}

/** The base's entries under `prefix`, in key order, a page at a time. */
async function* baseRows(
  tx: StorageTransaction,
  keys: SpaceKeys,
  base: Base,
  prefix: string,
  after: string | undefined,
): AsyncGenerator<Array<[string, JSONValue]>> {
  const from = base.checkpoint === undefined ? keys.entryPrefix : keys.checkpoint(base.checkpoint);
  for await (const page of scanPages(tx, { prefix: from + prefix, start: after === undefined ? undefined : { key: from + after, exclusive: true } })) {
    const rows: Array<[string, JSONValue]> = [];
    for (const [row, value] of page) {
      if (base.checkpoint !== undefined) rows.push([row.slice(from.length), value as JSONValue]);
      else if (!recordOf<Entry>(value).del) rows.push([row.slice(from.length), recordOf<Entry & { del?: undefined }>(value).val]);
    }
    yield rows;
  }
}

/** The base's rows with the changed keys' values laid over them, in key order; absent values left out. */
async function* merged(
  base: AsyncGenerator<Array<[string, JSONValue]>>,
  changed: Array<[string, JSONValue | undefined]>,
): AsyncGenerator<Array<[string, JSONValue]>> {
  let next = 0;
  for await (const page of base) {
    // A page of tombstones only holds nothing; one no changed key falls in goes out as it is.
    if (page.length === 0) continue;
    if (next === changed.length || compareUTF8(changed[next]![0], page.at(-1)![0]) > 0) {
      yield page;
      continue;
    }
    const out: Array<[string, JSONValue]> = [];
    for (const entry of page) {
      const key = entry[0];
      while (next < changed.length && compareUTF8(changed[next]![0], key) < 0) {
        const [changedKey, was] = changed[next++]!;
        if (was !== undefined) out.push([changedKey, was]);
      }
      if (next < changed.length && changed[next]![0] === key) {
        const was = changed[next++]![1];
        if (was !== undefined) out.push([key, was]);
      } else {
        out.push(entry);
      }
    }
    if (out.length > 0) yield out;
  }
  const rest: Array<[string, JSONValue]> = [];
  for (; next < changed.length; next++) {
    const [key, was] = changed[next]!;
    if (was !== undefined) rest.push([key, was]);
  }
  if (rest.length > 0) yield rest;
}

/** The entries of `space` under `prefix` at `version`, whole, in key order. */
export async function asOf(
  tx: StorageTransaction,
  keys: SpaceKeys,
  space: string,
  meta: Meta | undefined,
  version: number,
  prefix = '',
): Promise<Map<string, JSONValue>> {
  const entries = new Map<string, JSONValue>();
  for await (const page of asOfPages(tx, keys, space, meta, version, prefix)) for (const [key, value] of page) entries.set(key, value);
  return entries;
}
