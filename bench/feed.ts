/**
 * The change feed (`changes`): what it costs the writes, and how fast it reads back.
 *
 * 1. Push throughput, feed on against off, in process through `handlePush` (a Request, its body
 *    parsed, the mutations run, the client's record), on memory, SQLite (a file, WAL) and
 *    PostgreSQL (a real server, a pool of 4 connections: each-store.ts): two contexts on the same store, one with `changes: {}`, one
 *    without (the store's record of the feed removed before each of its rounds: see feed-record.ts). A round is PUSHES pushes of 10 mutations each (`put` of one key, a todo of about
 *    150 bytes of JSON; keys cycle over 500, so a round makes new keys first and then updates
 *    them, whose log rows hold the value before as well), into a space of its own made fresh
 *    for the round, so that every round writes the same rows into a space of the same size.
 *    Two loads: one client pushing one push after another, and 8 clients at once, each in a
 *    space of its own. Rounds alternate on, off, on, off... (ROUNDS of each, after one untimed
 *    round of each); figures are medians over rounds, and the ratio off/on is the median of
 *    each on round's time against its neighbouring off round's (how much slower the feed
 *    makes a push: aim <= 1.15x).
 * 2. Reading a whole space: the feed against an export, same space, same run. A space of
 *    ENTRIES entries (default 100,000) written with the feed on, one change each (1,000 sets a
 *    `transact`), so its log holds exactly one row per entry. Timed: `readChanges` from "0",
 *    10,000 changes a page, page after page until `more` is false (the changes as objects, not
 *    serialised); and `exportSpace` read to its end (the NDJSON bytes, not parsed). Alternating,
 *    READ_ROUNDS of each. Rows/s counts changes for the feed and entry lines for the export;
 *    MB/s counts the export's bytes, and for the feed its changes as NDJSON (one change's JSON a
 *    line, UTF-8: what a reader serving them on would send; measured outside the timer).
 *
 * Run: `npm run bench:feed` (about five minutes on 2 cores; starts a throwaway PostgreSQL with
 * scripts/start-postgres.sh unless DATABASE_URL is set). Env: STORES (memory,sqlite,postgres),
 * ONLY (push, read), ROUNDS (9), READ_ROUNDS (5), ENTRIES (100000), PUSHES (per round, by store:
 * memory 2,000, SQLite 800, PostgreSQL 300 for one client; the 8-client load does the same total,
 * 1/8 each).
 * Not part of `npm test`. Progress on stderr, the table on stdout.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { createContext, handlePush, type Storage, type SyncContext } from '../src/index.js';
import { readChanges, transact } from '../src/backend.js';
import { exportSpace } from '../src/ops.js';
import { FEED_RECORD } from '../src/sync/feed/feed-record.js';
import { machineLine } from './cpu.js';
import { eachStore } from './each-store.js';
import { collectGarbage, median, progress } from './measure.js';
import { renderTable, type Row } from './table.js';
import { putMutators, todo } from './todos.js';

const root = new URL('..', import.meta.url).pathname;
const STORES = (process.env.STORES ?? 'memory,sqlite,postgres').split(',');
const ONLY = (process.env.ONLY ?? 'push,read').split(',');
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const READ_ROUNDS = Number(process.env.READ_ROUNDS ?? 5);
const ENTRIES = Number(process.env.ENTRIES ?? 100_000);
const BATCH = 10;
const KEYS = 500;
const CLIENTS = 8;
const PUSHES: Record<string, number> = { memory: 2000, SQLite: 800, PostgreSQL: 300 };
if (STORES.includes('postgres')) process.env.DATABASE_URL ??= execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim();

const mutators = putMutators;

function contextFor(storage: Storage, feed: boolean): SyncContext {
  return createContext({
    storage,
    mutators,
    ...(feed && { changes: {} }),
    authenticate: () => 'u',
    space: (request) => new URL(request.url).searchParams.get('space') ?? '',
    retention: { clientGroupsMs: false, tombstonesMs: false },
    onError: (error) => console.error(error),
  });
}

/** Pushes `count` pushes of BATCH mutations into `space`, one after another, as one client. */
async function pushes(ctx: SyncContext, space: string, count: number): Promise<void> {
  let id = 0;
  for (let push = 0; push < count; push++) {
    const mutations = Array.from({ length: BATCH }, (_, j) => {
      const n = (push * BATCH + j) % KEYS;
      return { clientID: 'c', id: ++id, name: 'put', args: { key: `todo/${String(n).padStart(4, '0')}`, value: todo(n, push) }, timestamp: 0 };
    });
    const body = JSON.stringify({ pushVersion: 1, clientGroupID: 'g', profileID: 'p', schemaVersion: '', mutations });
    const response = await handlePush(
      new Request(`http://bench/push?space=${encodeURIComponent(space)}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'u' },
        body,
      }),
      ctx,
    );
    if (response.status !== 200) throw new Error(`push: ${response.status} ${await response.text()}`);
    await response.body?.cancel();
  }
}

let runID = 0;

async function pushThroughput(name: string, storage: Storage): Promise<Row[]> {
  const contexts = { on: contextFor(storage, true), off: contextFor(storage, false) };
  const count = Number(process.env.PUSHES ?? PUSHES[name] ?? 200);
  const rows: Row[] = [];
  for (const clients of [1, CLIENTS]) {
    const per = Math.max(1, Math.round(count / clients));
    const ms = { on: [] as number[], off: [] as number[] };
    for (let round = -1; round < ROUNDS; round++) {
      for (const side of ['on', 'off'] as const) {
        // The feed is the store's: once the on context wrote, every writer would keep the log in
        // a new space. The off rounds stand for a store that never had it, so its record goes.
        if (side === 'off') await storage.transaction((tx) => tx.del(FEED_RECORD), { readOnly: false });
        collectGarbage();
        const run = ++runID;
        const start = performance.now();
        await Promise.all(Array.from({ length: clients }, (_, c) => pushes(contexts[side], `feed-${side}-${run}-${c}`, per)));
        const elapsed = performance.now() - start;
        if (round >= 0) ms[side].push(elapsed);
      }
      if (round >= 0)
        progress(
          `${name}, ${clients} client(s): round ${round + 1}/${ROUNDS}: on ${(ms.on.at(-1)! / (per * clients)).toFixed(2)} ms/push, off ${(ms.off.at(-1)! / (per * clients)).toFixed(2)} ms/push`,
        );
    }
    const total = per * clients;
    const rate = (times: number[]) => total / (median(times) / 1000);
    // Each on round against the off round right after it (same position in the alternation).
    const ratios = ms.on.map((t, i) => t / ms.off[i]!);
    const load = clients === 1 ? '1 client' : `${clients} clients in ${clients} spaces`;
    for (const side of ['off', 'on'] as const) {
      const pushesPerSecond = rate(ms[side]);
      rows.push({
        benchmark: `${name}: push, ${load}, feed ${side}`,
        value: pushesPerSecond,
        unit: 'pushes/s',
        note: `${Math.round(pushesPerSecond * BATCH).toLocaleString('en-US')} mutations/s; ${total} pushes of ${BATCH} a round, median of ${ROUNDS}; range ${Math.round(total / (Math.max(...ms[side]) / 1000))}-${Math.round(total / (Math.min(...ms[side]) / 1000))}`,
      });
    }
    rows.push({
      benchmark: `${name}: push, ${load}, off / on`,
      value: median(ratios),
      unit: 'x',
      note: `how much slower with the feed: median of ${ROUNDS} alternating rounds' ratios (aim <= 1.15x); range ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}; ratio of medians ${(median(ms.on) / median(ms.off)).toFixed(2)}`,
    });
  }
  return rows;
}

/** The whole feed of `space`, 10,000 a page: changes, and the UTF-8 bytes of their JSON (when `measure`). */
async function readFeed(ctx: SyncContext, space: string, pages?: Array<{ changes: unknown[] }>): Promise<number> {
  let after = '0';
  let rows = 0;
  for (;;) {
    const page = await readChanges(ctx, space, { after, limit: 10_000 });
    rows += page.changes.length;
    pages?.push(page);
    after = page.cursor;
    if (!page.more) return rows;
  }
}

/** The export of `space` read to its end: entry lines (all lines less the header, the end line and client groups' lines), and bytes. */
async function readExport(ctx: SyncContext, space: string): Promise<{ lines: number; bytes: number }> {
  let bytes = 0;
  let lines = 0;
  const reader = exportSpace(ctx, space).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { lines, bytes };
    bytes += value.length;
    for (let i = value.indexOf(10); i !== -1; i = value.indexOf(10, i + 1)) lines++;
  }
}

async function readRate(name: string, storage: Storage): Promise<Row[]> {
  const ctx = contextFor(storage, true);
  const space = `read-${++runID}`;
  progress(`${name}: writing ${ENTRIES.toLocaleString('en-US')} entries with the feed on`);
  for (let from = 0; from < ENTRIES; from += 1000) {
    await transact(ctx, space, async (tx) => {
      for (let n = from; n < Math.min(ENTRIES, from + 1000); n++) await tx.set(`todo/${String(n).padStart(7, '0')}`, todo(n, 0));
    });
  }
  // Sizes, untimed: the feed's changes as JSON, the export's bytes and lines.
  const pages: Array<{ changes: unknown[] }> = [];
  const feedRows = await readFeed(ctx, space, pages);
  const feedBytes = pages.reduce(
    (sum, page) => sum + page.changes.reduce<number>((bytes, change) => bytes + Buffer.byteLength(JSON.stringify(change)) + 1, 0),
    0,
  );
  pages.length = 0;
  const exported = await readExport(ctx, space);
  // Header and end line; the space has no client groups (written by `transact`).
  const exportRows = exported.lines - 2;
  if (feedRows !== ENTRIES || exportRows !== ENTRIES)
    throw new Error(`${name}: the feed read ${feedRows} changes and the export ${exportRows} entries, not ${ENTRIES}`);
  const ms = { feed: [] as number[], export: [] as number[] };
  for (let round = 0; round < READ_ROUNDS; round++) {
    for (const side of round % 2 === 0 ? (['feed', 'export'] as const) : (['export', 'feed'] as const)) {
      collectGarbage();
      const start = performance.now();
      if (side === 'feed') await readFeed(ctx, space);
      else await readExport(ctx, space);
      ms[side].push(performance.now() - start);
    }
    progress(`${name}: read round ${round + 1}/${READ_ROUNDS}: feed ${ms.feed.at(-1)!.toFixed(0)} ms, export ${ms.export.at(-1)!.toFixed(0)} ms`);
  }
  const ratios = ms.feed.map((t, i) => t / ms.export[i]!);
  const mb = (bytes: number, times: number[]) => bytes / 1e6 / (median(times) / 1000);
  const rowsPerS = (times: number[]) => ENTRIES / (median(times) / 1000);
  return [
    {
      benchmark: `${name}: read ${ENTRIES.toLocaleString('en-US')}, feed (readChanges, 10,000 a page)`,
      value: rowsPerS(ms.feed),
      unit: 'rows/s',
      note: `${mb(feedBytes, ms.feed).toFixed(1)} MB/s as NDJSON (${(feedBytes / 1e6).toFixed(1)} MB, ${Math.round(feedBytes / ENTRIES)} B a change); median ${median(ms.feed).toFixed(0)} ms of ${READ_ROUNDS}`,
    },
    {
      benchmark: `${name}: read ${ENTRIES.toLocaleString('en-US')}, export (exportSpace to its end)`,
      value: rowsPerS(ms.export),
      unit: 'rows/s',
      note: `${mb(exported.bytes, ms.export).toFixed(1)} MB/s of NDJSON (${(exported.bytes / 1e6).toFixed(1)} MB, ${Math.round(exported.bytes / ENTRIES)} B a line); median ${median(ms.export).toFixed(0)} ms of ${READ_ROUNDS}`,
    },
    {
      benchmark: `${name}: read, feed time / export time`,
      value: median(ratios),
      unit: 'x',
      note: `median of ${READ_ROUNDS} alternating rounds' ratios; range ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}`,
    },
  ];
}

const startLine = machineLine();
progress(startLine);
const rows: Row[] = [];
if (ONLY.includes('push')) rows.push(...(await eachStore(STORES, 'feed-push', pushThroughput)));
if (ONLY.includes('read')) rows.push(...(await eachStore(STORES, 'feed-read', readRate)));
console.log(`\nviewsync change feed benchmark: ${startLine}; at the end: ${machineLine().replace(/^.*load average /, 'load average ')}\n`);
console.log(renderTable(rows));
