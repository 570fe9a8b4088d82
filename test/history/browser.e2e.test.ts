import { fileURLToPath } from 'node:url';
import postgres from 'postgres';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hasChromium, launchChromium } from '../support/chromium.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext, type SyncContext } from '../../src/index.js';
import { readHistory } from '../../src/backend.js';
import { storeNotifier } from '../../src/ops.js';
import { postgresStorage } from '../../src/postgres.js';
import { sh } from '../cli/process.js';
import { type AppServer, bundlePage, startAppServer } from '../schema/browser-server.js';
import type { App } from './page.js';

// Issue 48's real parts: the stock `replicache` client in Chromium while an operator reverts one
// user's changes with the CLI. Ann and Mallory share a to-do list, each in a browser of their own;
// Mallory vandalises it; Ann fixes one of Mallory's changes herself; an operator runs `viewsync
// revert --user mallory --since 1m` from a shell against the same database while both pages are
// online. Both pages show the result within a poke (the server learns of the CLI's commit from the
// store), no client resets, Ann's edits stand, and the conflict the revert reports is Ann's fix.
// On PostgreSQL, in a schema of its own: the one store two processes (the server and the CLI)
// write at once; a SQLite file is one process's (its writes are ordered by locks in it).
const url = process.env.DATABASE_URL;
if (url === undefined) console.log('Skipping the history browser test: it needs a real PostgreSQL server (DATABASE_URL)');

/** A pull a page sent, and its answer. */
interface Pulled {
  user: string;
  answer?: { cookie?: { order?: number }; patch?: Array<{ op: string }> };
}

describe.skipIf(!hasChromium('the history browser test') || url === undefined)(
  "an operator reverts one user's changes with the CLI while both are online, in Chromium",
  () => {
    const schema = `history_browser_${process.pid}`;
    const store = `--postgres '${url}' --schema ${schema}`;
    let sql: ReturnType<typeof postgres>;
    let ctx: SyncContext;
    let server: AppServer;
    let browser: Browser;
    let ann: Page;
    let mallory: Page;
    const pulls: Pulled[] = [];
    const serverErrors: unknown[] = [];
    const pageErrors: string[] = [];
    const soon = { timeout: 15_000, interval: 50 };

    const open = async (context: BrowserContext, user: string) => {
      context.on('request', (request) => {
        if (request.method() !== 'POST' || !request.url().endsWith('/pull')) return;
        const entry: Pulled = { user };
        pulls.push(entry);
        void request
          .response()
          .then(async (response) => (entry.answer = await response?.json()))
          .catch(() => {});
      });
      const page = await context.newPage();
      page.on('console', (message) => void (message.type() === 'error' && pageErrors.push(`${user}: ${message.text()}`)));
      page.on('pageerror', (error) => pageErrors.push(`${user}: ${error.name}: ${error.message}`));
      await page.goto(new URL(`/?user=${user}`, server.url).href);
      await page.waitForFunction(() => 'app' in globalThis, undefined, { timeout: 15_000 });
      return page;
    };
    const app = <T>(page: Page, fn: (app: App) => T | Promise<T>): Promise<T> => page.evaluate(`(${fn.toString()})(globalThis.app)`) as Promise<T>;
    const todos = (page: Page) => app(page, (app) => app.todos());

    beforeAll(async () => {
      sql = postgres(url!, { onnotice: () => {}, max: 8 });
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      const storage = postgresStorage(sql, { schema });
      // The CLI commits from another process: the server hears of it by reading the store.
      ctx = createContext({
        storage,
        mutators: {
          setTodo: async (tx, { id, text }: { id: string; text: string }) => void (await tx.set(`todo/${id}`, { text })),
          removeTodo: async (tx, { id }: { id: string }) => void (await tx.del(`todo/${id}`)),
        },
        history: {},
        authenticate: (request) => request.headers.get('authorization') || null,
        pokes: { notifier: storeNotifier(storage, { intervalMs: 100 }) },
        onError: (error) => serverErrors.push(error),
      });
      server = await startAppServer(ctx, await bundlePage(fileURLToPath(new URL('page.ts', import.meta.url))));
      browser = await launchChromium();
      ann = await open(await browser.newContext(), 'ann');
      mallory = await open(await browser.newContext(), 'mallory');
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      await server?.stop();
      await sql?.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await sql?.end();
    });

    it('Ann writes the list; Mallory vandalises it; Ann fixes one of the changes herself', async () => {
      await app(ann, async (app) => (await app.set('1', 'milk'), await app.set('2', 'eggs'), await app.set('3', 'bread')));
      await expect.poll(() => todos(mallory), soon).toEqual({ 1: 'milk', 2: 'eggs', 3: 'bread' });
      await app(mallory, async (app) => (await app.set('1', 'JUNK'), await app.set('2', 'JUNK'), await app.remove('3'), await app.set('4', 'SPAM')));
      await expect.poll(() => todos(ann), soon).toEqual({ 1: 'JUNK', 2: 'JUNK', 4: 'SPAM' });
      await app(ann, (app) => app.set('2', 'eggs (ann fixed this)'));
      await expect.poll(() => todos(mallory), soon).toEqual({ 1: 'JUNK', 2: 'eggs (ann fixed this)', 4: 'SPAM' });
    });

    it("the operator's revert of Mallory's last minute undoes exactly her changes, reports Ann's fix as the conflict, and both pages show it within a poke, without a reset", async () => {
      const pullsBefore = pulls.length;
      const dry = sh(`viewsync revert '' --user mallory --since 1m --on-conflict skip --dry-run --json ${store}`);
      expect([dry.status, dry.stderr]).toEqual([0, '']);
      const versionBefore = (await readHistory(ctx, '', { limit: 1 })).kept.to;
      const run = sh(`viewsync revert '' --user mallory --since 1m --on-conflict skip --json ${store}`);
      expect([run.status, run.stderr]).toEqual([0, '']);
      const result = JSON.parse(run.stdout) as {
        version: number;
        changes: Array<{ key: string }>;
        conflicts: Array<{ key: string; later: Array<{ by: { userID?: string } }> }>;
      };
      expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, changes: result.changes, conflicts: result.conflicts });
      expect(result.version).toBe(versionBefore + 1);
      expect(result.changes.map(({ key }) => key)).toEqual(['todo/1', 'todo/3', 'todo/4']);
      // The one conflict: the key Ann wrote after Mallory, left as Ann made it.
      expect(result.conflicts.map(({ key, later }) => [key, later.map(({ by }) => by.userID)])).toEqual([['todo/2', ['ann']]]);

      const want = { 1: 'milk', 2: 'eggs (ann fixed this)', 3: 'bread' };
      await expect.poll(() => todos(ann), soon).toEqual(want);
      await expect.poll(() => todos(mallory), soon).toEqual(want);
      // No client reset: every pull since answered a patch without a clear, its cookie moving on.
      const since = pulls.slice(pullsBefore).filter(({ answer }) => answer?.cookie !== undefined);
      expect(since.length).toBeGreaterThanOrEqual(2);
      expect(since.filter(({ answer }) => answer!.patch!.some(({ op }) => op === 'clear'))).toEqual([]);
      for (const user of ['ann', 'mallory']) {
        const orders = pulls.filter((pulled) => pulled.user === user && pulled.answer?.cookie !== undefined).map(({ answer }) => answer!.cookie!.order!);
        expect(orders).toEqual([...orders].sort((a, b) => a - b));
      }
      // The feed tells the revert's changes as made by it.
      const { changes } = await readHistory(ctx, '', { after: versionBefore });
      expect(changes.map(({ key, by }) => [key, by.kind])).toEqual([
        ['todo/1', 'revert'],
        ['todo/3', 'revert'],
        ['todo/4', 'revert'],
      ]);
    });

    it('logged no errors in the pages, nor on the server', () => {
      expect(pageErrors).toEqual([]);
      expect(serverErrors).toEqual([]);
    });
  },
);
