import type { SyncContext } from '../context/context.js';
import { afterChange } from '../context/after-change.js';
import { allSpaces } from '../context/collect-garbage.js';
import { checkContext } from '../context/state.js';
import { runBatched } from '../sync/batching/group-commit.js';
import { type Migration, type MigrationRecord, type MigrationStep, migrationStep } from '../sync/migrations/migration-step.js';
import { SpaceKeys } from '../sync/version/keys.js';
import { checkSpace, deadline } from './transact.js';

export type { Migration, MigrationRecord };

/** Options for {@link runMigration}. */
export interface MigrationOptions {
  /** Only these spaces (default: every space of the store, and those made while it runs). */
  spaces?: readonly string[] | undefined;
  /** Entries per transaction: each batch is queued with the space's pushes, which go on between batches (a push to the space waits at most one). Default: 50. */
  batch?: number | undefined;
  /** Stops the run between two batches: it then rejects with the signal's reason, and a later run goes on from there. */
  signal?: AbortSignal | undefined;
  /** Told after each batch how far the run got; the run waits for what it returns (a promise), so it can be slowed. */
  onProgress?: ((progress: MigrationProgress) => void | Promise<void>) | undefined;
  /** How long the migration's code may run per batch, in milliseconds, while it holds the space's writes up. Default: `limits.appCodeMs`. */
  timeoutMs?: number | undefined;
}

/** How far a run got. */
export interface MigrationProgress {
  /** The space a batch was just done in. */
  space: string;
  /** Spaces this run has looked at (done, or found done before), of those it knows of. */
  spacesDone: number;
  spaces: number;
  /** Entries this run has done, in every space. */
  entries: number;
}

/** What a run did. */
export interface MigrationResult {
  /** Spaces this run finished (some may have been begun by an earlier run). */
  migrated: number;
  /** Spaces found done before (by an earlier run, or by another runner meanwhile). */
  skipped: number;
  /** Spaces holding nothing yet, left unmarked for a later run. */
  empty: number;
  /** Entries this run did. */
  entries: number;
}

/** A space's progress under one migration. */
export interface SpaceMigration {
  space: string;
  /** `done`, `started` (some batches committed), or `pending` (none yet). */
  state: 'done' | 'started' | 'pending';
  /** Entries done so far. */
  entries: number;
  /** The last key done, while started. */
  after?: string;
  /** When its first batch committed, and when it finished (ms since the epoch). */
  started?: number;
  finished?: number;
}

/**
 * Checks `migration` and returns it: a name (letters, digits, `_ . -`) and either `entry`, run on
 * each entry, or `space`, run once per space. See {@link runMigration}.
 *
 * @example
 * export const migrations = [
 *   defineMigration({ name: 'todo-done-flag', prefix: 'todo/', entry: async (tx, key, todo) => {
 *     const { completed, ...rest } = todo as { completed?: boolean };
 *     await tx.set(key, { ...rest, done: completed ?? false });
 *   } }),
 * ];
 */
export function defineMigration<T extends Migration>(migration: T): T {
  checkMigration(migration);
  return migration;
}

/**
 * Runs `migration` over every space of the store (or `options.spaces`), while pushes and pulls go
 * on: each batch of entries (`options.batch`) is one transaction queued with the space's pushes,
 * its writes in a new version that pulls carry and pokes announce, recorded in the change feed as
 * made by `{ kind: 'migration', name }`. Each batch commits with the space's progress record, so
 * a run stopped or killed anywhere goes on, when run again, after the last batch that committed,
 * and no entry is done twice; a space done under the migration's name is never run again. Several
 * runners of the same migration share the work without doing an entry twice. Spaces are done one
 * after another, in order; those made while it runs are done at its end. Not held to the spaces'
 * quotas (as imports are not): a migration half done because a space was full would leave it in two shapes.
 *
 * @example
 * const { migrated, entries } = await runMigration(ctx, migrations[0], { onProgress: ({ spacesDone, spaces }) => console.log(`${spacesDone}/${spaces}`) });
 */
export async function runMigration(ctx: SyncContext, migration: Migration, options: MigrationOptions = {}): Promise<MigrationResult> {
  checkContext(ctx);
  checkMigration(migration);
  const batch = options.batch ?? DEFAULT_BATCH;
  if (!Number.isInteger(batch) || batch < 1 || batch > MAX_BATCH)
    throw new RangeError(`runMigration: options.batch must be an integer from 1 to ${MAX_BATCH}, got ${batch}`);
  if (options.spaces !== undefined) for (const space of options.spaces) checkSpace(space);
  const result: MigrationResult = { migrated: 0, skipped: 0, empty: 0, entries: 0 };
  const seen = new Set<string>();
  const known = new Set<string>();
  // Listed again at the end: a space made while the run went on is done too, until a listing finds none new.
  for (
    let spaces = [...(options.spaces ?? (await allSpaces(ctx.storage)))];
    spaces.length > 0;
    spaces = options.spaces ? [] : (await allSpaces(ctx.storage)).filter((space) => !seen.has(space))
  ) {
    for (const space of spaces) known.add(space);
    for (const space of spaces) {
      seen.add(space);
      const state = await migrateSpace(ctx, space, migration, batch, options, async (entries, done) => {
        result.entries += entries;
        await options.onProgress?.({ space, spacesDone: seen.size - (done ? 0 : 1), spaces: known.size, entries: result.entries });
      });
      result[state === 'done-before' ? 'skipped' : state === 'empty' ? 'empty' : 'migrated']++;
      if (state !== 'step') await options.onProgress?.({ space, spacesDone: seen.size, spaces: known.size, entries: result.entries });
    }
  }
  return result;
}

/**
 * Where `name` stands in every space of the store: done, started (with the entries done and the
 * last key), or pending. Reads only.
 */
export async function migrationStatus(ctx: SyncContext, name: string): Promise<SpaceMigration[]> {
  checkContext(ctx);
  checkName(name, 'migrationStatus');
  const out: SpaceMigration[] = [];
  for (const space of await allSpaces(ctx.storage)) {
    const record = (await ctx.storage.transaction((tx) => tx.get(new SpaceKeys(space).migration(name)), { readOnly: true, space })) as
      | MigrationRecord
      | undefined;
    out.push(spaceMigration(space, record));
  }
  return out;
}

/** A space's progress as {@link migrationStatus} tells it, from its record. */
export function spaceMigration(space: string, record: MigrationRecord | undefined): SpaceMigration {
  if (record === undefined) return { space, state: 'pending', entries: 0 };
  return {
    space,
    state: record.done === undefined ? 'started' : 'done',
    entries: record.entries,
    ...(record.after !== undefined && { after: record.after }),
    started: record.started,
    ...(record.done !== undefined && { finished: record.done }),
  };
}

/** Runs the migration's batches in `space` until it is done; resolves with how the space was found at the end. */
async function migrateSpace(
  ctx: SyncContext,
  space: string,
  migration: Migration,
  batch: number,
  options: MigrationOptions,
  told: (entries: number, done: boolean) => Promise<void>,
): Promise<'step' | 'done-before' | 'empty'> {
  const limits = ctx.limits;
  const timeoutMs = options.timeoutMs ?? limits.appCodeMs;
  let ran = false;
  for (;;) {
    options.signal?.throwIfAborted();
    const timed = deadline(`migration ${migration.name}`, timeoutMs, "the batch's writes were discarded");
    const clock = { now: ctx.clock(), touchEveryMs: ctx.touchEveryMs };
    let step: MigrationStep;
    try {
      const done = await runBatched<{ ok: true; step: MigrationStep } | { ok: false; error: unknown }>(ctx.storage, space, async (tx) => {
        try {
          return {
            result: { ok: true as const, step: await migrationStep(tx, space, migration, { batch, clock, session: ctx.session, limits, run: timed.run }) },
            keep: true,
          };
        } catch (error) {
          // The migration's own failure: its batch goes, the pushes sharing the transaction stay.
          return { result: { ok: false as const, error }, keep: false };
        }
      });
      if (!done.ok) throw done.error;
      step = done.step;
    } finally {
      timed.stop();
    }
    if (step.changed) afterChange(ctx, space, { operation: 'runMigration', space }, step.touched && { keys: step.touched, groups: [] });
    if (step.state === 'step') {
      ran = true;
      await told(step.entries, step.done);
    }
    if (step.done) return ran ? 'step' : step.state;
  }
}

function checkMigration(migration: Migration): void {
  if (typeof migration !== 'object' || migration === null) throw new TypeError('A migration is an object: { name, entry } or { name, space }');
  checkName(migration.name, 'A migration');
  const { entry, space, prefix } = migration as { entry?: unknown; space?: unknown; prefix?: unknown };
  if ((typeof entry === 'function') === (typeof space === 'function'))
    throw new TypeError(
      `Migration ${JSON.stringify(migration.name)} must have either an entry function (run on each entry) or a space function (run once per space), not ${entry === undefined && space === undefined ? 'neither' : 'both'}`,
    );
  if (prefix !== undefined && (typeof prefix !== 'string' || typeof space === 'function'))
    throw new TypeError(`Migration ${JSON.stringify(migration.name)}: prefix must be a string, and goes with an entry function`);
}

function checkName(name: unknown, who: string): asserts name is string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new TypeError(`${who}'s name must be 1 to 100 letters, digits, '_', '.' or '-', got ${JSON.stringify(name)}`);
}

const NAME = /^[A-Za-z0-9_.-]{1,100}$/;
/** A push to the space waits at most one batch: 50 keep its p99 within 1.2x of idle on PostgreSQL, at 0.87x the entries/s of 500 (docs/benchmarks.md). */
const DEFAULT_BATCH = 50;
const MAX_BATCH = 10_000;
