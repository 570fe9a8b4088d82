import type { JSONValue } from '../../protocol/json.js';
import { compareUTF8 } from '../../base/utf8.js';
import type { StorageTransaction } from '../../storage/types.js';
import { globalVersion } from '../session/global-version.js';
import { SpaceKeys } from '../version/keys.js';
import type { SessionClock, SessionOptions } from '../version/strategy.js';
import type { Limits } from '../transactions/limits.js';
import type { WriteTransaction } from '../transactions/transaction.js';
import { MutationTransaction } from '../transactions/write-transaction.js';
import { recordOf, toStored } from '../../storage/records.js';

/**
 * The storage side of `runMigration`: one batch of a migration in one space, in one transaction.
 * The batch reads the space's progress record (`k/<space>/<name>`, see keys.ts), runs the
 * migration on the entries after the last key it did, and writes their changes and the record's
 * new place in the same transaction: a batch is applied whole, with its place, or not at all, so
 * a run killed anywhere goes on after the last batch that committed and no entry is done twice.
 * Reading the record inside the transaction is what lets two runners share a space: the second
 * one's batch starts where the first one's ended.
 */

/** A data migration: a name, and what it does to each entry of a space, or to a whole space. */
export type Migration = {
  /** Its name: letters, digits, `_`, `.` and `-`, at most 100 characters. A space it finished under this name is never run again. */
  readonly name: string;
} & (
  | {
      /** Only the entries whose keys start with this (default: every entry). */
      readonly prefix?: string | undefined;
      /**
       * Called once for each live entry (under `prefix`), in key order, with a mutator's transaction
       * of the space: it may rewrite the entry, delete it, or write other keys (a split). Keys it
       * writes after `key` under `prefix` are entries too, reached later: write them in the new
       * shape and recognise it, or write them outside `prefix`. Must have no effects outside `tx`
       * (a batch may run again when the store retries it).
       */
      readonly entry: (tx: WriteTransaction, key: string, value: JSONValue) => void | Promise<void>;
      readonly space?: undefined;
    }
  | {
      /** Called once per space, in one transaction: for small spaces, or changes that read the whole space. */
      readonly space: (tx: WriteTransaction, space: string) => void | Promise<void>;
      readonly entry?: undefined;
      readonly prefix?: undefined;
    }
);

/** How far a migration got in a space, as stored. */
export interface MigrationRecord {
  /** Entries it has done. */
  entries: number;
  /** The last key done, while it is under way. */
  after?: string;
  /** When its first batch committed, and when its last one did (ms since the epoch). */
  started: number;
  done?: number;
}

/** What one batch did, and where the space stands after it. */
export interface MigrationStep {
  /** `done-before`: a batch (of this runner or another) had finished the space; `empty`: the space holds nothing yet, and is left unmarked. */
  state: 'step' | 'done-before' | 'empty';
  /** Whether the space is done now. */
  done: boolean;
  /** Entries this batch did, and all of them so far in the space. */
  entries: number;
  total: number;
  /** Whether the batch changed the space (it then took a new version), and the keys it wrote, when few. */
  changed: boolean;
  touched: readonly string[] | undefined;
}

/** Options of {@link migrationStep}. */
export interface StepOptions {
  batch: number;
  clock: SessionClock;
  session: SessionOptions;
  limits: Limits;
  /** Runs the migration's own code, under the backend's deadline. */
  run: <T>(fn: () => Promise<T>) => Promise<T>;
}

/**
 * One batch of `migration` in `space`: up to `options.batch` entries after the record's last key
 * (or the whole space, for a `space` migration), their writes and the record's new place, in `tx`.
 * Throws what the migration threw; the caller then drops the batch's writes.
 */
export async function migrationStep(tx: StorageTransaction, space: string, migration: Migration, options: StepOptions): Promise<MigrationStep> {
  const keys = new SpaceKeys(space);
  const recordKey = keys.migration(migration.name);
  const record = (await tx.get(recordKey)) as MigrationRecord | undefined;
  if (record?.done !== undefined) return { state: 'done-before', done: true, entries: 0, total: record.entries, changed: false, touched: [] };
  // A space never written holds nothing to migrate, and may yet be made by an old client: no
  // record, so that a later run finds it.
  if ((await tx.get(keys.meta)) === undefined) return { state: 'empty', done: true, entries: 0, total: 0, changed: false, touched: [] };
  const now = options.clock.now;
  const session = await globalVersion.open(tx, space, options.clock, undefined, options.session);
  session.recordAs({ kind: 'migration', name: migration.name });
  const mtx = new MutationTransaction(session, { clientID: '', mutationID: 0, userID: undefined }, options.limits);
  let done: boolean;
  let entries = 0;
  let after: string | undefined;
  try {
    if (migration.space !== undefined) {
      await options.run(() => Promise.resolve(migration.space(mtx, space)));
      done = true;
    } else {
      ({ done, entries, after } = await entryBatch(
        mtx,
        session.scan(migration.prefix ?? '', record?.after === undefined ? undefined : { key: record.after, exclusive: true }),
        migration,
        record?.after,
        options,
      ));
    }
  } catch (error) {
    mtx.discard();
    throw error;
  }
  await mtx.flush();
  const total = (record?.entries ?? 0) + entries;
  const next: MigrationRecord = { entries: total, started: record?.started ?? now, ...(done ? { done: now } : after !== undefined && { after }) };
  await tx.put(recordKey, toStored(next));
  const changed = await session.commit();
  return { state: 'step', done, entries, total, changed, touched: session.touched() };
}

/**
 * Runs `migration.entry` on the next entries of `pages`: a page of up to `batch` of them as the
 * space holds them, and the keys the migration itself writes among them (after the key it was
 * given, under its prefix), in key order, each once. Resolves with the last key done, and whether
 * none is left after it.
 */
async function entryBatch(
  tx: MutationTransaction,
  pages: AsyncGenerator<ReadonlyArray<readonly [string, JSONValue]>>,
  migration: Migration & { entry: NonNullable<Migration['entry']> },
  from: string | undefined,
  options: StepOptions,
): Promise<{ done: boolean; entries: number; after: string | undefined }> {
  const read = new Map<string, JSONValue>();
  for await (const page of pages) {
    for (const [key, value] of page) if (read.size < options.batch) read.set(key, value);
    if (read.size >= options.batch) {
      await pages.return(undefined);
      break;
    }
  }
  const full = read.size >= options.batch;
  const queue = [...read.keys()];
  /** Keys past it are left to the next batch; undefined: none is (the space is done after this one). */
  const bound = full ? queue.at(-1) : undefined;
  const prefix = migration.prefix ?? '';
  const written = new Set<string>();
  const tracked = tracking(tx, written);
  let entries = 0;
  let after = from;
  for (let i = 0; i < queue.length; i++) {
    const key = queue[i]!;
    after = key;
    // A key this batch wrote is read again: an earlier entry's migration may have changed or deleted it.
    const value = written.has(key) ? ((await tx.get(key)) as JSONValue | undefined) : read.get(key);
    if (value === undefined) continue;
    if (++entries > options.batch * MAX_GROWTH) {
      throw new Error(
        `Migration ${JSON.stringify(migration.name)} keeps writing keys after the one it is given, under its prefix, which it is then given too: more than ${MAX_GROWTH} times a batch of them at once. Write the new keys outside the prefix, or give it a prefix`,
      );
    }
    const before = new Set(written);
    await options.run(() => Promise.resolve(migration.entry(tracked, key, value)));
    // Keys it wrote ahead of itself, within this batch's range, are entries of this batch too.
    for (const next of written) {
      if (
        before.has(next) ||
        !next.startsWith(prefix) ||
        compareUTF8(next, key) <= 0 ||
        (bound !== undefined && compareUTF8(next, bound) > 0) ||
        read.has(next)
      )
        continue;
      read.set(next, null);
      queue.splice(insertionPoint(queue, next, i + 1), 0, next);
    }
  }
  return { done: !full, entries, after };
}

/** `tx`, noting in `written` every key it sets or deletes. */
function tracking(tx: MutationTransaction, written: Set<string>): WriteTransaction {
  return new Proxy(tx, {
    get(target, property) {
      if (property === 'set' || property === 'put' || property === 'del') {
        return (key: string, ...rest: unknown[]) => {
          written.add(key);
          return (target[property] as (key: string, ...rest: unknown[]) => Promise<unknown>).call(target, key, ...rest);
        };
      }
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Where `key` goes in the sorted `queue`, looking from `from` on. */
function insertionPoint(queue: readonly string[], key: string, from: number): number {
  let [low, high] = [from, queue.length];
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareUTF8(queue[mid]!, key) < 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The progress records of `space`, by migration name. */
export async function migrationRecords(tx: StorageTransaction, space: string): Promise<Map<string, MigrationRecord>> {
  const keys = new SpaceKeys(space);
  const rows = await tx.scan({ prefix: keys.migrationPrefix });
  return new Map(rows.map(([key, value]) => [key.slice(keys.migrationPrefix.length), recordOf<MigrationRecord>(value)]));
}

/** Entries a batch may come to, in batches, through keys the migration writes ahead of itself: past it, it is taken for a loop. */
const MAX_GROWTH = 10;
