import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../package/packed.js';
import { addTodo, completedLabels, countText, type DemoServer, item, labels, openTodoPage, type PageError, startDemo } from './todo-app.js';

// The TodoMVC demo (`npm start`) in two browser contexts, two client groups: what one does, the
// other sees, through pokes, across a server restart and a server that was down.
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = join(ROOT, 'test-results', 'demo');
if (!existsSync(CHROMIUM)) console.log(`Skipping the TodoMVC browser test: no Chromium at ${CHROMIUM} (apt-get install chromium).`);

describe.skipIf(!existsSync(CHROMIUM))('the TodoMVC demo in two browsers', () => {
  let dataDir: string;
  const errors: PageError[] = [];
  const serverOutput: string[] = [];
  let serverDown = false;
  let server: DemoServer;
  let browser: Browser;
  let a: Page;
  let b: Page;
  // Seen on page B within this, or the poke (or the pull after it) went missing.
  const soon = { timeout: 5_000, interval: 20 };

  const snap = async (step: string) => {
    await a.screenshot({ path: join(ARTIFACTS, `${step}-a.png`) });
    await b.screenshot({ path: join(ARTIFACTS, `${step}-b.png`) });
  };
  const stopServer = async () => {
    serverDown = true;
    await server.stop();
    serverOutput.push(server.output());
  };
  const startServer = async () => {
    server = await startDemo(Number(server.url.port), dataDir);
    serverDown = false;
  };

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    dataDir = mkdtempSync(join(tmpdir(), 'viewsync-demo-'));
    server = await startDemo(0, dataDir);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    });
    a = await openTodoPage(browser, server.url, 'A', errors, () => serverDown);
    b = await openTodoPage(browser, server.url, 'B', errors, () => serverDown);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (server) await stopServer();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts empty, with the list and footer hidden', async () => {
    for (const page of [a, b]) {
      expect(await page.locator('.main').isVisible()).toBe(false);
      expect(await page.locator('.footer').isVisible()).toBe(false);
    }
  });

  it('adds, completes, edits and deletes on one page and shows it on the other', async () => {
    for (const text of ['Buy milk', '  Walk the dog  ', 'Write tests', 'Read a book']) await addTodo(a, text);
    await addTodo(a, '   ');
    await expect.poll(() => labels(a), soon).toEqual(['Buy milk', 'Walk the dog', 'Write tests', 'Read a book']);
    await expect.poll(() => labels(b), soon).toEqual(['Buy milk', 'Walk the dog', 'Write tests', 'Read a book']);
    expect(await countText(b)).toBe('4 items left');
    await snap('1-added');

    await item(a, 'Walk the dog').locator('.toggle').check();
    await expect.poll(() => completedLabels(b), soon).toEqual(['Walk the dog']);
    expect(await countText(b)).toBe('3 items left');
    expect(await b.locator('.clear-completed').isVisible()).toBe(true);

    await item(b, 'Buy milk').locator('label').dblclick();
    await b.fill('.todo-list li.editing .edit', '  Buy oat milk ');
    await b.press('.todo-list li.editing .edit', 'Enter');
    await expect.poll(() => labels(a), soon).toEqual(['Buy oat milk', 'Walk the dog', 'Write tests', 'Read a book']);

    // Escape cancels; saving empty text deletes.
    await item(b, 'Write tests').locator('label').dblclick();
    await b.fill('.todo-list li.editing .edit', 'Not this');
    await b.press('.todo-list li.editing .edit', 'Escape');
    expect(await labels(b)).toContain('Write tests');
    await item(b, 'Read a book').locator('label').dblclick();
    await b.fill('.todo-list li.editing .edit', '');
    await b.press('.todo-list li.editing .edit', 'Enter');
    await expect.poll(() => labels(a), soon).toEqual(['Buy oat milk', 'Walk the dog', 'Write tests']);

    await item(a, 'Write tests').hover();
    await item(a, 'Write tests').locator('.destroy').click();
    await expect.poll(() => labels(b), soon).toEqual(['Buy oat milk', 'Walk the dog']);
    expect(await countText(b)).toBe('1 item left');
    await snap('2-edited');
  });

  it('filters by the URL hash', async () => {
    await a.click('.filters a[href="#/active"]');
    await expect.poll(() => labels(a), soon).toEqual(['Buy oat milk']);
    expect(await a.locator('.filters a.selected').textContent()).toBe('Active');
    await a.click('.filters a[href="#/completed"]');
    await expect.poll(() => labels(a), soon).toEqual(['Walk the dog']);
    await a.click('.filters a[href="#/"]');
    await expect.poll(() => labels(a), soon).toEqual(['Buy oat milk', 'Walk the dog']);
    expect(await a.locator('.filters a.selected').textContent()).toBe('All');
  });

  it('toggles all and clears the completed on either page', async () => {
    await a.click('label[for="toggle-all"]');
    await expect.poll(() => completedLabels(b), soon).toEqual(['Buy oat milk', 'Walk the dog']);
    expect(await b.locator('.toggle-all').isChecked()).toBe(true);
    expect(await countText(b)).toBe('0 items left');
    await snap('3-all-completed');

    await b.click('.clear-completed');
    await expect.poll(() => a.locator('.main').isVisible(), soon).toBe(false);
    expect(await a.locator('.footer').isVisible()).toBe(false);
    expect(await labels(a)).toEqual([]);
  });

  it('shows an item added on one page on the other within a poke: p50 and p95 over 30 items', async () => {
    // In-page clocks on both ends: A notes the time as Enter goes down (before the app's own
    // handler), B the moment a label with that text enters its list.
    await a.evaluate(() => {
      const sent: Record<string, number> = ((window as unknown as { sent: Record<string, number> }).sent = {});
      document.addEventListener(
        'keydown',
        (event) => {
          const input = event.target as HTMLInputElement;
          if (event.key === 'Enter' && input.matches('.new-todo')) sent[input.value.trim()] = Date.now();
        },
        true,
      );
    });
    await b.evaluate(() => {
      const seen: Record<string, number> = ((window as unknown as { seen: Record<string, number> }).seen = {});
      new MutationObserver(() => {
        for (const label of document.querySelectorAll('.todo-list li label')) seen[label.textContent!] ??= Date.now();
      }).observe(document.querySelector('.todo-list')!, { childList: true, subtree: true, characterData: true });
    });
    const texts = Array.from({ length: 30 }, (_, index) => `Item ${index + 1}`);
    for (const text of texts) {
      await addTodo(a, text);
      await b.waitForFunction((text) => text in (window as unknown as { seen: object }).seen, text, { timeout: 5_000, polling: 10 });
      // Apart as a person types: the server sends a burst's later pokes together, 50 ms apart.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const sent = await a.evaluate(() => (window as unknown as { sent: Record<string, number> }).sent);
    const seen = await b.evaluate(() => (window as unknown as { seen: Record<string, number> }).seen);
    const latencies = texts.map((text) => seen[text]! - sent[text]!).sort((x, y) => x - y);
    const percentile = (p: number) => latencies[Math.ceil(p * latencies.length) - 1]!;
    const result = { items: latencies.length, p50Ms: percentile(0.5), p95Ms: percentile(0.95), maxMs: latencies.at(-1), samplesMs: latencies };
    console.log(`Poke latency, Enter on A to label on B, ${result.items} items: p50 ${result.p50Ms} ms, p95 ${result.p95Ms} ms (aim: p50 < 50 ms)`);
    writeFileSync(join(ARTIFACTS, 'latency.json'), `${JSON.stringify(result, null, 2)}\n`);
    expect(latencies.every((ms) => ms >= 0)).toBe(true);
    // Only catches pokes that do not arrive (the client's pull each 60 s would deliver): p95 71 ms
    // here, on 2 cores under a load of 5.
    expect(result.p95Ms).toBeLessThan(2_000);
    await snap('4-latency');
  });

  it('keeps working across a server restart on the same port and data', async () => {
    await a.click('label[for="toggle-all"]');
    await b.click('.clear-completed');
    await expect.poll(() => labels(a), soon).toEqual([]);
    await addTodo(b, 'Before the restart');
    await expect.poll(() => labels(a), soon).toEqual(['Before the restart']);

    await stopServer();
    await startServer();
    // The poke streams reconnect (and pull) by themselves; give them a few seconds.
    await addTodo(b, 'After the restart');
    await expect.poll(() => labels(a), { timeout: 10_000, interval: 50 }).toEqual(['Before the restart', 'After the restart']);
    await item(a, 'Before the restart').locator('.toggle').check();
    await expect.poll(() => completedLabels(b), soon).toEqual(['Before the restart']);
    await snap('5-restarted');
  }, 40_000);

  it('delivers an item added while the server was down once it is back', async () => {
    await stopServer();
    await addTodo(a, 'Added while the server was down');
    await expect.poll(() => labels(a), soon).toContain('Added while the server was down');
    // Long enough for A's push to fail and back off at least once.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await startServer();
    await expect
      .poll(() => labels(b), { timeout: 20_000, interval: 100 })
      .toEqual(['Before the restart', 'After the restart', 'Added while the server was down']);
    await snap('6-back-online');
  }, 40_000);

  it('a new page’s first pull, over the compression threshold, comes back br-encoded and shows every item', async () => {
    const texts = Array.from({ length: 20 }, (_, index) => `A longer item, so that the space's full pull passes 1 KiB: number ${index + 1}`);
    const before = (await labels(a)).length;
    for (const text of texts) await addTodo(a, text);
    await expect.poll(() => labels(b), soon).toHaveLength(before + 20);
    const page = await (await browser.newContext()).newPage();
    const pulls: Array<{ accept: string | null; encoding: string | null; patch: unknown[] }> = [];
    page.on('response', (response) => {
      if (!new URL(response.url()).pathname.endsWith('/pull')) return;
      void (async () => {
        const { patch } = (await response.json()) as { patch: unknown[] };
        pulls.push({ accept: await response.request().headerValue('accept-encoding'), encoding: await response.headerValue('content-encoding'), patch });
        // A later pull answered as the page closes has no body left to read; the first is what counts.
      })().catch(() => {});
    });
    page.on('pageerror', (error) => errors.push({ page: 'C', text: `${error.name}: ${error.message}`, serverDown: serverDown }));
    await page.goto(server.url.href);
    await expect.poll(() => labels(page), soon).toEqual(await labels(a));
    await expect.poll(() => pulls.length, soon).toBeGreaterThan(0);
    expect(pulls[0]).toMatchObject({ accept: expect.stringMatching(/\bbr\b/), encoding: 'br' });
    expect(pulls[0]!.patch.length).toBeGreaterThan(20);
    await page.context().close();
  });

  it('logged no errors in either page, nor on the server', async () => {
    // Chromium logs a failed request as a console error: a refused connection, the poke stream
    // cut off as the server stops, or a poke stream opened while it stops (503, "shutting down;
    // reconnect to another"). Expected only while the test had the server stopped.
    const expected = /net::(ERR_CONNECTION_REFUSED|ERR_INCOMPLETE_CHUNKED_ENCODING)|Failed to fetch|status of 503 \(Service Unavailable\)/;
    const unexpected = errors.filter((error) => !(error.serverDown && expected.test(error.text)));
    expect(unexpected).toEqual([]);
    // A server the test stopped says so, and nothing else.
    for (const output of [...serverOutput, server.output()])
      expect(output.trim()).toMatch(
        /^TodoMVC on viewsync: \S+ \(SQLite store: [^\n]+\)\nThe inspector: \S+\/api\/_inspect\/ \(log in with the secret [\w-]{32}, made for this run\)(\nStopping: answering the requests in flight…)?$/,
      );
  });
});
