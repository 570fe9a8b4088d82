import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { SyncContext } from '../context/context.js';
import { type Migration, type MigrationProgress, migrationStatus, runMigration, type SpaceMigration } from '../backend/migrate.js';
import { CLIError } from './store.js';
import { date, print } from './output.js';

/**
 * `viewsync migrate NAME`: runs a data migration from a module of the app's (see
 * docs/migrations.md), with a progress bar on a terminal and a line now and then in a log, or
 * with `--status` says where it stands in each space, reading only.
 */

/** Options of the command, as the CLI parsed them. */
export interface MigrateOptions {
  module?: string;
  space?: string;
  batch?: number;
  json?: boolean;
  quiet?: boolean;
}

/** `viewsync migrate NAME --status`: each space's state, and the counts; exit 0. */
export async function migrationStatusCommand(ctx: SyncContext, name: string, options: MigrateOptions): Promise<number> {
  const spaces = (await migrationStatus(ctx, name)).filter(({ space }) => options.space === undefined || space === options.space);
  const counts = { done: 0, started: 0, pending: 0 };
  for (const { state } of spaces) counts[state]++;
  if (options.json) return (print(JSON.stringify({ name, ...counts, spaces }, null, 2)), 0);
  print(`Migration ${JSON.stringify(name)}: ${counts.done} of ${spaces.length} spaces done, ${counts.started} started, ${counts.pending} not started.`);
  if (spaces.length > 0) print(migrationTable(spaces));
  return 0;
}

/** `viewsync migrate NAME --module FILE`: runs it until every space is done; SIGINT or SIGTERM stops it between two batches (exit 1). */
export async function migrateCommand(ctx: SyncContext, name: string, options: MigrateOptions): Promise<number> {
  const migration = await migrationFrom(options.module!, name);
  const stop = new AbortController();
  const end = () =>
    stop.abort(new CLIError(`migration ${JSON.stringify(name)} stopped between two batches; what was done stays done: run the same command again to go on`));
  process.once('SIGINT', end).once('SIGTERM', end);
  const started = performance.now();
  const bar = progressBar(options.quiet === true, started);
  try {
    const result = await runMigration(ctx, migration, {
      ...(options.space !== undefined && { spaces: [options.space] }),
      ...(options.batch !== undefined && { batch: options.batch }),
      signal: stop.signal,
      onProgress: bar.tick,
    });
    bar.stop();
    const seconds = (performance.now() - started) / 1000;
    print(
      `migration ${JSON.stringify(name)}: ${result.migrated} ${result.migrated === 1 ? 'space' : 'spaces'} migrated (${result.entries.toLocaleString('en-US')} entries, ${Math.round(result.entries / Math.max(seconds, 0.001)).toLocaleString('en-US')}/s), ${result.skipped} done before, ${result.empty} empty, in ${seconds.toFixed(1)} s`,
    );
    return 0;
  } finally {
    bar.stop();
    process.off('SIGINT', end).off('SIGTERM', end);
  }
}

/** The migrations a `viewsync inspect SPACE` shows, if any ran there. */
export function printMigrations(migrations: Record<string, SpaceMigration>): void {
  const rows = Object.entries(migrations);
  if (rows.length === 0) return;
  print('');
  print(
    table([
      ['MIGRATION', 'STATE', 'ENTRIES', 'STARTED', 'FINISHED'],
      ...rows.map(([name, m]) => [name, m.state, m.entries.toLocaleString('en-US'), date(m.started ?? null), date(m.finished ?? null)]),
    ]),
  );
}

/** The migration named `name` that the module at `file` exports, as `migrations` (an array) or as its default (one, or an array). */
async function migrationFrom(file: string, name: string): Promise<Migration> {
  let module: { migrations?: unknown; default?: unknown };
  try {
    module = (await import(pathToFileURL(resolve(file)).href)) as typeof module;
  } catch (error) {
    const hint = /\.[cm]?ts$/.test(file)
      ? ' (a TypeScript module needs a Node that strips types, 22.18 or later, or the CLI run under tsx; or compile it to .js)'
      : '';
    throw new CLIError(`--module ${JSON.stringify(file)} could not be loaded${hint}: ${(error as Error).message}`);
  }
  const exported = [module.migrations, module.default].flatMap((value) => (Array.isArray(value) ? value : value === undefined ? [] : [value])) as Array<
    Partial<Migration>
  >;
  const names = exported.map((migration) => migration?.name).filter((each): each is string => typeof each === 'string');
  const found = exported.find((migration) => migration?.name === name);
  if (found === undefined)
    throw new CLIError(
      `--module ${JSON.stringify(file)} exports no migration named ${JSON.stringify(name)} (${names.length === 0 ? 'it exports none: export `migrations`, an array of them, or one as the default' : `it exports ${names.map((each) => JSON.stringify(each)).join(', ')}`})`,
    );
  return found as Migration;
}

/**
 * The run's progress on stderr: on a terminal, a bar rewritten in place; in a log, a plain line at
 * most once a `VIEWSYNC_PROGRESS_MS` (default 1,000 ms).
 */
function progressBar(quiet: boolean, started: number) {
  const tty = process.stderr.isTTY === true;
  const every = tty ? 100 : Number(process.env.VIEWSYNC_PROGRESS_MS ?? 1_000);
  let next = performance.now() + every;
  let shown = false;
  return {
    tick(now: MigrationProgress): void {
      if (quiet || performance.now() < next) return;
      next = performance.now() + every;
      const rate = Math.round(now.entries / Math.max((performance.now() - started) / 1000, 0.001));
      const text = `${now.spacesDone}/${now.spaces} spaces, ${now.entries.toLocaleString('en-US')} entries (${rate.toLocaleString('en-US')}/s), in ${JSON.stringify(now.space)}`;
      if (!tty) return void process.stderr.write(`migrate: ${text}\n`);
      const width = 30;
      const filled = now.spaces === 0 ? width : Math.round((width * now.spacesDone) / now.spaces);
      shown = true;
      process.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}\x1b[K`);
    },
    stop(): void {
      if (shown) process.stderr.write('\r\x1b[K');
      shown = false;
    },
  };
}

function migrationTable(spaces: readonly SpaceMigration[]): string {
  return table([
    ['SPACE', 'STATE', 'ENTRIES', 'LAST KEY', 'STARTED', 'FINISHED'],
    ...spaces.map((s) => [
      JSON.stringify(s.space),
      s.state,
      s.entries.toLocaleString('en-US'),
      s.after === undefined ? '-' : JSON.stringify(s.after),
      date(s.started ?? null),
      date(s.finished ?? null),
    ]),
  ]);
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  return rows.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n');
}
