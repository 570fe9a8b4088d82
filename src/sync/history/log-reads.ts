import type { JSONValue } from '../../protocol/json.js';
import type { StorageTransaction } from '../../storage/types.js';
import type { Erased, LogRow } from '../feed/change-log.js';
import type { ChangeOrigin, Meta } from '../version/records.js';
import { feedFrom } from '../feed/change-log.js';
import { encodeVersion, type SpaceKeys } from '../version/keys.js';
import { scanPages } from '../version/patch.js';
import { recordOf } from '../../storage/records.js';

/**
 * Reading the change log (change-log.ts) as history: the versions it covers, and its rows
 * between two versions, in commit order. Every history tool (reads as of a version, a key's
 * history, restore, revert, erasure) reads the log through here.
 */

/** A change of a key as history tells it: its version and place, and its values unless erased. */
export interface LoggedChange {
  version: number;
  seq: number;
  at: number;
  key: string;
  before?: JSONValue;
  after?: JSONValue;
  by: ChangeOrigin;
  /** Its values were erased (`eraseData`): the change keeps its place, without them. */
  erased?: Erased;
}

/**
 * The versions a space's history covers: every version from `from` to `to` (the space's
 * version) can be read as it was. Undefined when the log is not whole now: never kept, or
 * broken off by a write that left it (the feed off), until the next write that keeps it.
 */
export function keptVersions(meta: Meta | undefined): { from: number; to: number } | undefined {
  if (meta === undefined) return { from: 0, to: 0 };
  const from = feedFrom(meta);
  return from === undefined ? undefined : { from, to: meta.version };
}

/** A version outside what a space's history keeps, or a space whose history is not kept. */
export class HistoryGoneError extends RangeError {
  override name = 'HistoryGoneError';
}

/** The kept versions of `space`, or a {@link HistoryGoneError} saying why `version` is not among them. */
export function checkKept(space: string, meta: Meta | undefined, version: number): { from: number; to: number } {
  if (!Number.isSafeInteger(version) || version < 0) throw new TypeError(`A version is a whole number of at least 0, got ${JSON.stringify(version)}`);
  const kept = keptVersions(meta);
  if (kept === undefined)
    throw new HistoryGoneError(
      `Space ${JSON.stringify(space)} keeps no history now: its change log is not whole (the change feed was off for a write since it was last kept; it starts again with the next write of a context with \`changes\`)`,
    );
  if (version < kept.from || version > kept.to) {
    throw new HistoryGoneError(
      `Version ${version} of space ${JSON.stringify(space)} is not kept: its history holds versions ${kept.from} to ${kept.to} (older ones went past retention.historyMs, or were before the change feed was on)`,
    );
  }
  return kept;
}

/** The changes of keys (events left out) made after version `after`, up to version `upTo`, a page at a time, in commit order. */
export async function* changesBetween(tx: StorageTransaction, keys: SpaceKeys, after: number, upTo: number): AsyncGenerator<LoggedChange[]> {
  if (upTo <= after) return;
  const end = keys.logPrefix + encodeVersion(upTo + 1);
  for await (const page of scanPages(tx, { prefix: keys.logPrefix, start: { key: keys.logPrefix + encodeVersion(after + 1), exclusive: false } })) {
    const changes: LoggedChange[] = [];
    for (const [row, value] of page) {
      if (row >= end) {
        if (changes.length > 0) yield changes;
        return;
      }
      const change = loggedChange(keys, row, recordOf<LogRow>(value));
      if (change !== undefined) changes.push(change);
    }
    if (changes.length > 0) yield changes;
  }
}

/** A stored log row as a {@link LoggedChange}; undefined for an event. */
export function loggedChange(keys: SpaceKeys, row: string, value: LogRow): LoggedChange | undefined {
  if (!('key' in value)) return undefined;
  const { version, seq } = keys.logPlace(row);
  const change: LoggedChange = { version, seq, at: value.at, key: value.key, by: value.by };
  if (value.before !== undefined) change.before = value.before;
  if (value.after !== undefined) change.after = value.after;
  if (value.erased !== undefined) change.erased = value.erased;
  return change;
}
