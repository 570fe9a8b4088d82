/**
 * The inspector (`SyncOptions.inspector`, src/inspector/): what its page weighs, how long it takes
 * to show a usable list of 10,000 spaces and a page of a space of 100,000 keys, and what an open
 * inspector costs the server's pushes.
 *
 * On SQLite (a file, WAL) and PostgreSQL (a real server, a pool of 4 connections, a schema of its
 * own: each-store.ts). Everything goes through the real Node adapter (`createListener` on
 * `node:http`, its default compression on), over HTTP on 127.0.0.1 with keep-alive connections
 * (a `node:http` Agent in this same process), and the page in real headless Chromium
 * (playwright-core, /usr/bin/chromium, as test/support/chromium.ts launches it).
 *
 * 1. The page's weight: the bytes of index.html, app.js, app.css and login.html as the package
 *    embeds them (src/inspector/ui/assets.ts), raw (UTF-8) and compressed with node:zlib: gzip
 *    at level 9 and at zlib's default (6), and as the Node adapter sends them by default (brotli
 *    quality 2, gzip level 4; Chromium asks for br). No store involved: measured once.
 * 2. Time to a usable spaces list: SPACES spaces (default 10,000), `space-00000`…, each of 3
 *    entries of about 60 bytes, written untimed by `transact` (64 spaces in flight), through a
 *    context with `history: {}` and an inspector. Then, logged in once (POST `login` with the
 *    secret, its cookie kept): (a) the two API calls the page makes to show the list, one after
 *    the other as it makes them, `api/overview` then `api/spaces?limit=50`, RUNS times (default
 *    30, after 3 untimed), each from the request's start to its whole body read and parsed:
 *    median and p95 of each and of the pair; and `api/spaces?limit=50&after=space-09949` (the
 *    last page), the same way. (b) In Chromium, with the session cookie set in the browser
 *    context: a new tab, `page.goto(<base>/_inspect/)` (waiting only for the navigation to
 *    commit) to the first body row of the spaces table visible (`getByRole('table')`'s second
 *    `row`, the first being the header), PAGE_RUNS times (default 7, after 1 untimed): median,
 *    and the range. The tab is closed after each run.
 * 3. Time to a space's key browser: one space of KEYS keys (default 100,000, `item/000000`…,
 *    values of about 100 bytes of JSON), written untimed 1,000 keys a version (versions 1-100),
 *    then UPDATES versions (default 2,000) each updating one key picked at random. Through the
 *    API, RUNS times each: `api/keys?space=…&limit=100` (the first page), the same `&after=` the
 *    middle key (`item/050000`), and as of an old version (`&version=`), which the server reads
 *    from its change log (`at(ctx, space, version, { after, limit })`): the version before the
 *    UPDATES (2,000 versions back; first page and the middle), and version 50 (half the keys not
 *    yet written: the UPDATES and 50 versions of 1,000 keys undone). No checkpoint is built: one
 *    is due every max(1,000, the space's entries) versions, here 100,000, which this space never
 *    reaches (`collectGarbage` would find none due), so every read as of a version undoes the log
 *    from the live entries. And in Chromium, as in 2b: `goto <base>/_inspect/#/space/<space>/keys`
 *    to the first body row of the keys table visible.
 * 4. What an open inspector costs the server: pushes a second through the Node adapter, CLIENTS
 *    (default 8) clients each pushing in a loop, one push after another (a real push body of one
 *    `put` of a small value, keys cycling over 100, mutation IDs 1, 2, 3… per client), each
 *    client a client group and a space of its own, in three arms: A, a context without
 *    `inspector`; B, the same options with `inspector` (so its live numbers are counted with
 *    every push and pull), no page open; C, that same context and server with a real Chromium tab
 *    open on `#/live`, which polls `api/live` every second and redraws its charts (opened, and its
 *    first draw awaited, before the round's clock starts; closed after). No `changes` or
 *    `history`: the smallest push, so the inspector's share of it is the largest. The arms take
 *    turns, A B C then C B A…, ROUNDS rounds (default 6) of ROUND_S seconds each (default 5),
 *    after one untimed second of each; each arm pushes into its own 8 spaces. Reported: each
 *    arm's median pushes a second over the rounds, with their range; B/A and C/A as each round's
 *    throughput of A over that of B or C (so > 1 means slower than A), median of the rounds and
 *    their range; and the CPU of this process, of Chromium's processes, and of the machine (2
 *    cores: 200% is all of it) in each arm, and the polls the tab made.
 *
 * Run: `npm run bench:inspector` (about 5 minutes on 2 cores; starts a throwaway PostgreSQL with
 * scripts/start-postgres.sh unless DATABASE_URL is set; needs Chromium at /usr/bin/chromium for
 * the browser figures, which are left out without it). Env: STORES (sqlite,postgres), ONLY
 * (weight,list,keys,push), SPACES (10000), KEYS (100000), UPDATES (2000), RUNS (30), PAGE_RUNS
 * (7), ROUNDS (6), ROUND_S (5), CLIENTS (8). Not part of `npm test`. Progress on stderr, the
 * table on stdout.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';
import type { Browser, BrowserContext } from 'playwright-core';
import { createContext, type Storage, type SyncContext, type SyncOptions } from '../src/index.js';
import { transact } from '../src/backend.js';
import { createListener } from '../adapters/node.js';
import { APP_CSS, APP_JS, INDEX_HTML, LOGIN_HTML } from '../src/inspector/ui/assets.js';
import { LiveStats } from '../src/telemetry/live.js';
import { CHROMIUM, launchChromium } from '../test/support/chromium.js';
import { cpuSnapshot, cpuSpent, machineLine } from './cpu.js';
import { eachStore } from './each-store.js';
import { median, progress, quantile } from './measure.js';
import { renderTable, type Row } from './table.js';
import { putMutators } from './todos.js';

const root = new URL('..', import.meta.url).pathname;
const env = process.env;
const STORES = (env.STORES ?? 'sqlite,postgres').split(',');
const ONLY = (env.ONLY ?? 'weight,list,keys,push').split(',');
const SPACES = Number(env.SPACES ?? 10_000);
const KEYS = Number(env.KEYS ?? 100_000);
const UPDATES = Number(env.UPDATES ?? 2_000);
const RUNS = Number(env.RUNS ?? 30);
const PAGE_RUNS = Number(env.PAGE_RUNS ?? 7);
const ROUNDS = Number(env.ROUNDS ?? 6);
const ROUND_MS = Number(env.ROUND_S ?? 5) * 1000;
const CLIENTS = Number(env.CLIENTS ?? 8);
const SECRET = 'inspector-bench-secret-4d9e1f7a2c5b8036';
if (STORES.includes('postgres')) env.DATABASE_URL ??= execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim();

const fmt = (n: number) => n.toLocaleString('en-US');
const ms = (n: number) => (n < 10 ? n.toFixed(2) : n.toFixed(0));
const range = (values: number[], digits = 2) => `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`;

// ——— HTTP, as a client in this process ———

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One request over a keep-alive connection; resolves once the whole body is read. */
function call(url: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A server of `ctx` through the Node adapter on 127.0.0.1; counts the inspector API requests it answers. */
async function listen(ctx: SyncContext): Promise<{ base: string; server: Server; apiCalls: { count: number } }> {
  const listener = createListener(ctx);
  const apiCalls = { count: 0 };
  const server = createServer((req, res) => {
    if (req.url?.includes('/_inspect/api/')) apiCalls.count++;
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, apiCalls };
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** Logs in through the form's POST; resolves to the session cookie (`name=value`). */
async function login(base: string): Promise<string> {
  const answer = await call(`${base}/_inspect/login`, {
    method: 'POST',
    headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: `secret=${SECRET}`,
  });
  const cookie = answer.headers['set-cookie']?.[0];
  if (answer.status !== 303 || cookie === undefined) throw new Error(`login answered ${answer.status}: ${answer.body}`);
  return cookie.split(';')[0]!;
}

/** Times `path` of the API (request to parsed body). */
async function timeAPI(base: string, cookie: string, path: string): Promise<{ ms: number; body: unknown }> {
  const start = performance.now();
  const answer = await call(`${base}/_inspect/api/${path}`, { headers: { cookie, 'x-viewsync-inspector': '1', 'accept-encoding': 'br, gzip' } });
  // The adapter compresses answers of 1 KiB or more, as for a browser; Node's http client does not decode them.
  const encoding = answer.headers['content-encoding'];
  const bytes = encoding === 'br' ? brotliDecompressSync(answer.body) : encoding === 'gzip' ? gunzipSync(answer.body) : answer.body;
  if (answer.status !== 200) throw new Error(`api/${path} answered ${answer.status}: ${bytes.toString()}`);
  const body: unknown = JSON.parse(bytes.toString('utf8'));
  return { ms: performance.now() - start, body };
}

/** RUNS timings (after 3 untimed) of each of `paths`, called one after the other in each run: each path's times, and the runs' totals. */
async function apiRuns(base: string, cookie: string, paths: string[]): Promise<{ each: number[][]; total: number[] }> {
  const each = paths.map(() => [] as number[]);
  const total: number[] = [];
  for (let run = -3; run < RUNS; run++) {
    let sum = 0;
    for (const [i, path] of paths.entries()) {
      const { ms } = await timeAPI(base, cookie, path);
      sum += ms;
      if (run >= 0) each[i]!.push(ms);
    }
    if (run >= 0) total.push(sum);
  }
  return { each, total };
}

const apiNote = (times: number[]) => `median of ${times.length}; p95 ${ms(quantile(times, 0.95))} ms, min ${ms(Math.min(...times))} ms`;

// ——— Chromium ———

let browser: Browser | undefined;
async function browserContext(cookie: string): Promise<BrowserContext | undefined> {
  if (!existsSync(CHROMIUM)) return undefined;
  browser ??= await launchChromium();
  const context = await browser.newContext();
  const [name, value] = [cookie.slice(0, cookie.indexOf('=')), cookie.slice(cookie.indexOf('=') + 1)];
  await context.addCookies([{ name, value, domain: '127.0.0.1', path: '/_inspect/', httpOnly: true, sameSite: 'Strict' }]);
  return context;
}

/** What a page run took, from Playwright's `goto` to the row seen; and by the page's own clock (from its navigation's start): its files loaded, its last API answer, the row seen. */
interface PageRuns {
  total: number[];
  files: number[];
  api: number[];
  seen: number[];
}

/** PAGE_RUNS times (after 1 untimed) from a new tab's `goto(url)` to the first body row of the page's first table visible. */
async function pageRuns(context: BrowserContext, url: string): Promise<PageRuns> {
  const runs: PageRuns = { total: [], files: [], api: [], seen: [] };
  for (let run = -1; run < PAGE_RUNS; run++) {
    const page = await context.newPage();
    const start = performance.now();
    await page.goto(url, { waitUntil: 'commit' });
    await page.getByRole('table').first().getByRole('row').nth(1).waitFor({ state: 'visible', timeout: 60_000 });
    const elapsed = performance.now() - start;
    // A string, not a function: tsx would wrap a function's inner arrows in a helper the page lacks.
    const clock = (await page.evaluate(`(() => {
      const resources = performance.getEntriesByType('resource');
      const last = (test) => Math.max(0, ...resources.filter((r) => test(r.name)).map((r) => r.responseEnd));
      return { files: last((name) => /\\/app\\.(js|css)$/.test(name)), api: last((name) => name.includes('/api/')), seen: performance.now() };
    })()`)) as { files: number; api: number; seen: number };
    await page.close();
    if (run < 0) continue;
    runs.total.push(elapsed);
    runs.files.push(clock.files);
    runs.api.push(clock.api);
    runs.seen.push(clock.seen);
  }
  return runs;
}

function pageRow(name: string, what: string, runs: PageRuns): Row {
  return {
    benchmark: `${name}: Chromium: ${what}`,
    value: median(runs.total),
    unit: 'ms',
    note: `median of ${runs.total.length}, range ${range(runs.total, 0)}; by the page's clock (medians): app.js and app.css in at ${median(runs.files).toFixed(0)} ms, the last API answer at ${median(runs.api).toFixed(0)} ms, the row seen by ${median(runs.seen).toFixed(0)} ms`,
  };
}

/** CPU ms used so far by each of Chromium's processes (every `chromium` process on the machine), by pid. */
function chromiumMs(): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('chrom')) continue;
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      byPid.set(pid, (Number(fields[11]) + Number(fields[12])) * TICK_MS);
    } catch {
      // Gone since the directory was read.
    }
  }
  return byPid;
}

/** Chromium's CPU ms between two readings: of the processes there at the end (a tab closed meanwhile takes its time with it). */
function chromiumSpent(before: Map<string, number>, after: Map<string, number>): number {
  let spent = 0;
  for (const [pid, ms] of after) spent += ms - (before.get(pid) ?? 0);
  return spent;
}

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);

// ——— The contexts ———

function options(storage: Storage, inspector: boolean, history: boolean): SyncOptions {
  return {
    storage,
    mutators: putMutators,
    authenticate: (request) => request.headers.get('authorization'),
    space: (request) => new URL(request.url).searchParams.get('space') ?? '',
    ...(history && { history: {} }),
    ...(inspector && { inspector: { secret: SECRET, onAction: () => {} } }),
    onError: (error) => console.error(error),
  };
}

/** Runs `count` calls of `fn`, `inFlight` at a time. */
async function pool(count: number, inFlight: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

// ——— 1. Weight ———

function weight(): Row[] {
  const files: Array<[string, string]> = [
    ['index.html', INDEX_HTML],
    ['app.js', APP_JS],
    ['app.css', APP_CSS],
    ['login.html', LOGIN_HTML],
  ];
  const sizes = (text: string) => {
    const raw = Buffer.from(text);
    return {
      raw: raw.byteLength,
      gzip9: gzipSync(raw, { level: 9 }).byteLength,
      gzip6: gzipSync(raw).byteLength,
      gzip4: gzipSync(raw, { level: 4 }).byteLength,
      br2: brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: 2, [constants.BROTLI_PARAM_SIZE_HINT]: raw.byteLength } }).byteLength,
    };
  };
  const rows: Row[] = [];
  const page = { raw: 0, gzip9: 0, gzip6: 0, gzip4: 0, br2: 0 };
  for (const [name, text] of files) {
    const s = sizes(text);
    if (name !== 'login.html') for (const k of Object.keys(page) as Array<keyof typeof page>) page[k] += s[k];
    rows.push({
      benchmark: `weight: ${name}`,
      value: s.raw,
      unit: 'B',
      note: `gzip -9 ${fmt(s.gzip9)} B, gzip -6 (default) ${fmt(s.gzip6)} B; as the Node adapter sends it: br q2 ${fmt(s.br2)} B (gzip -4 ${fmt(s.gzip4)} B)`,
    });
  }
  rows.push({
    benchmark: 'weight: the page (index.html + app.js + app.css)',
    value: page.raw,
    unit: 'B',
    note: `gzip -9 ${fmt(page.gzip9)} B, gzip -6 (default) ${fmt(page.gzip6)} B; br q2 ${fmt(page.br2)} B (gzip -4 ${fmt(page.gzip4)} B); each file compressed alone`,
  });
  return rows;
}

// ——— 2 and 3. The spaces list and the key browser ———

const note = (n: number) => ({ text: `Note ${n} of this space, written for the benchmark`, n });
const item = (n: number, change: number) => ({ title: `Item ${n} of the big space`, done: change % 2 === 1, order: n, tags: ['a', 'b'], changed: change });
const itemKey = (n: number) => `item/${String(n).padStart(6, '0')}`;
const spaceName = (n: number) => `space-${String(n).padStart(5, '0')}`;

async function reads(name: string, storage: Storage): Promise<Row[]> {
  const ctx = createContext(options(storage, true, true));
  const { base, server } = await listen(ctx);
  const rows: Row[] = [];
  try {
    const cookie = await login(base);
    const context = await browserContext(cookie);
    if (ONLY.includes('list')) {
      progress(`${name}: writing ${fmt(SPACES)} spaces of 3 entries`);
      const started = performance.now();
      await pool(SPACES, 64, (i) =>
        transact(ctx, spaceName(i), async (tx) => {
          for (let n = 0; n < 3; n++) await tx.set(`note/${n}`, note(i * 3 + n));
        }),
      );
      progress(`${name}: written in ${((performance.now() - started) / 1000).toFixed(1)} s; timing the list`);
      const list = await apiRuns(base, cookie, ['overview', 'spaces?limit=50']);
      const last = `spaces?limit=50&after=${spaceName(SPACES - 51)}`;
      const tail = await apiRuns(base, cookie, [last]);
      const lastPage = (await timeAPI(base, cookie, last)).body as { spaces: unknown[]; next?: string };
      if (lastPage.spaces.length !== 50 || lastPage.next !== undefined) throw new Error(`the last page holds ${lastPage.spaces.length} spaces`);
      rows.push(
        {
          benchmark: `${name}: list of ${fmt(SPACES)} spaces: api/overview + api/spaces?limit=50`,
          value: median(list.total),
          unit: 'ms',
          note: `one after the other, as the page calls them; ${apiNote(list.total)}`,
        },
        { benchmark: `${name}:   api/overview`, value: median(list.each[0]!), unit: 'ms', note: apiNote(list.each[0]!) },
        { benchmark: `${name}:   api/spaces?limit=50 (first page)`, value: median(list.each[1]!), unit: 'ms', note: apiNote(list.each[1]!) },
        {
          benchmark: `${name}:   api/spaces?limit=50&after=${spaceName(SPACES - 51)} (last page)`,
          value: median(tail.total),
          unit: 'ms',
          note: apiNote(tail.total),
        },
      );
      if (context !== undefined) {
        progress(`${name}: the spaces list in Chromium`);
        rows.push(pageRow(name, 'goto _inspect/ to the first row of the spaces table', await pageRuns(context, `${base}/_inspect/`)));
      }
    }
    if (ONLY.includes('keys')) {
      const space = 'big';
      progress(`${name}: writing a space of ${fmt(KEYS)} keys, 1,000 a version, then ${fmt(UPDATES)} versions of one update`);
      const started = performance.now();
      await pool(Math.ceil(KEYS / 1000), 8, (v) =>
        transact(ctx, space, async (tx) => {
          for (let n = v * 1000; n < Math.min(KEYS, v * 1000 + 1000); n++) await tx.set(itemKey(n), item(n, 0));
        }),
      );
      const filled = await versionOf(base, cookie, space);
      await pool(UPDATES, 64, (u) =>
        transact(ctx, space, async (tx) => {
          const n = (Math.imul(u + 1, 2654435761) >>> 0) % KEYS;
          await tx.set(itemKey(n), item(n, u + 1));
        }),
      );
      const now = await versionOf(base, cookie, space);
      progress(`${name}: written in ${((performance.now() - started) / 1000).toFixed(1)} s (version ${fmt(now)}); timing the key browser`);
      const middle = itemKey(Math.floor(KEYS / 2));
      const back = filled;
      const half = Math.floor(KEYS / 2000);
      const asked: Array<[string, string]> = [
        [`api/keys?limit=100 (first page, now)`, `keys?space=${space}&limit=100`],
        [`api/keys?limit=100&after=${middle} (the middle, now)`, `keys?space=${space}&limit=100&after=${middle}`],
        [`api/keys?limit=100&version=${back} (${fmt(now - back)} versions back, first page)`, `keys?space=${space}&limit=100&version=${back}`],
        [`api/keys?limit=100&version=${back}&after=${middle} (the middle)`, `keys?space=${space}&limit=100&version=${back}&after=${middle}`],
        [`api/keys?limit=100&version=${half} (${fmt(now - half)} versions back, half the keys unwritten)`, `keys?space=${space}&limit=100&version=${half}`],
        [`api/keys?limit=100&version=1 (${fmt(now - 1)} versions back: the first)`, `keys?space=${space}&limit=100&version=1`],
      ];
      for (const [label, path] of asked) {
        const { total } = await apiRuns(base, cookie, [path]);
        const page = (await timeAPI(base, cookie, path)).body as { entries: unknown[] };
        if (page.entries.length !== 100) throw new Error(`${path} read ${page.entries.length} entries`);
        rows.push({ benchmark: `${name}: space of ${fmt(KEYS)} keys: ${label}`, value: median(total), unit: 'ms', note: apiNote(total) });
        progress(`${name}: ${label}: median ${ms(median(total))} ms`);
      }
      if (context !== undefined) {
        progress(`${name}: the key browser in Chromium`);
        rows.push(
          pageRow(name, `goto #/space/${space}/keys to the first row of the keys table`, await pageRuns(context, `${base}/_inspect/#/space/${space}/keys`)),
        );
        rows.push(
          pageRow(
            name,
            `the same, ?version=${back} (${fmt(now - back)} versions back)`,
            await pageRuns(context, `${base}/_inspect/#/space/${space}/keys?version=${back}`),
          ),
        );
      }
    }
    await context?.close();
  } finally {
    await close(server);
  }
  return rows;
}

/** The space's version, as the key browser's first page says. */
async function versionOf(base: string, cookie: string, space: string): Promise<number> {
  const answer = await call(`${base}/_inspect/api/keys?space=${space}&limit=1`, { headers: { cookie, 'x-viewsync-inspector': '1' } });
  return (JSON.parse(answer.body.toString('utf8')) as { version: number }).version;
}

// ——— 4. Pushes with and without an inspector ———

type Arm = 'A' | 'B' | 'C';

async function pushCost(name: string, storage: Storage): Promise<Row[]> {
  const plain = await listen(createContext(options(storage, false, false)));
  const inspected = await listen(createContext(options(storage, true, false)));
  const cookie = await login(inspected.base);
  const context = await browserContext(cookie);
  const arms: Arm[] = context === undefined ? ['A', 'B'] : ['A', 'B', 'C'];
  const ids = new Map<string, number>();
  const run = Date.now().toString(36);

  /** CLIENTS clients pushing in a loop into `arm`'s spaces for `forMs`: pushes done in the window. */
  async function pushFor(arm: Arm, forMs: number): Promise<{ pushes: number; elapsed: number }> {
    const base = arm === 'A' ? plain.base : inspected.base;
    let pushes = 0;
    const start = performance.now();
    const end = start + forMs;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        // Client first, then arm: the arms' spaces lie side by side in the store's key order, none always last.
        const space = `push-${run}-${c}-${arm}`;
        while (performance.now() < end) {
          const id = (ids.get(space) ?? 0) + 1;
          ids.set(space, id);
          const body = JSON.stringify({
            pushVersion: 1,
            clientGroupID: `g-${space}`,
            profileID: 'p',
            schemaVersion: '',
            mutations: [{ clientID: `c-${space}`, id, name: 'put', args: { key: `k/${id % 100}`, value: { n: id, at: Date.now() } }, timestamp: Date.now() }],
          });
          const answer = await call(`${base}/push?space=${space}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: 'u' },
            body,
          });
          if (answer.status !== 200) throw new Error(`push answered ${answer.status}: ${answer.body}`);
          pushes++;
        }
      }),
    );
    return { pushes, elapsed: performance.now() - start };
  }

  interface Measured {
    rate: number;
    cpu: ReturnType<typeof cpuSpent>;
    chromium: number;
    polls: number;
    ms: number;
    /** This process's CPU ms a push (the clients' and the server's). */
    cpuPerPush: number;
  }
  async function round(arm: Arm, forMs: number): Promise<Measured> {
    const page = arm === 'C' ? await context!.newPage() : undefined;
    if (page !== undefined) {
      await page.goto(`${inspected.base}/_inspect/#/live`);
      // The latency table comes with the first draw.
      await page.getByRole('table').first().waitFor({ state: 'visible' });
    }
    const polls = inspected.apiCalls.count;
    const before = cpuSnapshot(process.pid, 'start');
    const chromium = chromiumMs();
    const { pushes, elapsed } = await pushFor(arm, forMs);
    const after = cpuSnapshot(process.pid, 'end');
    const measured = {
      rate: pushes / (elapsed / 1000),
      cpu: cpuSpent(before, after),
      chromium: chromiumSpent(chromium, chromiumMs()),
      polls: inspected.apiCalls.count - polls,
      ms: elapsed,
      cpuPerPush: cpuSpent(before, after).client / pushes,
    };
    await page?.close();
    return measured;
  }

  // What a poll of the live page costs the server: api/live through the adapter, as the tab calls it.
  const live = await apiRuns(inspected.base, cookie, ['live']);
  progress(`${name}: api/live median ${ms(median(live.total))} ms`);

  progress(`${name}: pushes, ${CLIENTS} clients, arms ${arms.join(' ')}: one untimed second each, then ${ROUNDS} rounds of ${ROUND_MS / 1000} s each`);
  for (const arm of arms) await round(arm, 1000);
  const got = new Map<Arm, Measured[]>(arms.map((arm) => [arm, []]));
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? arms : [...arms].reverse();
    const line: string[] = [];
    for (const arm of order) {
      const m = await round(arm, ROUND_MS);
      got.get(arm)!.push(m);
      line.push(`${arm} ${m.rate.toFixed(0)}/s`);
    }
    progress(`${name}: round ${r + 1}/${ROUNDS} (${order.join(' ')}): ${line.join(', ')}`);
  }
  await context?.close();
  await close(plain.server);
  await close(inspected.server);

  const rows: Row[] = [];
  const label: Record<Arm, string> = { A: 'A, no inspector', B: 'B, inspector, no page open', C: 'C, inspector, Chromium open on #/live' };
  const pct = (spent: number, m: Measured) => `${Math.round((spent / m.ms) * 100)}%`;
  for (const arm of arms) {
    const list = got.get(arm)!;
    const rates = list.map((m) => m.rate);
    const cpu = (pick: (m: Measured) => number) => pct(median(list.map((m) => (pick(m) / m.ms) * 1000)), { ms: 1000 } as Measured);
    rows.push({
      benchmark: `${name}: pushes/s, ${label[arm]}`,
      value: median(rates),
      unit: 'pushes/s',
      note: `median of ${ROUNDS} rounds, range ${range(rates, 0)}; CPU: this process ${cpu((m) => m.cpu.client)}, Chromium ${cpu((m) => m.chromium)}${name === 'PostgreSQL' ? `, PostgreSQL ${cpu((m) => m.cpu.postgres)}` : ''}, machine ${cpu((m) => m.cpu.machineBusy)} of 200%${arm === 'C' ? `; ${median(list.map((m) => m.polls))} API calls a round (the tab's polls)` : ''}`,
    });
  }
  for (const arm of arms.filter((a) => a !== 'A')) {
    const ratios = got.get('A')!.map((a, i) => a.rate / got.get(arm)![i]!.rate);
    rows.push({
      benchmark: `${name}: ${arm}/A, time per push (A's pushes/s over ${arm}'s)`,
      value: median(ratios),
      unit: 'x',
      note: `median of ${ROUNDS} rounds' ratios (aim for C: <= 1.02x); range ${range(ratios, 3)}; ratio of medians ${(median(got.get('A')!.map((m) => m.rate)) / median(got.get(arm)!.map((m) => m.rate))).toFixed(3)}`,
    });
  }
  for (const arm of arms) {
    const per = got.get(arm)!.map((m) => m.cpuPerPush * 1000);
    const ratios = got.get(arm)!.map((m, i) => m.cpuPerPush / got.get('A')![i]!.cpuPerPush);
    rows.push({
      benchmark: `${name}: this process's CPU a push, ${arm}${arm === 'A' ? '' : ` (${arm}/A)`}`,
      value: arm === 'A' ? median(per) : median(ratios),
      unit: arm === 'A' ? 'µs' : 'x',
      note:
        arm === 'A'
          ? `the clients' and the server's, both in this process; median of ${ROUNDS} rounds, range ${range(per, 0)}`
          : `median of ${ROUNDS} rounds' ratios to A's; range ${range(ratios, 3)}; ${median(per).toFixed(0)} µs a push`,
    });
  }
  rows.push({
    benchmark: `${name}: api/live, one poll of the #/live tab (B's context)`,
    value: median(live.total),
    unit: 'ms',
    note: `request to parsed body, as in 2; ${apiNote(live.total)}; the tab polls once a second`,
  });
  const aa = got.get('A')!.map((m) => m.rate);
  rows.push({
    benchmark: `${name}: A's spread, max/min over its rounds`,
    value: Math.max(...aa) / Math.min(...aa),
    unit: 'x',
    note: 'the noise an arm shows against itself',
  });
  return rows;
}

/** What counting one push costs the live numbers (`LiveStats.request`, called once per push and pull in a context with an inspector), in this process. */
function liveCount(): Row[] {
  const live = new LiveStats();
  const calls = 2_000_000;
  const times: number[] = [];
  for (let r = 0; r < 5; r++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) live.request('push', 200, 0.1 + (i % 1000) / 100, `space-${i % 8}`, 1);
    times.push(((performance.now() - start) * 1e6) / calls);
  }
  return [
    {
      benchmark: "LiveStats.request, the live numbers' count of one push",
      value: median(times),
      unit: 'ns',
      note: `${fmt(calls)} calls a round, median of 5 rounds, range ${range(times, 0)}; 8 spaces`,
    },
  ];
}

// ——— Main ———

const startLine = machineLine();
progress(startLine);
const rows: Row[] = [];
if (ONLY.includes('weight')) rows.push(...weight());
if (ONLY.includes('list') || ONLY.includes('keys')) rows.push(...(await eachStore(STORES, 'inspector-reads', reads)));
if (ONLY.includes('push')) rows.push(...liveCount(), ...(await eachStore(STORES, 'inspector-push', pushCost)));
await browser?.close();
agent.destroy();
console.log(`\nviewsync inspector benchmark: ${startLine}; at the end: ${machineLine().replace(/^.*load average /, 'load average ')}\n`);
console.log(renderTable(rows));
