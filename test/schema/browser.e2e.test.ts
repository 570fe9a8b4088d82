import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { hasChromium, launchChromium } from '../support/chromium.js';
import { openSQLite, type TestSQLite } from '../support/sqlite-driver.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext, HTTPError, type Mutators, type SchemaOptions, type SyncContext } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { migrateV1Entries, mutatorsV1, mutatorsV2, schemaV2 } from './app.js';
import { type AppServer, bundlePage, startAppServer } from './browser-server.js';
import type { App } from './page.js';

// Issue 47's real parts: the stock `replicache` client in Chromium across a schema change. Two
// browsers (contexts: each its own IndexedDB, a device each): A works offline at version 1, the
// server deploys version 2 on the same data and port, A comes back as version 2 and its offline
// work lands through the client's mutation recovery; B stays at version 1 and syncs in its own
// shape until a deploy closes the window, then updates once.

/** A pull or push a page sent, as the browser saw it. */
interface Sent {
  device: string;
  /** The page's URL when it sent it: `?v=2` for a version 2 client. */
  from: string;
  path: 'pull' | 'push';
  body: { schemaVersion: string; clientGroupID: string; mutations?: Array<{ name: string; args: unknown }> };
  answer?: unknown;
}

describe.skipIf(!hasChromium('the schema browser test'))('the real client across a schema change, in Chromium', () => {
  let dir: string;
  let db: TestSQLite;
  let ctx: SyncContext;
  let script: Uint8Array;
  let server: AppServer;
  let browser: Browser;
  let deviceA: BrowserContext;
  let deviceB: BrowserContext;
  let a: Page;
  let b: Page;
  let groupA1: string;
  const sent: Sent[] = [];
  const serverErrors: unknown[] = [];
  const pageErrors: Array<{ device: string; text: string; disrupted: boolean }> = [];
  // True while the test has a device offline or the server stopped: the network errors the
  // browser logs then are expected.
  let disrupted = false;
  const soon = { timeout: 15_000, interval: 50 };

  const serveVersion = async (schema: SchemaOptions, mutators: object, port = 0) => {
    db = openSQLite(join(dir, 'todos.db'));
    ctx = createContext({ storage: sqliteStorage(db), mutators: mutators as Mutators, schema, onError: (error) => serverErrors.push(error) });
    server = await startAppServer(ctx, script, port);
  };
  /** A deploy: the server stops, and starts again on the same file and port with `schema`. */
  const deploy = async (schema: SchemaOptions, mutators: object, migrate?: typeof migrateV1Entries) => {
    disrupted = true;
    await server.stop();
    db.close();
    await serveVersion(schema, mutators, server.port);
    if (migrate) await transact(ctx, '', migrate);
  };
  const device = async (name: string) => {
    const context = await browser.newContext();
    context.on('request', (request) => {
      const path = new URL(request.url()).pathname.split('/').pop();
      if (request.method() !== 'POST' || (path !== 'pull' && path !== 'push')) return;
      const entry: Sent = { device: name, from: request.frame().url(), path, body: request.postDataJSON() };
      sent.push(entry);
      // No answer is kept for a request whose page went away before it was read.
      void request
        .response()
        .then(async (response) => (entry.answer = await response?.json()))
        .catch(() => {});
    });
    return context;
  };
  const open = async (context: BrowserContext, name: string, version: '1' | '2') => {
    const page = await context.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') pageErrors.push({ device: name, text: message.text(), disrupted });
    });
    page.on('pageerror', (error) => pageErrors.push({ device: name, text: `${error.name}: ${error.message}`, disrupted }));
    await page.goto(new URL(`/?v=${version}`, server.url).href);
    await ready(page);
    return page;
  };
  const ready = (page: Page) => page.waitForFunction(() => 'app' in globalThis, undefined, { timeout: 15_000 });
  const app = <T>(page: Page, fn: (app: App) => T | Promise<T>): Promise<T> => page.evaluate(`(${fn.toString()})(globalThis.app)`) as Promise<T>;
  const entries = (page: Page) => app(page, (app) => app.entries());
  const todo = (text: string, count = 0) => ({ text, done: false, count });
  const task = (title: string, count = 0) => ({ title, done: false, count });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'viewsync-schema-'));
    script = await bundlePage();
    await serveVersion({ current: '1' }, mutatorsV1);
    browser = await launchChromium();
    deviceA = await device('A');
    deviceB = await device('B');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    db?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('version 1: A adds to-dos, then adds more offline, kept in its IndexedDB as pending mutations', async () => {
    a = await open(deviceA, 'A', '1');
    b = await open(deviceB, 'B', '1');
    await app(a, (app) => Promise.all([app.add('a1', 'Milk'), app.add('a2', 'Eggs')]));
    await expect.poll(() => entries(b), soon).toEqual({ 'todo/a1': todo('Milk'), 'todo/a2': todo('Eggs') });
    groupA1 = await app(a, (app) => app.clientGroupID());

    disrupted = true;
    await deviceA.setOffline(true);
    await app(a, async (app) => (await app.add('a3', 'Bread'), await app.bump('a1'), await app.add('a4', 'Jam')));
    expect(await app(a, (app) => app.pending())).toEqual([
      { name: 'addTodo', args: { id: 'a3', text: 'Bread' } },
      { name: 'bump', args: { id: 'a1' } },
      { name: 'addTodo', args: { id: 'a4', text: 'Jam' } },
    ]);
    expect(await entries(a)).toEqual({ 'todo/a1': todo('Milk', 1), 'todo/a2': todo('Eggs'), 'todo/a3': todo('Bread'), 'todo/a4': todo('Jam') });
    // The client persists about a second after a mutation; the last one there means all are.
    await expect.poll(() => app(a, (app) => app.persisted('Jam')), soon).toBe(true);
    // The tab goes away offline: its work is only in IndexedDB now.
    await a.goto('about:blank');
    expect(await entries(b)).toEqual({ 'todo/a1': todo('Milk'), 'todo/a2': todo('Eggs') });
    // Its offline pushes never reached the server.
    expect(await transact(ctx, '', async (tx) => tx.scan().keys().toArray())).toEqual(['todo/a1', 'todo/a2']);
  });

  it('version 2 is deployed on the same data and port, and a version 1 client still reads its shape', async () => {
    await deploy(schemaV2, mutatorsV2, migrateV1Entries);
    expect(await transact(ctx, '', async (tx) => tx.scan().keys().toArray())).toEqual(['task/a1', 'task/a2']);
    // B's poke stream reconnects, and its pull after the migration reads version 1's shape.
    const pulledAfter = sent.length;
    await expect
      .poll(
        () =>
          sent
            .slice(pulledAfter)
            .some(({ device, path, answer }) => device === 'B' && path === 'pull' && (answer as { cookie?: unknown }).cookie !== undefined),
        soon,
      )
      .toBe(true);
    expect(await entries(b)).toEqual({ 'todo/a1': todo('Milk'), 'todo/a2': todo('Eggs') });
  });

  it('A reloads as version 2: its version 1 offline work lands through mutation recovery, read alike in both shapes', async () => {
    await deviceA.setOffline(false);
    disrupted = false;
    await a.goto(new URL('/?v=2', server.url).href);
    await ready(a);
    const all = { a1: ['Milk', 1], a2: ['Eggs', 0], a3: ['Bread', 0], a4: ['Jam', 0] } as const;
    await expect.poll(() => entries(a), soon).toEqual(Object.fromEntries(Object.entries(all).map(([id, [text, count]]) => [`task/${id}`, task(text, count)])));
    await expect.poll(() => entries(b), soon).toEqual(Object.fromEntries(Object.entries(all).map(([id, [text, count]]) => [`todo/${id}`, todo(text, count)])));
    // The version 2 page pushed the old group's mutations under version 1, then pulled once under it.
    const recovery = () => sent.filter(({ device, from, body }) => device === 'A' && from.includes('v=2') && body.clientGroupID === groupA1);
    await expect
      .poll(() => recovery().map(({ path, body, answer }) => [path, body.schemaVersion, answer !== undefined]), soon)
      .toEqual([
        ['push', '1', true],
        ['pull', '1', true],
      ]);
    expect(recovery()[0]!.body.mutations!.map(({ name, args }) => [name, args])).toEqual([
      ['addTodo', { id: 'a3', text: 'Bread' }],
      ['bump', { id: 'a1' }],
      ['addTodo', { id: 'a4', text: 'Jam' }],
    ]);
    expect(recovery()[1]!.answer).toMatchObject({ lastMutationIDChanges: expect.any(Object) });
  });

  it('in one browser, a version 1 tab is told to update as soon as a version 2 tab starts there, though its version is served', async () => {
    // The client's doing, not the server's: a tab that makes a new client group says so on a
    // BroadcastChannel of the Replicache name, and a tab of another IndexedDB database (another
    // schema version) takes that as NewClientGroup. So "a tab still on version 1" lasts only in
    // a browser that has no version 2 tab yet, like B.
    const deviceC = await device('C');
    const old = await open(deviceC, 'C', '1');
    await expect.poll(() => entries(old), soon).toMatchObject({ 'todo/a4': todo('Jam') });
    const current = await open(deviceC, 'C', '2');
    await old.waitForURL(/v=2/, { timeout: 15_000 });
    await ready(old);
    expect(await app(old, (app) => app.updateNeeded())).toEqual([{ from: '1', reason: { type: 'NewClientGroup' } }]);
    expect(await app(current, (app) => app.updateNeeded())).toEqual([]);
    await deviceC.close();
  });

  it('B stays at version 1 and syncs in its shape until the window closes, then updates once, and its last mutation lands', async () => {
    await app(a, (app) => app.add('a5', 'Butter'));
    await expect.poll(() => entries(b), soon).toMatchObject({ 'todo/a5': todo('Butter') });

    // B's last mutation at version 1, still on the device when the window closes.
    disrupted = true;
    await deviceB.setOffline(true);
    await app(b, (app) => app.add('b1', 'Tea'));
    await expect.poll(() => app(b, (app) => app.persisted('Tea')), soon).toBe(true);
    await deploy({ ...schemaV2, minimum: '2' }, mutatorsV2);
    const closedAt = sent.length;
    await deviceB.setOffline(false);

    // Its handler loads version 2 in the same tab.
    await b.waitForURL(/v=2/, { timeout: 15_000 });
    await ready(b);
    disrupted = false;
    const want = {
      'task/a1': task('Milk', 1),
      'task/a2': task('Eggs'),
      'task/a3': task('Bread'),
      'task/a4': task('Jam'),
      'task/a5': task('Butter'),
      'task/b1': task('Tea'),
    };
    await expect.poll(() => entries(b), soon).toEqual(want);
    await expect.poll(() => entries(a), soon).toEqual(want);
    // The version 2 client recovers the old group, whose pull is refused now: the client marks
    // that group disabled in IndexedDB, and must not ask for an update again.
    await expect.poll(() => app(b, (app) => app.persisted('"disabled":true')), soon).toBe(true);
    const recoveryPulls = () =>
      sent.slice(closedAt).filter(({ device, from, path, body }) => device === 'B' && from.includes('v=2') && path === 'pull' && body.schemaVersion === '1');
    await expect.poll(() => recoveryPulls().map(({ answer }) => answer), soon).toEqual([{ error: 'VersionNotSupported', versionType: 'schema' }]);
    // Once more from the start, as after any reload: still no call.
    await b.reload();
    await ready(b);
    await expect.poll(() => entries(b), soon).toEqual(want);
    expect(await app(b, (app) => app.updateNeeded())).toEqual([{ from: '1', reason: { type: 'VersionNotSupported', versionType: 'schema' } }]);
    expect(await app(a, (app) => app.updateNeeded())).toEqual([]);
  });

  it('logged no unexpected errors in the pages, nor on the server', () => {
    // Chromium logs a failed request as a console error: offline, a server stopped, a poke stream
    // cut as it stops. Expected only while the test had a device offline or the server stopped.
    const expected =
      /net::(ERR_INTERNET_DISCONNECTED|ERR_CONNECTION_REFUSED|ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_NETWORK_CHANGED)|Failed to fetch|status of 503/;
    expect(pageErrors.filter((error) => !(error.disrupted && expected.test(error.text)))).toEqual([]);
    // A poke stream opened while a deploy stops the server gets its 503 ("shutting down; reconnect
    // to another"), which onError hears of as of any 5xx; the test stops the server at each deploy.
    expect(serverErrors.filter((error) => !(error instanceof HTTPError && error.status === 503 && /shutting down/.test(error.message)))).toEqual([]);
  });
});
