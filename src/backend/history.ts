import type { JSONValue } from '../protocol/json.js';
import type { SyncContext } from '../context/context.js';
import { afterChange } from '../context/after-change.js';
import { checkContext } from '../context/state.js';
import { runBatched } from '../sync/batching/group-commit.js';
import type { ChangeOrigin, Meta, RevertCause } from '../sync/version/records.js';
import { type AsOf, type AtOptions, type HistoryPage, readAsOf, type ReadHistoryOptions, readHistoryPage } from '../sync/history/history-reads.js';
import { type EraseTarget, keysToErase, type Stripped, stripHistory } from '../sync/history/erase.js';
import { type ConflictPolicy, type PlannedChange, restorePlan, revertPlan, type RevertConflict } from '../sync/history/plans.js';
import { DELETED } from '../sync/transactions/read-transaction.js';
import { overQuota, quotaOf } from '../sync/transactions/quota.js';
import { globalVersion } from '../sync/session/global-version.js';
import { SpaceKeys } from '../sync/version/keys.js';
import type { StorageTransaction } from '../storage/types.js';
import { recordHistoryOperation } from '../telemetry/telemetry.js';
import { checkSpace } from './transact.js';

export { HistoryGoneError } from '../sync/history/log-reads.js';
export type { AtOptions, AsOf, ReadHistoryOptions, HistoryPage } from '../sync/history/history-reads.js';
export type { PlannedChange, RevertConflict, ConflictPolicy, EraseTarget, RevertCause };

/**
 * A space's history, read and acted on from the app's backend: the space as of any kept version,
 * a key's history, a restore to an older version, a revert of what one cause made, and erasure.
 * Restores, reverts and erasures are forward operations: each is one commit, a new version that
 * clients pull as an ordinary patch and the feed carries as changes made by it. History is the
 * change log, so it needs the context option `changes` on; it keeps versions for
 * `retention.historyMs`.
 */

/**
 * `space` as it was at `version`: its entries then (under `prefix`), in key order, read in one
 * snapshot. Costs about a full read of the space plus the changes between the version and the
 * nearest checkpoint (the live data is one). Rejects with a `HistoryGoneError` when the space's
 * history does not keep that version (older than `retention.historyMs`, or from before the
 * change feed was on).
 *
 * @example
 * const { entries } = await at(ctx, 'acme', 1_204);
 */
export async function at(ctx: SyncContext, space: string, version: number, options: AtOptions = {}): Promise<AsOf> {
  checkContext(ctx);
  checkSpace(space);
  return readAsOf(ctx.storage, space, version, options);
}

/**
 * The history of a key, of the keys under a prefix, or of the whole space: every value each had,
 * when, and what made it, oldest first, a page at a time. Reads the kept log from `after` on
 * (filtering by key costs a read of the log, not of the space). Rejects with a
 * `HistoryGoneError` when the space keeps no history now, or `after` is not a version it keeps
 * (older, or past the space's version).
 *
 * @example
 * const { changes } = await readHistory(ctx, 'acme', { key: 'todo/1' });
 */
export async function readHistory(ctx: SyncContext, space: string, options: ReadHistoryOptions = {}): Promise<HistoryPage> {
  checkContext(ctx);
  checkSpace(space);
  return readHistoryPage(ctx.storage, space, options);
}

/** Options for {@link restoreSpace}. */
export interface RestoreOptions {
  /** The version to restore to. */
  to: number;
  /** Restore only the keys that start with this; the rest stay as they are. Default: every key. */
  prefix?: string;
  /** Only work out what the restore would change: nothing is written. */
  dryRun?: boolean;
}

/** What a restore changed, or would change (a dry run). */
export interface RestoreResult {
  to: number;
  prefix: string;
  dryRun: boolean;
  /** The version the restore made; undefined for a dry run, or when nothing needed to change. */
  version: number | undefined;
  /** Each key set or deleted, with its value before (now) and after (then), in key order. */
  changes: PlannedChange[];
}

/**
 * Makes `space` (or its keys under `prefix`) what it was at version `to`, in one commit: a new
 * version, which clients pull as a normal patch (nothing resets, no cookie goes back) and the
 * feed carries as changes made by `{kind: 'restore'}`. Keys that were absent then are deleted;
 * keys whose value is the same are not written. The space's quota holds (a restore that would
 * pass it rejects with a `QuotaExceededError`, writing nothing). With `dryRun`, says what it
 * would change and writes nothing. Rejects with a `HistoryGoneError` when `to` is not kept.
 *
 * @example
 * const { changes } = await restoreSpace(ctx, 'acme', { to: 1_204, dryRun: true });
 */
export async function restoreSpace(ctx: SyncContext, space: string, options: RestoreOptions): Promise<RestoreResult> {
  checkContext(ctx);
  checkSpace(space);
  const prefix = options.prefix ?? '';
  const keys = new SpaceKeys(space);
  const plan = (tx: StorageTransaction, meta: Meta | undefined) => restorePlan(tx, keys, space, meta, options.to, prefix);
  const { changes, version } = await planned(
    ctx,
    space,
    options.dryRun === true,
    plan,
    (changes) => ({ changes, origin: { kind: 'restore', to: options.to, prefix } }),
    'restore',
  );
  recordHistoryOperation('restore', options.dryRun === true, changes.length);
  return { to: options.to, prefix, dryRun: options.dryRun === true, version, changes };
}

/** Options for {@link revertChanges}. */
export interface RevertOptions {
  /** What to do with a key a change of another cause wrote after the cause's: leave it (`skip`), write it back anyway (`overwrite`), or revert nothing (`stop`). Default: `stop`. */
  onConflict?: ConflictPolicy;
  /** Only work out what the revert would change and every conflict: nothing is written. */
  dryRun?: boolean;
}

/** What a revert changed (or would), and every conflict it met. */
export interface RevertResult {
  dryRun: boolean;
  /** The version the revert made; undefined for a dry run, a stop, or when nothing needed to change. */
  version: number | undefined;
  changes: PlannedChange[];
  conflicts: RevertConflict[];
  /** The policy was `stop` and there were conflicts: nothing was changed. */
  stopped: boolean;
}

/**
 * Undoes exactly the changes `cause` made (one mutation, a client group's, a user's, a mutator's,
 * a window of versions, or all of these at once), leaving everything else: each key it changed
 * goes back to its value before the cause's first change to it, in one commit (a new version,
 * made by `{kind: 'revert'}`). Where a change of another cause wrote the key later, that is a
 * conflict, reported and treated by `onConflict`. With `dryRun`, lists what it would change and
 * every conflict, and writes nothing. Reaches the changes history keeps; rejects with a
 * `HistoryGoneError` when the space keeps none now or `versions` starts before what it keeps.
 *
 * @example
 * const result = await revertChanges(ctx, 'acme', { userID: 'mallory', since: Date.now() - 60_000 }, { onConflict: 'skip' });
 */
export async function revertChanges(ctx: SyncContext, space: string, cause: RevertCause, options: RevertOptions = {}): Promise<RevertResult> {
  checkContext(ctx);
  checkSpace(space);
  checkCause(cause);
  const policy = options.onConflict ?? 'stop';
  if (!['skip', 'overwrite', 'stop'].includes(policy)) throw new TypeError(`onConflict must be "skip", "overwrite" or "stop", got ${JSON.stringify(policy)}`);
  const keys = new SpaceKeys(space);
  let conflicts: RevertConflict[] = [];
  let stopped = false;
  const plan = async (tx: StorageTransaction, meta: Meta | undefined) => {
    const made = await revertPlan(tx, keys, space, meta, cause, policy);
    conflicts = made.conflicts;
    stopped = made.stopped;
    return made.changes;
  };
  const { changes, version } = await planned(
    ctx,
    space,
    options.dryRun === true,
    plan,
    (changes) => ({ changes, origin: { kind: 'revert', cause } }),
    'revert',
  );
  recordHistoryOperation('revert', options.dryRun === true, changes.length);
  return { dryRun: options.dryRun === true, version, changes, conflicts, stopped };
}

/** What an erasure took out. */
export interface EraseResult {
  /** The version the erasure made (its deletes and its `viewsync.erased` event); undefined when the change log is off and nothing was live. */
  version: number | undefined;
  /** The live keys it deleted. */
  deleted: string[];
  /** Change log rows that lost values. */
  historyRows: number;
  /** Checkpoint rows removed. */
  checkpointRows: number;
  /** Rejected mutations that lost their args (a user's erasure). */
  rejected: number;
}

/** The feed event an erasure puts in the change log, its payload the erasure's target: receivers that keep copies erase them too. */
export const ERASED_TOPIC = 'viewsync.erased';

/**
 * Erases a key's values, a prefix's, or everything a user wrote, from the live data (deleted, in
 * one commit), from history (each change keeps its place, its key and what made it, its values
 * gone; checkpoints lose them) and from the feed, which then carries a `viewsync.erased` event
 * whose payload is the target, so that receivers erase their copies. A user's erasure reaches
 * what the kept history says they wrote: the live keys whose last change was theirs, their
 * changes' values and the values that followed from them, their events' payloads and their
 * rejected mutations' args. It cannot reach a webhook receiver's copies, backups of the store,
 * or writes older than the kept log.
 *
 * @example
 * await eraseData(ctx, 'acme', { userID: 'departed-user' });
 */
export async function eraseData(ctx: SyncContext, space: string, target: EraseTarget): Promise<EraseResult> {
  checkContext(ctx);
  checkSpace(space);
  checkTarget(target);
  const keys = new SpaceKeys(space);
  const clock = { now: ctx.clock(), touchEveryMs: ctx.touchEveryMs };
  type Done = { deleted: string[]; stripped: Stripped; version: number | undefined; touched: readonly string[] | undefined };
  const done = await runBatched<Done>(ctx.storage, space, async (tx) => {
    const session = await globalVersion.open(tx, space, clock, undefined, ctx.session);
    const deleted = await keysToErase(tx, keys, target);
    session.recordAs({ kind: 'erase' });
    for (const key of deleted) await session.del(key);
    if (session.logging) await session.emit(ERASED_TOPIC, target as JSONValue);
    const stripped = await stripHistory(tx, keys, target);
    const changed = await session.commit();
    const meta = (await tx.get(keys.meta)) as Meta | undefined;
    // The history the stripped values took is free (quota.ts): the commit counted the rows as written.
    const history = meta?.history !== undefined && stripped.freed !== 0 ? { history: Math.max(0, meta.history - stripped.freed) } : {};
    // Counted, so that a move's catch-up copies the rewritten rows of the log too (src/route/copy.ts).
    const erasures = stripped.rows > 0 ? { erasures: (meta?.erasures ?? 0) + 1 } : {};
    if (meta !== undefined && ('history' in history || 'erasures' in erasures)) await tx.put(keys.meta, { ...meta, ...history, ...erasures } satisfies Meta);
    return { result: { deleted, stripped, version: changed ? meta?.version : undefined, touched: session.touched() }, keep: true };
  });
  if (done.version !== undefined) afterChange(ctx, space, { operation: 'erase', space }, done.touched && { keys: done.touched, groups: [] });
  recordHistoryOperation('erase', false, done.deleted.length);
  return {
    version: done.version,
    deleted: done.deleted,
    historyRows: done.stripped.rows,
    checkpointRows: done.stripped.checkpointRows,
    rejected: done.stripped.rejected,
  };
}

/**
 * Works out a plan in the space's write transaction and applies it there as one commit made by
 * the origin `apply` gives, or, for a dry run, works it out in a read-only one.
 */
async function planned(
  ctx: SyncContext,
  space: string,
  dryRun: boolean,
  plan: (tx: StorageTransaction, meta: Meta | undefined) => Promise<PlannedChange[]>,
  apply: (changes: PlannedChange[]) => { changes: PlannedChange[]; origin: ChangeOrigin },
  operation: string,
): Promise<{ changes: PlannedChange[]; version: number | undefined }> {
  const keys = new SpaceKeys(space);
  if (dryRun)
    return {
      changes: await ctx.storage.transaction(async (tx) => plan(tx, (await tx.get(keys.meta)) as Meta | undefined), { readOnly: true, space }),
      version: undefined,
    };
  const clock = { now: ctx.clock(), touchEveryMs: ctx.touchEveryMs };
  const quota = quotaOf(ctx.quotas, space);
  type Done = { ok: true; changes: PlannedChange[]; version: number | undefined; touched: readonly string[] | undefined } | { ok: false; error: unknown };
  const done = await runBatched<Done>(ctx.storage, space, async (tx) => {
    const session = await globalVersion.open(tx, space, clock, undefined, ctx.session);
    const { changes, origin } = apply(await plan(tx, (await tx.get(keys.meta)) as Meta | undefined));
    if (quota !== undefined) {
      const writes = new Map(changes.map(({ key, after }) => [key, after === undefined ? DELETED : after] as const));
      const refused = await overQuota(session, space, quota, writes);
      if (refused !== undefined) return { result: { ok: false, error: refused }, keep: false };
    }
    session.recordAs(origin);
    for (const { key, after } of changes) await (after === undefined ? session.del(key) : session.put(key, after));
    const changed = await session.commit();
    const version = changed ? ((await tx.get(keys.meta)) as Meta).version : undefined;
    return { result: { ok: true, changes, version, touched: session.touched() }, keep: true };
  });
  if (!done.ok) throw done.error;
  if (done.version !== undefined) afterChange(ctx, space, { operation, space }, done.touched && { keys: done.touched, groups: [] });
  return { changes: done.changes, version: done.version };
}

/** A cause names at least one thing, each of the right type. */
function checkCause(cause: RevertCause): void {
  if (typeof cause !== 'object' || cause === null)
    throw new TypeError(`A revert's cause is an object such as { userID } or { versions: [from, to] }, got ${JSON.stringify(cause)}`);
  const known = ['mutation', 'clientGroupID', 'userID', 'mutator', 'versions', 'since'];
  const unknown = Object.keys(cause).filter((field) => !known.includes(field));
  if (unknown.length > 0) throw new TypeError(`A revert's cause has no field ${JSON.stringify(unknown[0])}: it names ${known.join(', ')}`);
  if (Object.values(cause).every((value) => value === undefined))
    throw new TypeError('A revert needs a cause: a mutation, clientGroupID, userID, mutator, versions or since (reverting everything is a restore)');
  for (const field of ['clientGroupID', 'userID', 'mutator'] as const)
    if (cause[field] !== undefined && typeof cause[field] !== 'string')
      throw new TypeError(`cause.${field} must be a string, got ${JSON.stringify(cause[field])}`);
  const { mutation, versions, since } = cause;
  if (
    mutation !== undefined &&
    (typeof mutation !== 'object' || mutation === null || typeof mutation.clientID !== 'string' || !Number.isSafeInteger(mutation.mutationID))
  )
    throw new TypeError(`cause.mutation must be { clientID, mutationID }, got ${JSON.stringify(mutation)}`);
  if (
    versions !== undefined &&
    !(Array.isArray(versions) && versions.length === 2 && versions.every((v) => Number.isSafeInteger(v) && v >= 0) && versions[0] <= versions[1])
  )
    throw new TypeError(`cause.versions must be [from, to], whole numbers with from <= to, got ${JSON.stringify(versions)}`);
  if (since !== undefined && !Number.isFinite(since))
    throw new TypeError(`cause.since must be a time in milliseconds since the epoch, got ${JSON.stringify(since)}`);
}

/** A target is exactly one of a key, a prefix or a user. */
function checkTarget(target: EraseTarget): void {
  const fields = typeof target === 'object' && target !== null ? Object.keys(target) : [];
  const [field] = fields;
  if (fields.length !== 1 || !['key', 'prefix', 'userID'].includes(field!) || typeof (target as Record<string, unknown>)[field!] !== 'string') {
    throw new TypeError(`An erasure's target is one of { key }, { prefix } or { userID }, a string, got ${JSON.stringify(target)}`);
  }
  if ('prefix' in target && target.prefix === '')
    throw new TypeError('An erasure of the prefix "" would erase the whole space: delete the space instead, or name a prefix');
}
