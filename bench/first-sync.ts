/**
 * A first sync in pages with the stock client: a space of ENTRIES (default 1,000,000) on the
 * store server (bench/store-server.ts, its own process, `firstSync` pages of PAGE_BYTES, default
 * 4 MiB; 0 for none, the baseline), synced from nothing by the real `replicache` client and `connectPokes`
 * (bench/first-sync-client.ts) in Node (fake-indexeddb, in this process) and in Chromium
 * (its IndexedDB). For each: the time to the last page, the pulls, the largest answer, the
 * client's peak memory (Node: this process's resident memory; Chromium: the page's JS heap), and
 * how far each page got and when.
 *
 * Run: `npm run bench:first-sync` (CLIENTS=node,chromium; STORE=sqlite|memory|postgres; Chromium
 * from scripts/install-chromium.sh). Not part of `npm test`. Progress on stderr, results on stdout.
 */
import 'fake-indexeddb/auto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { firstSync, type FirstSyncRun } from './first-sync-client.js';
import { progress } from './measure.js';
import { startStoreServer } from './poke-clients.js';

const ENTRIES = Number(process.env.ENTRIES ?? 1_000_000);
const PAGE_BYTES = Number(process.env.PAGE_BYTES ?? 4 * 2 ** 20);
const CLIENTS = (process.env.CLIENTS ?? 'node,chromium').split(',');
const STORE = process.env.STORE ?? 'sqlite';
const dir = mkdtempSync(join(tmpdir(), 'viewsync-first-sync-'));

const residentMiB = () => Number(readFileSync('/proc/self/status', 'utf8').match(/VmRSS:\s+(\d+)/)![1]) / 1024;

const server = await startStoreServer(STORE, STORE === 'sqlite' ? join(dir, 'space.db') : STORE === 'postgres' ? `first_sync_${process.pid}` : undefined, {
  // PAGE_BYTES=0: no pages, the baseline (one answer, sent as it is read).
  ...(PAGE_BYTES > 0 && { FIRST_SYNC_PAGE_BYTES: String(PAGE_BYTES) }),
  ...(process.env.DATABASE_URL && { DATABASE_URL: process.env.DATABASE_URL }),
});
const base = `http://127.0.0.1:${server.port}`;
const space = 'big';
try {
  progress(`seeding ${ENTRIES.toLocaleString('en-US')} entries (${STORE})`);
  for (let from = 0, id = 1; from < ENTRIES; from += 5_000, id++) {
    const mutations = [{ clientID: 'seeder', id, name: 'seed', args: { from, count: Math.min(5_000, ENTRIES - from) }, timestamp: 0 }];
    const response = await fetch(`${base}/push?space=${space}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pushVersion: 1, clientGroupID: 'seed', profileID: 'bench', schemaVersion: '', mutations }),
    });
    if (response.status !== 200) throw new Error(`seeding failed: ${response.status} ${await response.text()}`);
  }
  const results: Array<[string, FirstSyncRun, number]> = [];
  if (CLIENTS.includes('node')) {
    progress('the client in Node');
    const before = residentMiB();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, residentMiB())), 50);
    const run = await firstSync(base, space, ENTRIES);
    clearInterval(sampler);
    results.push(['node', run, peak - before]);
  }
  if (CLIENTS.includes('chromium')) {
    progress('the client in Chromium');
    const bundle = await build({
      entryPoints: [new URL('./first-sync-client.ts', import.meta.url).pathname],
      bundle: true,
      write: false,
      format: 'iife',
      globalName: 'bench',
      platform: 'browser',
      logLevel: 'warning',
    });
    const page = createServer((req, res) => {
      if (req.url === '/client.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle.outputFiles[0]!.contents);
      else res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><script src="/client.js"></script>');
    });
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    try {
      const tab = await browser.newPage();
      await tab.goto(`http://127.0.0.1:${(page.address() as AddressInfo).port}/`);
      const cdp = await tab.context().newCDPSession(tab);
      await cdp.send('Performance.enable');
      const heapMiB = async () => ((await cdp.send('Performance.getMetrics')).metrics.find((metric) => metric.name === 'JSHeapUsedSize')?.value ?? 0) / 2 ** 20;
      const before = await heapMiB();
      let peak = before;
      const sampler = setInterval(
        () =>
          void heapMiB().then(
            (mib) => (peak = Math.max(peak, mib)),
            () => {},
          ),
        200,
      );
      const run = (await tab.evaluate(
        ({ base, space, entries }) => (globalThis as unknown as { bench: { firstSync: typeof firstSync } }).bench.firstSync(base, space, entries),
        { base, space, entries: ENTRIES },
      )) as FirstSyncRun;
      clearInterval(sampler);
      results.push(['chromium', run, peak - before]);
    } finally {
      await browser.close();
      page.close();
    }
  }
  for (const [client, run, peak] of results) {
    console.log(
      `${client}: ${ENTRIES.toLocaleString('en-US')} entries (${STORE}) in ${(run.ms / 1000).toFixed(1)} s, ${run.pulls} pulls (${PAGE_BYTES > 0 ? `${run.pages} pages of ${(PAGE_BYTES / 2 ** 20).toFixed(0)} MiB` : 'no pages'}), largest answer ${(run.largest / 2 ** 20).toFixed(2)} MiB, client peak +${peak.toFixed(0)} MiB, held ${run.held.toLocaleString('en-US')}`,
    );
    const every = Math.max(1, Math.floor(run.progress.length / 10));
    console.log(
      `  filled: ${run.progress
        .filter((_, i) => i % every === 0 || i === run.progress.length - 1)
        .map(([ms, entries]) => `${(ms / 1000).toFixed(1)} s ${entries.toLocaleString('en-US')}`)
        .join(' · ')}`,
    );
  }
} finally {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
