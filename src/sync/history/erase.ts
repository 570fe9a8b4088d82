import type { JSONValue } from '../../protocol/json.js';
import type { StorageTransaction } from '../../storage/types.js';
import type { Erased, LogRow } from '../feed/change-log.js';
import type { ChangeOrigin, Entry } from '../version/records.js';
import type { KeptRejection } from '../schema/rejected.js';
import { storedLogRowBytes } from './history-bytes.js';
import type { SpaceKeys } from '../version/keys.js';
import { scanPages } from '../version/patch.js';
import { checkpointRecords } from './checkpoint-records.js';
import { checkpointRowBytes } from './checkpoints.js';
import { sameValue } from './plans.js';
import { recordOf, toStored } from '../../storage/records.js';

/**
 * Erasure (`eraseData`): a key's values, a prefix's, or everything a user wrote, taken out of the
 * space's history as well as its live data. Each change of the log keeps its place, its key and
 * what made it, its values gone (`erased`); checkpoint rows holding such values go; a user's
 * rejected mutations lose their args. What the live data loses is deleted by the erasure's own
 * commit, whose log rows are stripped the same way. Reaches what the store holds and what
 * history says a user wrote: not a webhook receiver's copies, backups, or a write by the user
 * older than the kept log.
 */

/** What an erasure takes out: a key's values, those of every key under a prefix, or what a user wrote. */
export type EraseTarget = { key: string } | { prefix: string } | { userID: string };

/** Whether `key` is one of the target's keys (a user's target names none). */
function keyMatches(target: EraseTarget, key: string): boolean {
  return 'key' in target ? key === target.key : 'prefix' in target ? key.startsWith(target.prefix) : false;
}

function byUser(target: EraseTarget, by: ChangeOrigin): boolean {
  return 'userID' in target && 'userID' in by && by.userID === target.userID;
}

/**
 * Which values of the log are a user's, read in log order: those their changes set, and those a
 * restore or revert wrote back that equal one of theirs at the same key (a copy of their value is
 * still theirs). Knows only what the kept log says.
 */
class Authorship {
  readonly #target: EraseTarget;
  /** Each key's values the user set, as far as the log goes. */
  readonly #values = new Map<string, JSONValue[]>();
  /** Whether each key's value at this point of the log is the user's. */
  readonly current = new Map<string, boolean>();

  constructor(target: EraseTarget) {
    this.#target = target;
  }

  /** Reads the next row of the log: whether its value after is the user's. */
  next(row: Extract<LogRow, { key: string }>): boolean {
    const after = row.after;
    let mine = false;
    if (byUser(this.#target, row.by)) {
      mine = after !== undefined || row.erased === 'after' || row.erased === 'both';
      if (after !== undefined) this.#values.set(row.key, [...(this.#values.get(row.key) ?? []), after]);
    } else if ((row.by.kind === 'restore' || row.by.kind === 'revert') && after !== undefined) {
      mine = this.#values.get(row.key)?.some((value) => sameValue(value, after)) === true;
    }
    this.current.set(row.key, mine);
    return mine;
  }
}

/**
 * The live keys an erasure deletes: every live key of a key or prefix target; of a user's, each
 * live key whose latest change in the kept log is a set by the user.
 */
export async function keysToErase(tx: StorageTransaction, keys: SpaceKeys, target: EraseTarget): Promise<string[]> {
  if ('key' in target) {
    const entry = (await tx.get(keys.entry(target.key))) as Entry | undefined;
    return entry === undefined || entry.del ? [] : [target.key];
  }
  if ('prefix' in target) {
    const found: string[] = [];
    for await (const page of scanPages(tx, { prefix: keys.entryPrefix + target.prefix }))
      for (const [row, value] of page) if (!recordOf<Entry>(value).del) found.push(row.slice(keys.entryPrefix.length));
    return found;
  }
  const authorship = new Authorship(target);
  for await (const page of scanPages(tx, { prefix: keys.logPrefix })) {
    for (const [, value] of page) {
      const row = recordOf<LogRow>(value);
      if ('key' in row) authorship.next(row);
    }
  }
  return [...authorship.current].filter(([, mine]) => mine).map(([key]) => key);
}

/** What an erasure's pass over history took out. */
export interface Stripped {
  /** Log rows that lost values. */
  rows: number;
  /** Checkpoint rows removed. */
  checkpointRows: number;
  /** Rejected mutations that lost their args. */
  rejected: number;
  /** The history bytes they no longer take (quota.ts). */
  freed: number;
}

/**
 * Takes the target's values out of the space's log, checkpoints and rejected mutations, in `tx`
 * (after the erasure's own deletes, whose rows it strips too).
 */
export async function stripHistory(tx: StorageTransaction, keys: SpaceKeys, target: EraseTarget): Promise<Stripped> {
  const done: Stripped = { rows: 0, checkpointRows: 0, rejected: 0, freed: 0 };
  const checkpoints = (await checkpointRecords(tx, keys)).map(([version]) => version);
  // For a user: whose each key's value is at this point of the log, and, at each checkpoint, the keys whose value then was theirs.
  const authorship = new Authorship(target);
  const theirs = authorship.current;
  const atCheckpoint = new Map<number, string[]>();
  let next = 0;
  const passCheckpoints = (version: number) => {
    for (; next < checkpoints.length && checkpoints[next]! < version; next++)
      atCheckpoint.set(
        checkpoints[next]!,
        [...theirs].filter(([, mine]) => mine).map(([key]) => key),
      );
  };
  for await (const page of scanPages(tx, { prefix: keys.logPrefix })) {
    for (const [rowKey, value] of page) {
      const row = recordOf<LogRow>(value);
      passCheckpoints(keys.logPlace(rowKey).version);
      const stripped = strip(target, row, authorship);
      if (stripped === undefined) continue;
      await tx.put(rowKey, toStored(stripped));
      done.rows++;
      done.freed += storedLogRowBytes(row) - storedLogRowBytes(stripped);
    }
  }
  passCheckpoints(Infinity);
  for (const version of checkpoints) {
    const prefix = keys.checkpoint(version);
    const rows =
      'userID' in target
        ? (atCheckpoint.get(version) ?? []).map((key) => prefix + key)
        : await rowsUnder(tx, prefix + ('key' in target ? target.key : target.prefix), 'key' in target);
    for (const row of rows) {
      const value = (await tx.get(row)) as JSONValue | undefined;
      if (value === undefined) continue;
      await tx.del(row);
      done.checkpointRows++;
      done.freed += checkpointRowBytes(row.slice(prefix.length), value);
    }
  }
  if ('userID' in target) {
    for (const [row, value] of await tx.scan({ prefix: keys.rejectedPrefix })) {
      const kept = recordOf<KeptRejection>(value);
      if (kept.userID !== target.userID || (kept.args === undefined && kept.argsCut === undefined)) continue;
      const { args: _, argsCut: __, ...rest } = kept;
      await tx.put(row, toStored({ ...rest, argsErased: true }));
      done.rejected++;
    }
  }
  return done;
}

/** The row with the target's values taken out (undefined: it holds none); reads it into `authorship` (a user's values). */
function strip(target: EraseTarget, row: LogRow, authorship: Authorship): LogRow | undefined {
  if (!('key' in row)) {
    if (!byUser(target, row.by) || row.erased !== undefined) return undefined;
    return { ...row, payload: null, erased: 'payload' };
  }
  let before = row.before !== undefined;
  let after = row.after !== undefined;
  if ('userID' in target) {
    // The value before this change is the user's when the change before made it theirs; the value after, when this one does.
    before &&= authorship.current.get(row.key) === true;
    after &&= authorship.next(row);
  } else if (!keyMatches(target, row.key)) return undefined;
  if (!before && !after) return undefined;
  const { before: was, after: is, erased, ...rest } = row;
  const gone: Erased =
    (before || erased === 'before' || erased === 'both') && (after || erased === 'after' || erased === 'both')
      ? 'both'
      : before || erased === 'before'
        ? 'before'
        : 'after';
  return { ...rest, ...(!before && was !== undefined && { before: was }), ...(!after && is !== undefined && { after: is }), erased: gone };
}

/** The row at `prefix` alone (`exact`), or every row under it. */
async function rowsUnder(tx: StorageTransaction, prefix: string, exact: boolean): Promise<string[]> {
  if (exact) return [prefix];
  const rows: string[] = [];
  for await (const page of scanPages(tx, { prefix })) for (const [row] of page) rows.push(row);
  return rows;
}
