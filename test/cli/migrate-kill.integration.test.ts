/**
 * `viewsync migrate` killed (SIGKILL) at random points and run again until it finishes: every
 * entry migrated exactly once, on a SQLite file (between runs, a server pushes to it: a SQLite
 * file is one process's at a time) and on PostgreSQL (a server pushes while the runs are killed).
 * The CLI runs from the source, as a process of its own.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { createContext, handlePush, type Storage, type SyncContext } from '../../src/index.js';
import { migrationStatus } from '../../src/ops.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { entriesOf, itemKey, seed } from '../backend/migrations-suite.js';
import { mutation, post, pushBody, testMutators } from '../support/helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'viewsync-migrate-'));
const MODULE = join(work, 'migrations.mjs');
// Not idempotent: an entry done twice shows m: 2.
writeFileSync(
  MODULE,
  `export const migrations = [{ name: 'count-once', prefix: 'item/', entry: async (tx, key, value) => { await tx.set(key, { ...value, m: (value.m ?? 0) + 1 }); } }];\n`,
);

const SPACES = ['a', 'b', 'c', 'd'];
const ENTRIES = 1_500;

/**
 * A run of the CLI from the source, killed `killMs` after its first batch committed (its first
 * progress line: however slow the machine is to start it, the kill lands while it migrates),
 * unless it ended first: resolves with its exit code (null: killed).
 */
function migrate(store: string[], killMs: number, batch: number): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'src/cli/bin.ts'), 'migrate', 'count-once', '--module', MODULE, '--batch', String(batch), ...store],
    { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, VIEWSYNC_PROGRESS_MS: '0' } },
  );
  let stderr = '';
  let timer: ReturnType<typeof setTimeout> | undefined;
  child.stderr.setEncoding('utf8').on('data', (text: string) => {
    stderr += text;
    if (timer === undefined && stderr.includes('migrate: ')) timer = setTimeout(() => child.kill('SIGKILL'), killMs);
  });
  return new Promise((resolve) => child.once('close', (code) => (clearTimeout(timer), resolve({ code, stderr: stderr.slice(-2_000) }))));
}

/** A seeded generator of delays: the same kills for the same seed. */
function delays(seed: number): () => number {
  let state = seed;
  return () => (state = (state * 48271) % 2147483647) / 2147483647;
}

/**
 * Runs the CLI again and again, each killed a random time from `minMs` after its first batch, until one finishes;
 * `between` runs after each kill, and resolves with the entries done so far. Resolves with the
 * kills that stopped a run midway through the entries (not before its first batch or after its last).
 */
async function killUntilDone(store: string[], batch: number, minMs: number, between: () => Promise<number>): Promise<{ kills: number }> {
  const random = delays(4242);
  let kills = 0;
  let done = 0;
  for (let run = 0; ; run++) {
    expect(run, 'runs before the migration finished').toBeLessThan(60);
    // Later runs live longer, so that the migration gets through however slow the machine.
    const { code, stderr } = await migrate(store, minMs + random() * (200 + run * 100), batch);
    if (code === 0) return { kills };
    expect(code, stderr).toBeNull();
    const now = await between();
    if (now > done && now < SPACES.length * ENTRIES) kills++;
    done = now;
  }
}

async function checkOnce(ctx: SyncContext): Promise<void> {
  for (const space of SPACES) {
    const entries = await entriesOf(ctx, space);
    for (let i = 0; i < ENTRIES; i++) expect(entries.get(itemKey(i)), `${space} ${itemKey(i)}`).toEqual({ n: i, m: 1 });
  }
  const status = await migrationStatus(ctx, 'count-once');
  expect(status.map(({ state, entries }) => [state, entries])).toEqual(SPACES.map(() => ['done', ENTRIES]));
}

/** Entries the migration has done, in every space. */
async function entriesDone(ctx: SyncContext): Promise<number> {
  return (await migrationStatus(ctx, 'count-once')).reduce((sum, { entries }) => sum + entries, 0);
}

/** A server's pushes of `note/<n>` to space `a`, retried until acknowledged; resolves with how many. */
class Pusher {
  acknowledged = 0;
  constructor(private readonly ctx: SyncContext) {}
  async pushOnce(): Promise<void> {
    const id = this.acknowledged + 1;
    for (;;) {
      const response = await handlePush(post('/push?space=a', pushBody('g', [mutation('c', id, 'put', { key: `note/${id}`, value: id })])), this.ctx);
      if (response.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    this.acknowledged = id;
  }
}

const context = (storage: Storage) =>
  createContext({ storage, mutators: testMutators, space: (request) => new URL(request.url).searchParams.get('space') ?? '', onError: () => {} });

describe('viewsync migrate, killed at random points', () => {
  it('on SQLite: every entry migrated exactly once, and the pushes between the runs kept', async () => {
    const file = join(work, 'app.db');
    const open = () => {
      const db = openSQLite(file);
      return { ctx: context(sqliteStorage(db)), close: () => db.close() };
    };
    let server = open();
    for (const space of SPACES) await seed(server.ctx, space, ENTRIES);
    server.close();
    let pushes = 0;
    const { kills } = await killUntilDone(['--sqlite', file], 3, 0, async () => {
      server = open();
      const pusher = new Pusher(server.ctx);
      pusher.acknowledged = pushes;
      await pusher.pushOnce();
      pushes = pusher.acknowledged;
      const done = await entriesDone(server.ctx);
      server.close();
      return done;
    });
    expect(kills).toBeGreaterThanOrEqual(2);
    server = open();
    await checkOnce(server.ctx);
    expect([...(await entriesOf(server.ctx, 'a')).keys()].filter((key) => key.startsWith('note/'))).toHaveLength(pushes);
    server.close();
  }, 300_000);

  const url = process.env.DATABASE_URL;
  it.skipIf(url === undefined)(
    'on PostgreSQL, pushed to meanwhile: every entry migrated exactly once, every acknowledged push kept',
    async () => {
      const sql = postgres(url!, { onnotice: () => {}, max: 4 });
      const schema = `migrate_kill_${process.pid}`;
      afterAll(async () => {
        await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        await sql.end();
      });
      await sql.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      const ctx = context(postgresStorage(sql, { schema }));
      for (const space of SPACES) await seed(ctx, space, ENTRIES);
      const pusher = new Pusher(ctx);
      let done = false;
      const load = (async () => {
        while (!done) await pusher.pushOnce();
      })();
      const { kills } = await killUntilDone(['--postgres', url!, '--schema', schema], 25, 0, () => entriesDone(ctx));
      done = true;
      await load;
      expect(kills).toBeGreaterThanOrEqual(2);
      await checkOnce(ctx);
      expect([...(await entriesOf(ctx, 'a')).keys()].filter((key) => key.startsWith('note/'))).toHaveLength(pusher.acknowledged);
    },
    300_000,
  );
});
