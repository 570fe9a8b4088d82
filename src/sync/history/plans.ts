import type { JSONValue } from '../../protocol/json.js';
import { compareUTF8 } from '../../base/utf8.js';
import type { StorageTransaction } from '../../storage/types.js';
import { getMany } from '../../storage/write-buffer.js';
import type { ChangeOrigin, Entry, Meta, RevertCause } from '../version/records.js';
import type { SpaceKeys } from '../version/keys.js';
import { scanPages } from '../version/patch.js';
import { asOf } from './as-of.js';
import { changesBetween, HistoryGoneError, keptVersions, type LoggedChange } from './log-reads.js';
import { recordOf } from '../../storage/records.js';

/**
 * What a restore or a revert would change, worked out from history in the transaction that then
 * applies it (or, for a dry run, in a read-only one): each key's value now and the value it gets.
 */

/** A key a restore or revert sets (`after`) or deletes (no `after`); `before` is its value now, if any. */
export interface PlannedChange {
  key: string;
  before?: JSONValue;
  after?: JSONValue;
}

/** The live entries of a space under `prefix`. */
export async function liveEntries(tx: StorageTransaction, keys: SpaceKeys, prefix: string): Promise<Map<string, JSONValue>> {
  const live = new Map<string, JSONValue>();
  for await (const page of scanPages(tx, { prefix: keys.entryPrefix + prefix })) {
    for (const [row, value] of page) {
      const entry = recordOf<Entry>(value);
      if (!entry.del) live.set(row.slice(keys.entryPrefix.length), entry.val);
    }
  }
  return live;
}

/** What restoring the keys under `prefix` to `version` changes: each key whose value then differs from now's, in key order. */
export async function restorePlan(
  tx: StorageTransaction,
  keys: SpaceKeys,
  space: string,
  meta: Meta | undefined,
  version: number,
  prefix: string,
): Promise<PlannedChange[]> {
  const then = await asOf(tx, keys, space, meta, version, prefix);
  const now = await liveEntries(tx, keys, prefix);
  const changes: PlannedChange[] = [];
  for (const key of [...new Set([...then.keys(), ...now.keys()])].sort(compareUTF8)) {
    const before = now.get(key);
    const after = then.get(key);
    if (sameValue(before, after)) continue;
    changes.push({ key, ...(before !== undefined && { before }), ...(after !== undefined && { after }) });
  }
  return changes;
}

/** How a revert treats a key a change of another cause wrote after the first it reverts. */
export type ConflictPolicy = 'skip' | 'overwrite' | 'stop';

/** A key a revert cannot undo blindly: a later change of another cause wrote it, or the value to go back to was erased. */
export interface RevertConflict {
  key: string;
  /** The version of the first change of the cause to the key: the revert would give it its value before that. */
  version: number;
  /** The value it would go back to (absent: deleted). */
  revertTo?: JSONValue;
  /** Its value now (absent: none). */
  current?: JSONValue;
  /** The later changes of other causes, each its version and what made it. */
  later: Array<{ version: number; by: ChangeOrigin }>;
  /** The value it would go back to was erased: it is never written, whatever the policy. */
  erased?: true;
}

/** What a revert would do: its changes (by the policy) and every conflict it met. */
export interface RevertPlan {
  changes: PlannedChange[];
  conflicts: RevertConflict[];
  /** The policy was `stop` and there were conflicts: nothing is changed. */
  stopped: boolean;
}

/** Whether `change` is one of `cause`'s. */
export function madeBy(cause: RevertCause, change: Pick<LoggedChange, 'version' | 'at' | 'by'>): boolean {
  const { by } = change;
  if (cause.versions !== undefined && (change.version < cause.versions[0] || change.version > cause.versions[1])) return false;
  if (cause.since !== undefined && change.at < cause.since) return false;
  if (cause.mutation !== undefined && !(by.kind === 'mutation' && by.clientID === cause.mutation.clientID && by.mutationID === cause.mutation.mutationID))
    return false;
  if (cause.clientGroupID !== undefined && !(by.kind === 'mutation' && by.clientGroupID === cause.clientGroupID)) return false;
  if (cause.userID !== undefined && !('userID' in by && by.userID === cause.userID)) return false;
  if (cause.mutator !== undefined && !((by.kind === 'mutation' || (by.kind === 'backend' && by.call === 'mutate')) && by.name === cause.mutator)) return false;
  return true;
}

/**
 * What reverting `cause`'s changes does: each key it changed goes back to its value before the
 * cause's first change to it, unless a change of another cause came later (a conflict, treated
 * by `policy`) or the value was erased (a conflict, never written). Keys already at that value
 * need nothing.
 */
export async function revertPlan(
  tx: StorageTransaction,
  keys: SpaceKeys,
  space: string,
  meta: Meta | undefined,
  cause: RevertCause,
  policy: ConflictPolicy,
): Promise<RevertPlan> {
  const kept = keptVersions(meta);
  if (kept === undefined)
    throw new HistoryGoneError(`Space ${JSON.stringify(space)} keeps no history now: its change log is not whole, so no cause's changes can be found`);
  const from = cause.versions === undefined ? kept.from : Math.max(kept.from, cause.versions[0] - 1);
  // A window that starts before what the log holds would miss changes: refused, never narrowed.
  if (cause.versions !== undefined && cause.versions[0] - 1 < kept.from && kept.from > 0) {
    throw new HistoryGoneError(
      `Versions ${cause.versions[0]} to ${cause.versions[1]} of space ${JSON.stringify(space)} are not all kept: its history holds the changes after version ${kept.from} only`,
    );
  }
  const touched = new Map<string, { first: LoggedChange; later: LoggedChange[] }>();
  for await (const page of changesBetween(tx, keys, from, kept.to)) {
    for (const change of page) {
      const seen = touched.get(change.key);
      if (madeBy(cause, change)) {
        if (seen === undefined) touched.set(change.key, { first: change, later: [] });
      } else if (seen !== undefined) seen.later.push(change);
    }
  }
  const ordered = [...touched.keys()].sort(compareUTF8);
  const now = await readLive(tx, keys, ordered);
  const plan: RevertPlan = { changes: [], conflicts: [], stopped: false };
  for (const [i, key] of ordered.entries()) {
    const { first, later } = touched.get(key)!;
    const current = now[i];
    const erased = first.erased === 'before' || first.erased === 'both';
    const revertTo = first.before;
    if (!erased && later.length === 0) {
      if (!sameValue(current, revertTo)) plan.changes.push(planned(key, current, revertTo));
      continue;
    }
    if (!erased && sameValue(current, revertTo)) continue;
    plan.conflicts.push({
      key,
      version: first.version,
      ...(revertTo !== undefined && !erased && { revertTo }),
      ...(current !== undefined && { current }),
      later: later.map(({ version, by }) => ({ version, by })),
      ...(erased && { erased: true as const }),
    });
    if (!erased && policy === 'overwrite') plan.changes.push(planned(key, current, revertTo));
  }
  if (policy === 'stop' && plan.conflicts.length > 0) return { changes: [], conflicts: plan.conflicts, stopped: true };
  return plan;
}

function planned(key: string, before: JSONValue | undefined, after: JSONValue | undefined): PlannedChange {
  return { key, ...(before !== undefined && { before }), ...(after !== undefined && { after }) };
}

/** The live values of `keys` (undefined: none), in pages of reads. */
async function readLive(tx: StorageTransaction, keys: SpaceKeys, userKeys: readonly string[]): Promise<Array<JSONValue | undefined>> {
  const values: Array<JSONValue | undefined> = [];
  for (let i = 0; i < userKeys.length; i += 1_000) {
    const rows = userKeys.slice(i, i + 1_000).map((key) => keys.entry(key));
    const entries = (await getMany(tx, rows)) as Array<Entry | undefined>;
    for (const entry of entries) values.push(entry === undefined || entry.del ? undefined : entry.val);
  }
  return values;
}

/** Whether two JSON values (undefined: absent) are equal, whatever their objects' key order. */
export function sameValue(a: JSONValue | undefined, b: JSONValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined || a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as readonly JSONValue[];
    return a.length === other.length && a.every((value, i) => sameValue(value, other[i]));
  }
  const x = a as Readonly<Record<string, JSONValue>>;
  const y = b as Readonly<Record<string, JSONValue>>;
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((key) => Object.hasOwn(y, key) && sameValue(x[key], y[key]));
}
