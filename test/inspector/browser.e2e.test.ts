/**
 * The inspector in a real browser: Chromium against the test app (app.ts) served by the Node
 * adapter over node:http, on a SQLite file and on PostgreSQL (a schema of its own), while real
 * `replicache` clients push in the background. Each page is reached by clicking, each action is
 * taken in the page and checked on the server (the backend's `read`, the webhook receiver, the
 * onAction log); other sites' requests are refused; read-only mode shows and takes no action;
 * every page passes axe; the keyboard reaches everything; and `viewsync inspect --web` serves it
 * from the CLI.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import axe from 'axe-core';
import postgres from 'postgres';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { Replicache, type PushRequest, type WriteTransaction } from 'replicache';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handleRequest, type Storage, type SyncContext } from '../../src/index.js';
import { read, startWebhooks, type WebhookRunner } from '../../src/backend.js';
import { inspect, type InspectorAction, type SpaceDetail } from '../../src/ops.js';
import { postgresStorage } from '../../src/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { createListener } from '../../adapters/node.js';
import { hasChromium, launchChromium } from '../support/chromium.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { pendingCount, uniqueName } from '../interop/client.js';
import { bin, work } from '../cli/process.js';
import { inspectorApp, pushAs, SECRET } from './app.js';
import type { FeedTail, LivePage } from '../../src/inspector/api-types.js';

const url = process.env.DATABASE_URL;
if (url === undefined) console.log('Skipping the inspector browser test on PostgreSQL: it needs a real PostgreSQL server (DATABASE_URL)');

/** Another site for the cross-site requests: Chromium resolves it to this machine. */
const EVIL_HOST = 'evil.test';

/** A store the app runs on, made anew for a describe and cleared after. */
interface Store {
  name: string;
  open(): Promise<{ storage: Storage; close(): Promise<void> }>;
}

const STORES: Store[] = [
  {
    name: 'a SQLite file',
    open: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'inspector-browser-'));
      const db = openSQLite(join(dir, 'app.db'));
      return { storage: sqliteStorage(db), close: async () => (db.close(), rmSync(dir, { recursive: true, force: true })) };
    },
  },
  ...(url === undefined
    ? []
    : [
        {
          name: 'PostgreSQL',
          open: async () => {
            const schema = `inspector_browser_${process.pid}`;
            const sql = postgres(url, { onnotice: () => {}, max: 8 });
            await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
            return {
              storage: postgresStorage(sql, { schema }),
              close: async () => (await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`), await sql.end()),
            };
          },
        },
      ]),
];

/** The client's mutators: the app's (app.ts), on the client's transaction. */
const clientMutators = {
  put: async (tx: WriteTransaction, { key, value }: { key: string; value: string | number | boolean | null | Record<string, unknown> }) =>
    void (await tx.set(key, value as never)),
  del: async (tx: WriteTransaction, { key }: { key: string }) => void (await tx.del(key)),
};

/** A real `replicache` client of `user` in `space`, with when each key's push was acknowledged (performance.now()). */
interface LiveClient {
  rep: Replicache<typeof clientMutators>;
  acked: Map<string, number>;
  /** Pushes `key` and resolves when the server acknowledged the push that carried it, with that time. */
  put(key: string, value: Record<string, unknown>): Promise<number>;
}

function liveClient(base: URL, space: string, user: string): LiveClient {
  const acked = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  const pushURL = new URL(`push?space=${encodeURIComponent(space)}`, base).href;
  const rep = new Replicache({
    name: uniqueName(`inspector-${user}`),
    mutators: clientMutators,
    pullURL: new URL(`pull?space=${encodeURIComponent(space)}`, base).href,
    pushURL,
    auth: `Bearer ${user}`,
    pullInterval: 1_000,
    pushDelay: 0,
    requestOptions: { minDelayMs: 10, maxDelayMs: 200 },
    logLevel: 'error',
    kvStore: 'idb',
    // The stock pusher's request, timed: the acknowledgement is where "within a second" starts.
    pusher: async (body: PushRequest, requestID: string) => {
      const response = await fetch(pushURL, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${user}`, 'x-replicache-requestid': requestID },
        body: JSON.stringify(body),
      });
      const text = await response.text();
      if (response.ok) {
        const at = performance.now();
        for (const mutation of body.mutations) {
          const key = (mutation.args as { key: string }).key;
          acked.set(key, at);
          waiting.get(key)?.();
        }
      }
      return { httpRequestInfo: { httpStatusCode: response.status, errorMessage: response.ok ? '' : text } };
    },
  });
  return {
    rep,
    acked,
    put: async (key, value) => {
      acked.delete(key);
      const done = new Promise<void>((resolve) => waiting.set(key, resolve));
      await rep.mutate.put({ key, value });
      await done;
      waiting.delete(key);
      return acked.get(key)!;
    },
  };
}

/** A request the inspector's server answered. */
interface Seen {
  method: string;
  path: string;
  status: number;
  origin: string | undefined;
  cookie: boolean;
}

/** Serves `ctx` over node:http on 127.0.0.1 through the Node adapter, keeping what it answered under /_inspect/. */
async function serveApp(ctx: SyncContext): Promise<{ base: URL; inspector: URL; seen: Seen[]; close(): Promise<void> }> {
  const listener = createListener(ctx);
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/_inspect'))
      res.once('finish', () =>
        seen.push({
          method: req.method!,
          path: req.url!.split('?')[0]!,
          status: res.statusCode,
          origin: req.headers.origin,
          cookie: req.headers.cookie !== undefined,
        }),
      );
    listener(req, res);
  });
  await listen(server);
  const base = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  return { base, inspector: new URL('_inspect/', base), seen, close: () => close(server) };
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
}

function close(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A webhook delivery the receiver got. */
interface Received {
  space: string;
  delivery: string;
  status: number;
}

/** The webhook's receiver: answers 500 for the spaces in `failing`, 200 for the rest. */
async function startReceiver(): Promise<{ url: string; got: Received[]; failing: Set<string>; close(): Promise<void> }> {
  const got: Received[] = [];
  const failing = new Set<string>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req
      .setEncoding('utf8')
      .on('data', (chunk: string) => (body += chunk))
      .on('end', () => {
        const { space, delivery } = JSON.parse(body) as { space: string; delivery: string };
        const status = failing.has(space) ? 500 : 200;
        expect(req.headers['viewsync-delivery']).toBe(delivery);
        got.push({ space, delivery, status });
        res.writeHead(status).end();
      });
  });
  await listen(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, failing, close: () => close(server) };
}

/**
 * Another site's page, from a server on another port: it auto-submits forms to the inspector
 * (a login with the right secret, and a restore with a JSON-looking text/plain body), each into
 * an iframe of its own, and sends the restore again with fetch in no-cors mode.
 */
async function startEvilSite(): Promise<{ port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    const target = query.get('target') ?? '';
    const space = query.get('space') ?? '';
    const forged = JSON.stringify({ space, to: 1, dryRun: false, pad: '' }).slice(0, -3);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><meta charset="utf-8"><title>a prize for you</title>
<iframe name="a"></iframe><iframe name="b"></iframe>
<form id="login" method="post" action="${target}login" target="a"><input name="secret" value="${SECRET}"></form>
<form id="restore" method="post" action="${target}api/restore" enctype="text/plain" target="b"><input name='${forged.replace(/'/g, '&#39;')}' value='"}'></form>
<script>
document.getElementById('login').submit();
document.getElementById('restore').submit();
fetch(${JSON.stringify(`${target}api/restore`)}, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: ${JSON.stringify(JSON.stringify({ space, to: 1, dryRun: false }))} }).catch(() => {});
</script>`);
  });
  await listen(server);
  return { port: (server.address() as AddressInfo).port, close: () => close(server) };
}

/** Generous waits, except where "within a second" is the point. */
const soon = { timeout: 10_000, interval: 50 };

/** Waits until `locator` (one element) is visible. */
async function visible(locator: Locator, timeout = soon.timeout): Promise<void> {
  await locator.waitFor({ state: 'visible', timeout });
}

/** Waits until `locator` holds `text` (one element), or these texts (a string per element). */
async function hasText(locator: Locator, text: string | string[]): Promise<void> {
  if (Array.isArray(text)) await expect.poll(() => locator.allTextContents(), soon).toEqual(text);
  else await expect.poll(() => locator.textContent(), soon).toBe(text);
}

async function hasCount(locator: Locator, count: number): Promise<void> {
  await expect.poll(() => locator.count(), soon).toBe(count);
}

async function isFocused(locator: Locator): Promise<void> {
  await expect.poll(() => locator.evaluate((el) => el === document.activeElement), soon).toBe(true);
}

/**
 * The page's polls of `api/<name>` from now on: when each was asked (this process's clock) and
 * what it answered. "Within a second" is checked by what they show, not by a wall-clock bound a
 * busy machine could break: the page asks once a second, and the first poll asked after a push
 * was acknowledged must carry it.
 */
function polls(page: Page, name: string): Array<{ asked: number; body: Promise<unknown> }> {
  const seen: Array<{ asked: number; body: Promise<unknown> }> = [];
  page.on('request', (request) => {
    if (request.method() !== 'GET' || !new URL(request.url()).pathname.endsWith(`/api/${name}`)) return;
    const asked = performance.now();
    seen.push({
      asked,
      body: request
        .response()
        .then((response) => response?.json())
        .catch(() => undefined),
    });
  });
  return seen;
}

/** The median time between the page's polls, in ms: about a second (it asks on a 1 s interval); a median, so a busy machine's late timer does not count. */
function medianGap(seen: ReadonlyArray<{ asked: number }>): number {
  const gaps = seen
    .slice(1)
    .map((poll, i) => poll.asked - seen[i]!.asked)
    .sort((a, b) => a - b);
  return gaps[Math.floor(gaps.length / 2)] ?? Infinity;
}

describe.skipIf(!hasChromium('the inspector browser test'))('the inspector in Chromium', () => {
  let browser: Browser;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium([`--host-resolver-rules=MAP ${EVIL_HOST} 127.0.0.1`]);
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
  });

  async function newPage(context: BrowserContext): Promise<Page> {
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(`${error.name}: ${error.message}`));
    return page;
  }

  /** Logs in at `inspector` in `page`, as the login form is used; resolves on the spaces page. */
  async function logIn(page: Page, inspector: URL, secret = SECRET): Promise<void> {
    await page.goto(inspector.href);
    await page.getByLabel('Inspector secret').fill(secret);
    await page.getByRole('button', { name: 'Log in' }).click();
    await visible(page.getByRole('heading', { level: 1, name: 'Spaces' }));
  }

  /** The page's one h1 once it is loaded (not "Loading…"). */
  async function loaded(page: Page, name: string | RegExp): Promise<void> {
    await visible(page.getByRole('heading', { level: 1, name }), 10_000);
  }

  /** The text of each cell of a table's body rows, once the table is there (a page may draw its heading before its data: CI saw an empty list read too soon). */
  async function rows(table: Locator): Promise<string[][]> {
    await visible(table.first());
    return table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
  }

  /** The axe violations of the document in `page` (axe injected once per document). */
  async function violations(page: Page): Promise<string[]> {
    if (!(await page.evaluate(() => 'axe' in globalThis))) await page.addScriptTag({ content: axe.source });
    return page.evaluate(async () => {
      const found = await (globalThis as unknown as { axe: typeof axe }).axe.run(document);
      // Rules ran and passed: an empty list is not axe failing to look.
      if (found.passes.length === 0) throw new Error('axe passed no rule');
      return found.violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
    });
  }

  describe.each(STORES)('on $name, with live clients pushing', (store) => {
    let closeStore: () => Promise<void>;
    let storage: Storage;
    let ctx: SyncContext;
    let readOnlyCtx: SyncContext;
    let app: Awaited<ReturnType<typeof serveApp>>;
    let readOnlyApp: Awaited<ReturnType<typeof serveApp>>;
    let receiver: Awaited<ReturnType<typeof startReceiver>>;
    let evil: Awaited<ReturnType<typeof startEvilSite>>;
    let webhooks: WebhookRunner;
    let ann: LiveClient;
    let bob: LiveClient;
    let context: BrowserContext;
    let page: Page;
    const actions: InspectorAction[] = [];
    const serverErrors: unknown[] = [];
    const handle = (request: Request) => handleRequest(request, ctx);
    /** The background traffic: a put every 250 ms, ann's and bob's in turn, over keys that exist (so the key set stays put). */
    let traffic: ReturnType<typeof setInterval>;
    let paused = false;
    let n = 0;
    /** Versions of `acme` after its first seed push. */
    let firstVersion: number;

    beforeAll(async () => {
      ({ storage, close: closeStore } = await store.open());
      receiver = await startReceiver();
      receiver.failing.add('broken');
      ctx = inspectorApp(storage, {
        webhook: receiver.url,
        // Disabled at its first failure: "enable" has a disabled webhook to enable at once.
        webhookRetryForMs: 1,
        onAction: (action) => actions.push(action),
        onError: (error) => serverErrors.push(error),
      });
      readOnlyCtx = inspectorApp(storage, {
        webhook: receiver.url,
        readOnly: true,
        onAction: (action) => actions.push(action),
        onError: (error) => serverErrors.push(error),
      });
      app = await serveApp(ctx);
      readOnlyApp = await serveApp(readOnlyCtx);
      evil = await startEvilSite();

      // acme: ann is a member of lists 1 and 2, bob of 2; three lists of to-dos.
      await pushAs(handle, 'acme', 'ann', [
        { name: 'put', args: { key: 'member/ann/1', value: true } },
        { name: 'put', args: { key: 'member/ann/2', value: true } },
        { name: 'put', args: { key: 'member/bob/2', value: true } },
      ]);
      firstVersion = ((await inspect(ctx, 'acme')) as SpaceDetail).version;
      await pushAs(handle, 'acme', 'ann', [
        ...Array.from({ length: 24 }, (_, i) => ({
          name: 'put' as const,
          args: { key: `list/${1 + (i % 3)}/todo/${i}`, value: { title: `Todo ${i}`, done: false } },
        })),
        { name: 'put', args: { key: 'list/1/todo/live-ann', value: { n: 0 } } },
        { name: 'put', args: { key: 'list/2/todo/live-bob', value: { n: 0 } } },
      ]);
      await pushAs(handle, 'acme', 'ann', [{ name: 'put', args: { key: 'list/1/todo/0', value: { title: 'Todo 0', done: true } } }]);
      for (let i = 0; i < 3; i++) await pushAs(handle, `space-${i}`, 'ann', [{ name: 'put', args: { key: `note/${i}`, value: { text: `Space ${i}` } } }]);
      // restore-me: v1 {a: 1}, then {a: 2, b: 'x'}; revert-me: ann's {a: 1}, then mallory's vandalism; csrf-target: as restore-me.
      for (const space of ['restore-me', 'csrf-target']) {
        await pushAs(handle, space, 'ann', [{ name: 'put', args: { key: 'doc/a', value: 1 } }]);
        await pushAs(handle, space, 'ann', [
          { name: 'put', args: { key: 'doc/a', value: 2 } },
          { name: 'put', args: { key: 'doc/b', value: 'x' } },
        ]);
      }
      await pushAs(handle, 'revert-me', 'ann', [{ name: 'put', args: { key: 'doc/a', value: 1 } }]);
      await pushAs(handle, 'revert-me', 'mallory', [
        { name: 'put', args: { key: 'doc/a', value: 'JUNK' } },
        { name: 'put', args: { key: 'doc/m', value: 'SPAM' } },
      ]);
      await pushAs(handle, 'broken', 'ann', [{ name: 'put', args: { key: 'doc/a', value: 1 } }]);

      webhooks = startWebhooks(ctx, { sweepMs: 500 });
      ann = liveClient(app.base, 'acme', 'ann');
      bob = liveClient(app.base, 'acme', 'bob');
      traffic = setInterval(() => {
        if (paused) return;
        const [client, key] = ++n % 2 ? [ann, 'list/1/todo/live-ann'] : [bob, 'list/2/todo/live-bob'];
        void client.rep.mutate.put({ key, value: { n } });
      }, 250);

      context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      page = await newPage(context);
    }, 60_000);

    afterAll(async () => {
      clearInterval(traffic);
      await Promise.all([ann?.rep.close(), bob?.rep.close()]);
      await context?.close();
      await webhooks?.stop();
      await Promise.all([app?.close(), readOnlyApp?.close(), receiver?.close(), evil?.close()]);
      await closeStore?.();
    }, 30_000);

    it('refuses a wrong secret with an alert, logs in with the right one, and out again', async () => {
      await page.goto(app.inspector.href);
      await page.getByLabel('Inspector secret').fill('not-the-secret-not-the-secret-000');
      await page.getByRole('button', { name: 'Log in' }).click();
      await hasText(page.getByRole('alert'), 'That is not the inspector secret.');
      expect(actions.at(-1)).toMatchObject({ action: 'login-refused', outcome: 'wrong secret' });
      await logIn(page, app.inspector);
      expect(actions.at(-1)).toMatchObject({ action: 'login', outcome: 'ok' });
      await page.getByRole('button', { name: 'Log out' }).click();
      await visible(page.getByLabel('Inspector secret'));
      expect(actions.at(-1)).toMatchObject({ action: 'logout', outcome: 'ok' });
      // The session ended: the API refuses the page.
      expect(await page.evaluate(async () => (await fetch('api/spaces', { headers: { 'x-viewsync-inspector': '1' } })).status)).toBe(401);
      await logIn(page, app.inspector);
    });

    it('goes spaces → space → keys → key → view as → feed → history → live by clicking, each page with its content', async () => {
      await page.getByRole('link', { name: 'Spaces', exact: true }).click();
      await loaded(page, 'Spaces');
      const spaces = (await rows(page.getByRole('table', { name: /^Spaces/ }))).map(([space]) => space);
      expect(spaces).toEqual(['acme', 'broken', 'csrf-target', 'restore-me', 'revert-me', 'space-0', 'space-1', 'space-2']);

      await page.getByRole('link', { name: 'acme', exact: true }).click();
      await loaded(page, 'Space acme');
      // The client groups with their clients' lastMutationIDs: the seed's, and each live client's.
      const groups = await rows(page.getByRole('table', { name: /^Client groups/ }));
      expect(groups.find(([, group]) => group === 'group-ann')?.[5]).toBe('client-ann: 30');
      for (const [client, user] of [
        [ann, 'ann'],
        [bob, 'bob'],
      ] as const) {
        const row = groups.find(([, , , , , clients]) => clients!.startsWith(`${client.rep.clientID}: `));
        expect(row?.[0]).toBe(user);
        expect(Number(row![5]!.split(': ')[1])).toBeGreaterThanOrEqual(0);
      }

      await page.getByRole('link', { name: 'Keys', exact: true }).click();
      await loaded(page, 'Keys of acme');
      const keys = await rows(page.getByRole('table', { name: /^Keys at version/ }));
      expect(keys.map(([key]) => key)).toContain('list/1/todo/0');
      expect(keys.find(([key]) => key === 'member/bob/2')?.[2]).toBe('true');
      // As of the first version: the memberships alone.
      await page.getByLabel('As of version').fill(String(firstVersion));
      await page.getByRole('button', { name: 'Show' }).click();
      const then = page.getByRole('table', { name: `Keys at version ${firstVersion} (from history)` });
      await visible(then);
      expect((await rows(then)).map(([key]) => key)).toEqual(['member/ann/1', 'member/ann/2', 'member/bob/2']);
      await page.getByLabel('As of version').fill('');
      await page.getByRole('button', { name: 'Show' }).click();

      await page.getByRole('link', { name: 'list/1/todo/0', exact: true }).click();
      await loaded(page, 'Key list/1/todo/0');
      expect(JSON.parse((await page.getByLabel('Value now').textContent()) ?? '')).toEqual({ title: 'Todo 0', done: true });
      const history = await rows(page.getByRole('table', { name: 'Changes of list/1/todo/0, newest first' }));
      expect(history.map(([, , change, by]) => [change, by])).toEqual([
        ['{"title":"Todo 0","done":false} → {"title":"Todo 0","done":true}', expect.stringMatching(/^mutation put by user ann/)],
        ['(absent) → {"title":"Todo 0","done":false}', expect.stringMatching(/^mutation put by user ann/)],
      ]);

      await page.getByRole('link', { name: '← Keys of acme' }).click();
      await loaded(page, 'Keys of acme');
      await page.getByRole('link', { name: '← Space acme' }).click();
      await loaded(page, 'Space acme');
      await page.getByRole('link', { name: 'View as a user' }).click();
      await loaded(page, 'View acme as a user');
      await visible(page.getByLabel('User ID'));

      await page.getByRole('link', { name: '← Space acme' }).click();
      await page.getByRole('link', { name: 'Feed', exact: true }).click();
      await loaded(page, 'Feed of acme');
      await visible(page.getByRole('table', { name: 'Changes, newest first' }).locator('tbody tr').first());

      await page.getByRole('link', { name: '← Space acme' }).click();
      await page.getByRole('link', { name: 'History (restore, revert)' }).click();
      await loaded(page, 'History of acme');
      await visible(page.getByRole('region', { name: 'Restore' }));
      await visible(page.getByRole('region', { name: 'Revert' }));

      await page.getByRole('link', { name: 'Live', exact: true }).click();
      await loaded(page, 'Live');
      await hasCount(page.locator('figure figcaption'), 6);
      // Once drawn, the pushes so far are counted (the live clients push 4 a second).
      await expect
        .poll(
          () =>
            page
              .getByRole('table', { name: /^Latency/ })
              .locator('tbody tr')
              .first()
              .locator('td')
              .last()
              .textContent(),
          soon,
        )
        .not.toBe('0');
    });

    /** The numbers a chart's caption gives: the last whole second and this second so far. */
    async function caption(label: string): Promise<{ last: number; now: number }> {
      const text = (await page.locator('figcaption', { hasText: `${label} a second:` }).textContent()) ?? '';
      const match = /a second: ([\d,]+) \(([\d,]+) so far this second\)/.exec(text);
      if (match === null) throw new Error(`No numbers in the caption ${JSON.stringify(text)}`);
      return { last: Number(match[1]!.replace(/,/g, '')), now: Number(match[2]!.replace(/,/g, '')) };
    }

    it('shows a push in the live chart within a second', async () => {
      const asked = polls(page, 'live');
      await page.goto(new URL('#/live', app.inspector).href);
      await loaded(page, 'Live');
      // Quiet first: the background traffic paused and every pending push sent, until the chart says no push a second.
      paused = true;
      try {
        await expect.poll(async () => (await pendingCount(ann.rep)) + (await pendingCount(bob.rep)), soon).toBe(0);
        await expect.poll(() => caption('Pushes'), soon).toEqual({ last: 0, now: 0 });
        const points = await page.locator('figure', { hasText: 'Pushes a second' }).locator('polyline').getAttribute('points');
        const acked = await ann.put('list/1/todo/live-ann', { n: -1 });
        await expect
          .poll(
            async () => {
              const { last, now } = await caption('Pushes');
              return last + now;
            },
            { ...soon, interval: 20 },
          )
          .toBeGreaterThanOrEqual(1);
        // One of the first two polls the page asked after the push was acknowledged carried it (the
        // first may have been on its way as the push landed), and the page asks once a second.
        const next = await Promise.all(
          asked
            .filter((poll) => poll.asked > acked)
            .slice(0, 2)
            .map(async (poll) => (await poll.body) as LivePage),
        );
        expect(next.some(({ seconds }) => seconds.reduce((sum, second) => sum + second.pushes, 0) >= 1)).toBe(true);
        expect(medianGap(asked)).toBeLessThan(2_000);
        // And in the chart itself: its line moved off the floor.
        expect(await page.locator('figure', { hasText: 'Pushes a second' }).locator('polyline').getAttribute('points')).not.toBe(points);
      } finally {
        paused = false;
      }
    });

    it('shows a push in the feed within a second, and none while paused', async () => {
      const asked = polls(page, 'feed');
      await page.goto(new URL('#/space/acme/feed', app.inspector).href);
      await loaded(page, 'Feed of acme');
      const feed = page.getByRole('table', { name: 'Changes, newest first' });
      await visible(feed.locator('tbody tr').first());
      const key = `feed/probe-${Date.now()}`;
      const acked = await ann.put(key, { probe: true });
      await visible(feed.getByRole('link', { name: key, exact: true }));
      // As the live chart's: one of the first two polls asked after the acknowledgement carried the change, and the page asks once a second.
      const next = await Promise.all(
        asked
          .filter((poll) => poll.asked > acked)
          .slice(0, 2)
          .map(async (poll) => (await poll.body) as FeedTail),
      );
      expect(next.some(({ changes }) => changes.some((change) => 'key' in change && change.key === key))).toBe(true);
      expect(medianGap(asked)).toBeLessThan(2_000);

      await page.getByRole('button', { name: 'Pause' }).click();
      await hasText(page.getByRole('status'), 'Feed paused.');
      const paused = `feed/paused-${Date.now()}`;
      await ann.put(paused, { probe: true });
      // A negative needs time to show: two of the page's polls (1 s each) with nothing drawn.
      await page.waitForTimeout(2_200);
      await hasCount(feed.getByRole('link', { name: paused, exact: true }), 0);
      await page.getByRole('button', { name: 'Resume' }).click();
      await visible(feed.getByRole('link', { name: paused, exact: true }), 5_000);
    });

    it('views the space as a user: the keys marked received are exactly those a pull of that user gets', async () => {
      await page.goto(new URL('#/space/acme/view-as', app.inspector).href);
      await loaded(page, 'View acme as a user');
      await page.getByLabel('User ID').fill('bob');
      await page.getByRole('button', { name: 'Show' }).click();
      const table = page.getByRole('table', { name: /as user bob sees them/ });
      await visible(table);
      const entries = await rows(table);
      const received = entries
        .filter(([, yes]) => yes === 'yes')
        .map(([key]) => key!)
        .sort();
      // A real pull of bob's, from no cookie: the whole of his view.
      const response = await fetch(new URL('pull?space=acme', app.base), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer bob' },
        body: JSON.stringify({ pullVersion: 1, clientGroupID: uniqueName('bob-observer'), cookie: null, profileID: 'p', schemaVersion: '' }),
      });
      expect(response.status).toBe(200);
      const pulled = ((await response.json()) as { patch: Array<{ op: string; key?: string }> }).patch
        .filter(({ op }) => op === 'put')
        .map(({ key }) => key!)
        .sort();
      expect(received).toEqual(pulled);
      expect(received).toContain('member/bob/2');
      expect(received).toContain('list/2/todo/live-bob');
      expect(received.some((key) => key.startsWith('list/1/'))).toBe(false);
      expect(entries.length).toBeGreaterThan(received.length);
      // "Only keys not received" hides the rest.
      await page.getByLabel('Only keys not received').check();
      const shown = await table.locator('tbody tr:visible td:nth-child(2)').allTextContents();
      expect(shown.length).toBe(entries.length - received.length);
      expect(new Set(shown)).toEqual(new Set(['no']));
      await page.getByLabel('Only keys not received').uncheck();
    });

    it('replays a webhook delivery by its ID, and the receiver gets it again', async () => {
      await expect.poll(() => receiver.got.some(({ space, status }) => space === 'acme' && status === 200), soon).toBe(true);
      const first = receiver.got.find(({ space, status }) => space === 'acme' && status === 200)!;
      await page.goto(new URL('#/space/acme', app.inspector).href);
      await loaded(page, 'Space acme');
      const actionsBox = page.getByRole('region', { name: 'Webhook search actions' });
      await actionsBox.getByLabel('Delivery ID').fill(first.delivery);
      await actionsBox.getByRole('button', { name: 'Replay delivery' }).click();
      await hasText(page.getByRole('status'), 'Webhook search: 1 delivery queued for replay.');
      expect(actions.at(-1)).toMatchObject({ action: 'webhook-replay', details: { name: 'search', space: 'acme', delivery: first.delivery }, outcome: 'ok' });
      await expect.poll(() => receiver.got.filter(({ delivery }) => delivery === first.delivery).length, soon).toBe(2);
    });

    it('enables a disabled webhook, and the receiver gets what was held back', async () => {
      await expect.poll(async () => ((await inspect(ctx, 'broken')) as SpaceDetail).webhooks?.search?.disabled !== undefined, soon).toBe(true);
      await page.goto(new URL('#/space/broken', app.inspector).href);
      await loaded(page, 'Space broken');
      const hooks = await rows(page.getByRole('table', { name: 'Webhook deliveries in this space' }));
      expect(hooks[0]?.[9]).toMatch(/^deliveries failed for .* the receiver answered 500/);
      receiver.failing.delete('broken');
      const failed = receiver.got.filter(({ space }) => space === 'broken').length;
      await page.getByRole('region', { name: 'Webhook search actions' }).getByRole('button', { name: 'Enable' }).click();
      await hasText(page.getByRole('status'), 'Webhook search enabled.');
      expect(actions.at(-1)).toMatchObject({ action: 'webhook-enable', details: { name: 'search', space: 'broken' }, outcome: 'ok' });
      await expect
        .poll(
          () =>
            receiver.got
              .filter(({ space }) => space === 'broken')
              .slice(failed)
              .map(({ status }) => status),
          soon,
        )
        .toEqual([200]);
      await expect.poll(async () => ((await inspect(ctx, 'broken')) as SpaceDetail).webhooks?.search?.disabled, soon).toBeUndefined();
    });

    it('restores after a dry run that changes nothing, then a confirmed restore that does', async () => {
      const values = () => read(ctx, 'restore-me', async (tx) => ({ a: await tx.get('doc/a'), b: await tx.get('doc/b') }));
      const before = ((await inspect(ctx, 'restore-me')) as SpaceDetail).version;
      await page.goto(new URL('#/space/restore-me/history', app.inspector).href);
      await loaded(page, 'History of restore-me');
      const box = page.getByRole('region', { name: 'Restore' });
      await box.getByLabel('Restore to version').fill(String(before - 1));
      expect(await box.getByRole('button', { name: 'Restore', exact: true }).isDisabled()).toBe(true);
      await box.getByRole('button', { name: 'Dry run' }).click();
      await visible(box.getByText('Dry run: 2 keys would change.'));
      expect(await rows(box.getByRole('table', { name: 'Changes (2)' }))).toEqual([
        ['doc/a', '2 → 1'],
        ['doc/b', '"x" → (deleted)'],
      ]);
      // The dry run has answered: had it written, it would show now.
      expect(await values()).toEqual({ a: 2, b: 'x' });
      expect(((await inspect(ctx, 'restore-me')) as SpaceDetail).version).toBe(before);
      expect(actions.at(-1)).toMatchObject({ action: 'restore', details: { space: 'restore-me', to: before - 1, dryRun: true }, outcome: 'dry-run' });

      await box.getByRole('button', { name: 'Restore', exact: true }).click();
      const confirm = box.getByRole('button', { name: 'Confirm restore' });
      await isFocused(confirm);
      await confirm.click();
      await visible(box.getByText(`Restore done: the space is now at version ${before + 1} (2 keys changed).`));
      expect(await values()).toEqual({ a: 1, b: undefined });
      expect(actions.at(-1)).toMatchObject({ action: 'restore', details: { space: 'restore-me', dryRun: false }, outcome: 'ok' });
    });

    it("reverts one user's changes after a dry run, then a confirmed revert", async () => {
      const values = () => read(ctx, 'revert-me', async (tx) => ({ a: await tx.get('doc/a'), m: await tx.get('doc/m') }));
      await page.goto(new URL('#/space/revert-me/history', app.inspector).href);
      await loaded(page, 'History of revert-me');
      const box = page.getByRole('region', { name: 'Revert' });
      await box.getByLabel('User ID').fill('mallory');
      await box.getByRole('button', { name: 'Dry run' }).click();
      await visible(box.getByText('Dry run: 2 keys would change.'));
      expect(await values()).toEqual({ a: 'JUNK', m: 'SPAM' });
      await box.getByRole('button', { name: 'Revert', exact: true }).click();
      await box.getByRole('button', { name: 'Confirm revert' }).click();
      await visible(box.getByText(/^Revert done/));
      expect(await values()).toEqual({ a: 1, m: undefined });
    });

    it('refuses a browser without the session: the API answers 401 and the page shows the login form', async () => {
      const stranger = await browser.newContext();
      try {
        const other = await newPage(stranger);
        await other.goto(new URL('#/space/acme', app.inspector).href);
        await visible(other.getByLabel('Inspector secret'));
        expect(
          await other.evaluate(async () => {
            const response = await fetch('api/spaces', { headers: { 'x-viewsync-inspector': '1' } });
            return [response.status, await response.json()];
          }),
        ).toEqual([401, { error: expect.stringContaining('Log in') }]);
      } finally {
        await stranger.close();
      }
    });

    it("refuses another site's forms and no-cors fetches, a login with the right secret too, while the operator is logged in", async () => {
      const values = () => read(ctx, 'csrf-target', async (tx) => ({ a: await tx.get('doc/a'), b: await tx.get('doc/b') }));
      const told = actions.length;
      // The operator's own browser, logged in, opens each page: one of another site, and one of
      // this site on another port (same site, another origin: the SameSite cookie goes along there).
      for (const host of [EVIL_HOST, '127.0.0.1']) {
        const origin = `http://${host}:${evil.port}`;
        const evilPage = await newPage(context);
        await evilPage.goto(`${origin}/?target=${encodeURIComponent(app.inspector.href)}&space=csrf-target`);
        // The server answered all three (a login form, a restore form, a no-cors fetch), each refused.
        await expect
          .poll(
            () =>
              app.seen
                .filter((seen) => seen.origin === origin)
                .map(({ method, path }) => `${method} ${path}`)
                .sort(),
            soon,
          )
          .toEqual(['POST /_inspect/api/restore', 'POST /_inspect/api/restore', 'POST /_inspect/login']);
        const seen = app.seen.filter((each) => each.origin === origin);
        expect(seen.map(({ status }) => status)).toEqual([403, 403, 403]);
        // Another site's requests carry no cookie (SameSite=Strict); this site's do, and the Origin check refuses them.
        expect(seen.every(({ cookie }) => cookie === (host !== EVIL_HOST))).toBe(true);
        await evilPage.close();
      }
      expect(await values()).toEqual({ a: 2, b: 'x' });
      expect(actions.slice(told)).toEqual([]);
    });

    it('in read-only mode shows no action and the server refuses one', async () => {
      const readOnly = await browser.newContext();
      try {
        const ro = await newPage(readOnly);
        await logIn(ro, readOnlyApp.inspector);
        await visible(ro.getByText('read-only', { exact: true }));
        await ro.getByRole('link', { name: 'broken', exact: true }).click();
        await loaded(ro, 'Space broken');
        await visible(ro.getByRole('table', { name: 'Webhook deliveries in this space' }));
        await hasCount(ro.getByRole('region', { name: /^Webhook .* actions$/ }), 0);
        await hasCount(ro.getByRole('link', { name: /History/ }), 0);
        await hasText(ro.getByRole('button'), ['Log out']);
        await ro.goto(new URL('#/space/restore-me/history', readOnlyApp.inspector).href);
        await loaded(ro, 'History of restore-me');
        await visible(ro.getByText('Read-only: actions are off.'));
        await hasText(ro.getByRole('button'), ['Log out']);
        const told = actions.length;
        const answer = await ro.evaluate(async () => {
          const response = await fetch('api/restore', {
            method: 'POST',
            headers: { 'x-viewsync-inspector': '1', 'content-type': 'application/json' },
            body: JSON.stringify({ space: 'restore-me', to: 1, dryRun: false }),
          });
          return [response.status, await response.json()];
        });
        expect(answer).toEqual([403, { error: expect.stringContaining('read-only') }]);
        expect(await read(ctx, 'restore-me', (tx) => tx.get('doc/a'))).toBe(1);
        expect(actions.slice(told)).toEqual([]);
      } finally {
        await readOnly.close();
      }
    });

    it('passes axe on every page, logged out and in, normal and read-only', async () => {
      const found: Record<string, string[]> = {};
      for (const [which, server] of [
        ['normal', app],
        ['read-only', readOnlyApp],
      ] as const) {
        // axe is injected as an inline script, which the page's CSP (script-src 'self') refuses: bypassed here only.
        const audit = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 800 } });
        try {
          const a11y = await newPage(audit);
          await a11y.goto(server.inspector.href);
          found[`${which} login`] = await violations(a11y);
          await a11y.getByLabel('Inspector secret').fill('wrong-wrong-wrong-wrong-wrong-wrong');
          await a11y.getByRole('button', { name: 'Log in' }).click();
          await visible(a11y.getByRole('alert'));
          found[`${which} login refused`] = await violations(a11y);
          await logIn(a11y, server.inspector);
          const routes: Array<[string, string | RegExp]> = [
            ['#/', 'Spaces'],
            ['#/space/acme', 'Space acme'],
            ['#/space/broken', 'Space broken'],
            ['#/space/acme/keys', 'Keys of acme'],
            ['#/space/acme/key/list%2F1%2Ftodo%2F0', 'Key list/1/todo/0'],
            ['#/space/acme/view-as?user=bob', 'View acme as a user'],
            ['#/space/acme/feed', 'Feed of acme'],
            ['#/space/restore-me/history', 'History of restore-me'],
            ['#/live', 'Live'],
          ];
          for (const [hash, title] of routes) {
            await a11y.evaluate((to) => (location.hash = to), hash);
            await loaded(a11y, title);
            if (hash === '#/live') await expect.poll(() => a11y.locator('figcaption').first().textContent(), soon).not.toContain('—');
            found[`${which} ${hash}`] = await violations(a11y);
          }
          if (which === 'normal') {
            // The history page after a dry run, with its plan's table and the armed buttons.
            await a11y.evaluate(() => (location.hash = '#/space/csrf-target/history'));
            await loaded(a11y, 'History of csrf-target');
            const box = a11y.getByRole('region', { name: 'Restore' });
            await box.getByLabel('Restore to version').fill('1');
            await box.getByRole('button', { name: 'Dry run' }).click();
            await visible(box.getByText(/^Dry run:/));
            await box.getByRole('button', { name: 'Restore', exact: true }).click();
            found['normal history after a dry run'] = await violations(a11y);
          }
        } finally {
          await audit.close();
        }
      }
      expect(Object.fromEntries(Object.entries(found).filter(([, list]) => list.length > 0))).toEqual({});
    });

    it('works by keyboard: Tab to the secret, Enter logs in, the skip link, the nav links, focus on main after navigating', async () => {
      const keyboard = await browser.newContext();
      try {
        const kb = await newPage(keyboard);
        await kb.goto(app.inspector.href);
        const secret = kb.getByLabel('Inspector secret');
        // The field has autofocus; from the heading above it (a click there sets where Tab starts), Tab reaches it all the same.
        await isFocused(secret);
        await kb.getByRole('heading', { level: 1 }).click();
        expect(await secret.evaluate((el) => el === document.activeElement)).toBe(false);
        await kb.keyboard.press('Tab');
        await isFocused(secret);
        await kb.keyboard.type(SECRET);
        await kb.keyboard.press('Enter');
        await loaded(kb, 'Spaces');

        const focused = () =>
          kb.evaluate(() => {
            const el = document.activeElement;
            return el === null ? null : `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}:${(el.textContent ?? '').trim().slice(0, 30)}`;
          });
        await kb.keyboard.press('Tab');
        expect(await focused()).toBe('a:Skip to content');
        expect((await kb.getByRole('link', { name: 'Skip to content' }).boundingBox())!.x).toBeGreaterThanOrEqual(0);
        await kb.keyboard.press('Enter');
        expect(await focused()).toMatch(/^main#main:/);
        expect(new URL(kb.url()).hash).toBe('');

        // From the header's name (where a click leaves Tab's start), Tab reaches the nav links.
        await kb.locator('.brand').click();
        await kb.keyboard.press('Tab');
        expect(await focused()).toBe('a:Spaces');
        await kb.keyboard.press('Tab');
        expect(await focused()).toBe('a:Live');
        await kb.keyboard.press('Enter');
        await loaded(kb, 'Live');
        expect(new URL(kb.url()).hash).toBe('#/live');
        expect(await focused()).toMatch(/^main#main:/);
        expect(await kb.getByRole('link', { name: 'Live', exact: true }).getAttribute('aria-current')).toBe('page');

        // Into the content: Tab from main reaches the spaces' links, and Enter follows one.
        // Back up from main: the header's controls, last first.
        await kb.keyboard.press('Shift+Tab');
        expect(await focused()).toBe('button:Log out');
        await kb.keyboard.press('Shift+Tab');
        expect(await focused()).toBe('a:Live');
        await kb.keyboard.press('Shift+Tab');
        expect(await focused()).toBe('a:Spaces');
        await kb.keyboard.press('Enter');
        await loaded(kb, 'Spaces');
        expect(await focused()).toMatch(/^main#main:/);
        for (let i = 0; i < 20 && (await focused()) !== 'a:acme'; i++) await kb.keyboard.press('Tab');
        expect(await focused()).toBe('a:acme');
        await kb.keyboard.press('Enter');
        await loaded(kb, 'Space acme');
        expect(await focused()).toMatch(/^main#main:/);
      } finally {
        await keyboard.close();
      }
    });

    it("logged no errors in the pages, nor on the server (but the disabled webhook's)", () => {
      expect(pageErrors).toEqual([]);
      expect(serverErrors.map(String).filter((error) => !/Webhook "search" is disabled in space "broken"/.test(error))).toEqual([]);
    });
  });

  describe('viewsync inspect --web', () => {
    let dir: string;
    let child: ReturnType<typeof spawn> | undefined;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'inspector-cli-'));
      const db = openSQLite(join(dir, 'store.db'));
      const seed = inspectorApp(sqliteStorage(db));
      for (const space of ['cli-one', 'cli-two'])
        await pushAs((request) => handleRequest(request, seed), space, 'ann', [{ name: 'put', args: { key: `note/${space}`, value: space } }]);
      db.close();
    });

    afterAll(() => {
      if (child?.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    });

    it('serves the inspector of a SQLite file on a port of its own, with a secret made for the run', async () => {
      const { VIEWSYNC_INSPECTOR_SECRET: _, ...env } = process.env;
      const run = spawn('viewsync', ['inspect', '--web', '--port', '0', '--sqlite', join(dir, 'store.db')], {
        cwd: work,
        env: { ...env, PATH: `${bin}:${process.env.PATH}` },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = run;
      let out = '';
      let err = '';
      run.stdout!.setEncoding('utf8').on('data', (text: string) => (out += text));
      run.stderr!.setEncoding('utf8').on('data', (text: string) => (err += text));
      await expect.poll(() => /Log in with this secret .*: (\S+)/.test(out) || run.exitCode !== null, { timeout: 20_000, interval: 50 }).toBe(true);
      expect(err).toBe('');
      const inspector = new URL(/The inspector is at (\S+)/.exec(out)![1]!);
      const secret = /Log in with this secret .*: (\S+)/.exec(out)![1]!;
      expect(inspector.hostname).toBe('127.0.0.1');
      expect(secret.length).toBeGreaterThanOrEqual(32);

      const cliContext = await browser.newContext();
      try {
        const cliPage = await newPage(cliContext);
        await logIn(cliPage, inspector, secret);
        expect((await rows(cliPage.getByRole('table', { name: /^Spaces/ }))).map(([space, version]) => [space, version])).toEqual([
          ['cli-one', '1'],
          ['cli-two', '1'],
        ]);
        await cliPage.getByRole('link', { name: 'cli-two' }).click();
        await cliPage.getByRole('link', { name: 'Keys', exact: true }).click();
        await loaded(cliPage, 'Keys of cli-two');
        expect((await rows(cliPage.getByRole('table', { name: /^Keys at version/ }))).map(([key, , value]) => [key, value])).toEqual([
          ['note/cli-two', '"cli-two"'],
        ]);
      } finally {
        await cliContext.close();
      }
      const exited = new Promise<number | null>((resolve) => run.once('exit', resolve));
      run.kill('SIGTERM');
      expect(await exited).toBe(0);
    });
  });
});
