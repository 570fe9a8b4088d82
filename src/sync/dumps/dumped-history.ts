import type { JSONValue } from '../../protocol/json.js';
import { fitsUTF8, hasLoneSurrogate } from '../../base/utf8.js';
import type { StorageTransaction, StoredValue } from '../../storage/types.js';
import type { LogRow } from '../feed/change-log.js';
import { frozenJSONCopy } from '../transactions/frozen-json.js';
import type { Limits } from '../transactions/limits.js';
import { storedLogRowBytes } from '../history/history-bytes.js';
import type { SpaceKeys } from '../version/keys.js';
import { scanPages } from '../version/patch.js';
import type { Meta } from '../version/records.js';
import { recordOf, toStored } from '../../storage/records.js';

/**
 * A space's history in a dump (format 4, see backend/dump.ts): its change log's rows, exported as
 * stored, and imported into an empty space as they were, so that the space reads the same as of
 * every version the history keeps. An import stages them beside its entries, moves them into the
 * log before it applies the entries (which leave the log: the dump's history already holds what
 * they write), and then marks the log whole from the dump's first kept version.
 */

/** The staging area of import `id`'s history, beside those of its entries and client groups. */
export function historyArea(keys: SpaceKeys, id: string): string {
  return keys.staging(id + '.log');
}

/** The change log's rows as dump lines, `{"log":[version,seq],…row}`, a page at a time, in log order. */
export async function* logLines(tx: StorageTransaction, keys: SpaceKeys): AsyncGenerator<{ text: string; rows: number }> {
  for await (const page of scanPages(tx, { prefix: keys.logPrefix })) {
    const text = page.map(([row, value]) => {
      const { version, seq } = keys.logPlace(row);
      return JSON.stringify({ log: [version, seq], ...(value as object) }) + '\n';
    });
    yield { text: text.join(''), rows: page.length };
  }
}

/** A checked log line: its row's place in the log (the key after the log's prefix) and the row. */
export type DumpedLogRow = readonly [place: string, row: LogRow];

/**
 * Checks a parsed log line of a dump whose history keeps versions `kept`: its place, after the
 * previous line's (`previous`), and its row's shape and sizes. Returns the row, or a problem to
 * report on the line.
 */
export function checkLogRow(
  parsed: unknown,
  keys: SpaceKeys,
  kept: { from: number; to: number },
  previous: string | undefined,
  limits: Limits,
): DumpedLogRow | string {
  const { log, ...row } = parsed as { log?: unknown } & Record<string, unknown>;
  if (!Array.isArray(log) || log.length !== 2 || !log.every((n) => Number.isSafeInteger(n) && n >= 0))
    return 'is a row of the change log whose "log" is not [version, seq]';
  const [version, seq] = log as [number, number];
  if (version <= kept.from || version > kept.to)
    return `is a row of the change log at version ${version}, outside the versions the header says the history keeps (after ${kept.from}, up to ${kept.to})`;
  const place = keys.logRow(version, seq).slice(keys.logPrefix.length);
  if (previous !== undefined && place <= previous)
    return 'is a row of the change log that is not after the previous one: a dump lists them in log order, each once';
  if (typeof row.at !== 'number' || typeof row.by !== 'object' || row.by === null || typeof (row.by as { kind?: unknown }).kind !== 'string')
    return 'is a row of the change log without its time ("at") and origin ("by")';
  const fields = 'topic' in row ? ['at', 'by', 'topic', 'payload', 'erased'] : ['at', 'by', 'key', 'before', 'after', 'erased'];
  const extra = Object.keys(row).find((field) => !fields.includes(field));
  if (extra !== undefined) return `is a row of the change log with a field ${JSON.stringify(extra)} it does not have`;
  const name = 'topic' in row ? row.topic : row.key;
  if (typeof name !== 'string' || hasLoneSurrogate(name) || !fitsUTF8(name, limits.keyBytes))
    return `is a row of the change log whose ${'topic' in row ? 'topic' : 'key'} is not a string within limits.keyBytes`;
  if (row.erased !== undefined && !['before', 'after', 'both', 'payload'].includes(row.erased as string))
    return 'is a row of the change log whose "erased" is not "before", "after", "both" or "payload"';
  try {
    for (const field of ['before', 'after', 'payload', 'by']) if (field in row) row[field] = frozenJSONCopy(row[field] as JSONValue, limits.valueBytes);
  } catch (error) {
    return `is a row of the change log with a value that cannot be stored: ${(error as Error).message}`;
  }
  return [place, recordOf<LogRow>(row as StoredValue)];
}

/** Writes checked log rows into import `id`'s history area. */
export async function stageLog(tx: StorageTransaction, keys: SpaceKeys, id: string, rows: readonly DumpedLogRow[]): Promise<void> {
  const area = historyArea(keys, id);
  for (const [place, row] of rows) await tx.put(area + place, toStored(row));
}

/** Moves up to `limit` staged rows of import `id`'s history into the space's log; resolves with their bytes in the history (quota.ts), and whether none is left. */
export async function moveLog(tx: StorageTransaction, keys: SpaceKeys, id: string, limit: number): Promise<{ bytes: number; done: boolean }> {
  const area = historyArea(keys, id);
  const rows = await tx.scan({ prefix: area, limit });
  let bytes = 0;
  for (const [row, value] of rows) {
    await tx.put(keys.logPrefix + row.slice(area.length), value);
    await tx.del(row);
    bytes += storedLogRowBytes(recordOf<LogRow>(value));
  }
  return { bytes, done: rows.length < limit };
}

/**
 * Once the dump's entries are applied (leaving the log): the log is whole from the history's
 * first kept version, and the space at least at its last (the entries are the space as of it).
 * False when a write that kept the log came meanwhile: its rows tell the live data's story, not
 * the dump's, so the history is not marked whole.
 */
export async function markHistory(tx: StorageTransaction, keys: SpaceKeys, kept: { from: number; to: number }, bytes: number): Promise<boolean> {
  const meta = (await tx.get(keys.meta)) as Meta | undefined;
  if (meta === undefined || meta.feedAt !== undefined) return false;
  const version = Math.max(meta.version, kept.to);
  await tx.put(keys.meta, {
    ...meta,
    version,
    feedFrom: kept.from,
    feedAt: version,
    ...(meta.history !== undefined && { history: meta.history + bytes }),
  } satisfies Meta);
  return true;
}
