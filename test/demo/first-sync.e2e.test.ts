import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { serve, type SyncServer } from '../../adapters/node.js';
import { createContext, memoryStorage, type Mutators } from '../../src/index.js';
import type { firstSync, FirstSyncRun } from '../../bench/first-sync-client.js';
import { mutation, push, testMutators } from '../support/helpers.js';

// A first sync in pages in Chromium: the stock client, in a page, with its IndexedDB, fills a
// space of 40,000 entries a page at a time, poked for each (bench/first-sync.ts runs it at a
// million, by hand).
const CHROMIUM = '/usr/bin/chromium';
const ENTRIES = 40_000;
const keyOf = (i: number) => `item/${String(i).padStart(8, '0')}`;
const mutators: Mutators = {
  ...testMutators,
  fill: async (tx, { from, count }: { from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.set(keyOf(i), { title: `Item ${i} `.padEnd(120, '.'), done: false });
  },
};

describe.skipIf(!existsSync(CHROMIUM))('a first sync in pages in Chromium', () => {
  const closing: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const close of closing.reverse()) await close();
  });

  it('the stock client fills a space of 40,000 entries in pages of 1 MiB, each after a poke', async () => {
    const ctx = createContext({ storage: memoryStorage(), mutators, space: () => 'big', firstSync: { pageBytes: 2 ** 20 } });
    const fills = [];
    for (let from = 0, id = 1; from < ENTRIES; from += 10_000, id++) fills.push(mutation('filler', id, 'fill', { from, count: 10_000 }));
    await push(ctx, 'filler-group', fills);
    const sync: SyncServer = await serve(ctx, { port: 0 });
    closing.push(() => sync.stop());
    const bundle = await build({
      entryPoints: [new URL('../../bench/first-sync-client.ts', import.meta.url).pathname],
      bundle: true,
      write: false,
      format: 'iife',
      globalName: 'bench',
      platform: 'browser',
      logLevel: 'warning',
    });
    const page: Server = createServer((req, res) => {
      if (req.url === '/client.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle.outputFiles[0]!.contents);
      else res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script src="/client.js"></script>');
    });
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    closing.push(() => new Promise((resolve) => page.close(resolve)));
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    closing.push(() => browser.close());
    const tab = await browser.newPage();
    await tab.goto(`http://127.0.0.1:${(page.address() as AddressInfo).port}/`);
    const base = sync.url.href.replace(/\/$/, '');
    const run = (await tab.evaluate(
      ({ base, entries }) => (globalThis as unknown as { bench: { firstSync: typeof firstSync } }).bench.firstSync(base, 'big', entries),
      { base, entries: ENTRIES },
    )) as FirstSyncRun;
    console.log(
      `Chromium: ${run.held} entries in ${run.ms} ms, ${run.pulls} pulls (${run.pages} pages), largest answer ${run.largest} bytes; filled ${run.progress.map(([, entries]) => entries).join(', ')}`,
    );
    expect(run.held).toBe(ENTRIES);
    expect(run.pages).toBeGreaterThanOrEqual(4);
    expect(run.largest).toBeLessThan(2 ** 20 + 8_192);
    // Each page took the client further.
    const reached = run.progress.map(([, entries]) => entries);
    expect(reached.every((entries, i) => i === 0 || entries >= reached[i - 1]!)).toBe(true);
  }, 120_000);
});
