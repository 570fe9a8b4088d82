/**
 * History (`history`): what reading and restoring a space as of an old version cost against an
 * export and an import of it, what keeping every version costs pushes, and what it takes in the
 * store.
 *
 * On memory, SQLite (a file, WAL) and PostgreSQL (a real server, a pool of 4 connections:
 * each-store.ts), one context with `history: {}` (the change log, and checkpoints written by
 * housekeeping: every 1,000 versions or the space's entries, whichever is more). A space is
 * written by `transact`, 64 at a time in flight (group commit puts them in one storage
 * transaction, each still its own commit and version). Its entries are ENTRIES todos (default
 * 100,000, about 150 bytes of JSON each, 1,000 to a version); each later version updates 1, 2 or
 * 3 existing todos (in turn), picked at random, its value changed (`done`, `updatedAt`).
 *
 * 1. Reading as of a version BACK versions back (default 10,000): `at(ctx, space, version)`, all
 *    entries (parsed values, as it returns them), against `exportSpace` of the space now, read to
 *    its end (the NDJSON bytes, not parsed), and `at` the space's version now (the live entries
 *    parsed, nothing to undo: what the values' parsing alone costs), turning which goes first,
 *    READ_ROUNDS of each.
 *    Twice, in the same space: (a) when the space holds ENTRIES entries and BACK versions since
 *    (no checkpoint is due before ENTRIES versions): the base is the live entries, the BACK
 *    versions between undone; (b) after writing on to ENTRIES + 100 versions, housekeeping
 *    (`collectGarbage` of the space) every 10,000 versions, which begins and builds a checkpoint
 *    once due, then BACK + 2,000 versions more: the base is that checkpoint, 2,000 versions
 *    before the version read, which are redone. Which base a read used is worked out as
 *    as-of.ts does (the whole checkpoint nearest the version, or the live entries) and shown.
 *    Ratios: each round's `at` time over the same round's export time (and `at` now's), median
 *    of the rounds.
 * 2. Restoring: `restoreSpace(ctx, space, { to })`, BACK versions back, against `importSpace` of
 *    the space's export (taken untimed, held in memory) into a fresh space (`replace`), same
 *    context (so the import writes its change log too). Each of RESTORE_ROUNDS rounds builds a
 *    fresh space untimed (ENTRIES entries, BACK versions: the live base, undone), then times the
 *    restore and the import, alternating which goes first. Ratio: restore / import, per round.
 * 3. Pushes with history kept against the feed alone, through `handlePush` as in feed.ts (PUSHES
 *    pushes of 10 `put`s of a todo, keys cycling over 500; one client, and 8 clients each in a
 *    space of its own): two contexts on the same store, `history: {}` and `changes: {}`, with
 *    default retention, so that housekeeping runs after pushes as it does in production, once a
 *    minute per space: the contexts' clock runs 60 times fast (a minute a second), and a round
 *    ends once the housekeeping its pushes started has finished (so its cost is in the round's
 *    time). Each side pushes into the same spaces every round (a checkpoint is due every 1,000
 *    versions there; they pile up, as the log does). Rounds alternate history, feed, history...
 *    (ROUNDS of each after one untimed round of each); the ratio is each history round's time
 *    over the feed round right after it, median of the rounds.
 * 4. Storage: a space of STORAGE_ENTRIES todos (default 10,000) taking VERSIONS versions (default
 *    1,000,000), each an update of one todo picked at random, housekeeping (`collectGarbage`) every
 *    10,000 versions, so a checkpoint is begun every STORAGE_ENTRIES versions. Then every row of
 *    the store counted by prefix (`e/` entries, `v/` their version index, `f/` the change log,
 *    `p/` checkpoint rows, `q/` their records, the rest), rows and bytes (key and value as JSON,
 *    UTF-8: what the SQL stores hold as text), and on SQLite the file: as written (after a WAL
 *    checkpoint), and copies (`VACUUM INTO`) whole, without the checkpoints (the live data and the
 *    bare change log), and without the change log either (the live data alone). On STORAGE_STORES
 *    (default memory,sqlite: a million versions on PostgreSQL take five minutes more or longer).
 *
 * Run: `npm run bench:history` (about 25 minutes on 2 cores, most of it writing the spaces;
 * starts a throwaway PostgreSQL with scripts/start-postgres.sh unless DATABASE_URL is set). Env: STORES (memory,sqlite,postgres),
 * ONLY (read,restore,push,storage), ENTRIES (100000), BACK (10000), READ_ROUNDS (5),
 * RESTORE_ROUNDS (5), ROUNDS (9), PUSHES (per round, by store: memory 2,000, SQLite and
 * PostgreSQL 1,600 for one client; 8 clients do the same total, so each of their spaces gets a
 * checkpoint or two over the rounds), STORAGE_STORES (memory,sqlite),
 * STORAGE_ENTRIES (10000), VERSIONS (1000000).
 * Not part of `npm test`. Progress on stderr, the table on stdout.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createContext, handlePush, memoryStorage, type Storage, type SyncContext } from '../src/index.js';
import { at, restoreSpace, transact } from '../src/backend.js';
import { collectGarbage, exportSpace, importSpace } from '../src/ops.js';
import { sqliteStorage } from '../src/storage/sqlite.js';
import { doneCheckpoints } from '../src/sync/history/checkpoint-records.js';
import { SpaceKeys } from '../src/sync/version/keys.js';
import type { Meta } from '../src/sync/version/records.js';
import { machineLine } from './cpu.js';
import { eachStore } from './each-store.js';
import { collectGarbage as collectHeap, median, progress } from './measure.js';
import { renderTable, type Row } from './table.js';
import { putMutators, todo } from './todos.js';

const root = new URL('..', import.meta.url).pathname;
const STORES = (process.env.STORES ?? 'memory,sqlite,postgres').split(',');
const ONLY = (process.env.ONLY ?? 'read,restore,push,storage').split(',');
const ENTRIES = Number(process.env.ENTRIES ?? 100_000);
const BACK = Number(process.env.BACK ?? 10_000);
const READ_ROUNDS = Number(process.env.READ_ROUNDS ?? 5);
const RESTORE_ROUNDS = Number(process.env.RESTORE_ROUNDS ?? 5);
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const STORAGE_STORES = (process.env.STORAGE_STORES ?? 'memory,sqlite').split(',');
const STORAGE_ENTRIES = Number(process.env.STORAGE_ENTRIES ?? 10_000);
const VERSIONS = Number(process.env.VERSIONS ?? 1_000_000);
const PUSHES: Record<string, number> = { memory: 2000, SQLite: 1600, PostgreSQL: 1600 };
const IN_FLIGHT = 64;
const CHECKPOINT_OFFSET = Math.min(2_000, Math.floor(BACK / 5));
const BATCH = 10;
const KEYS = 500;
const CLIENTS = 8;
if (STORES.includes('postgres')) process.env.DATABASE_URL ??= execFileSync(join(root, 'scripts/start-postgres.sh'), { encoding: 'utf8' }).trim();

const mutators = putMutators;

const todoKey = (n: number) => `todo/${String(n).padStart(7, '0')}`;

/** A number in [0, size) for the `j`th key of change `v`: the same every run. */
const pick = (v: number, j: number, size: number) => ((Math.imul(v + 1, 2654435761) ^ Math.imul(j + 1, 40503)) >>> 0) % size;

function historyContext(storage: Storage, options: { feedOnly?: boolean; clock?: () => number } = {}): SyncContext {
  return createContext({
    storage,
    mutators,
    ...(options.feedOnly ? { changes: {} } : { history: {} }),
    ...(options.clock && { clock: options.clock }),
    authenticate: () => 'u',
    space: (request) => new URL(request.url).searchParams.get('space') ?? '',
    onError: (error) => console.error(error),
  });
}

/** Writes `entries` todos into `space`, 1,000 a version. */
async function fill(ctx: SyncContext, space: string, entries: number): Promise<void> {
  const versions = Array.from({ length: Math.ceil(entries / 1000) }, (_, i) => i * 1000);
  for (let i = 0; i < versions.length; i += 8) {
    await Promise.all(
      versions.slice(i, i + 8).map((from) =>
        transact(ctx, space, async (tx) => {
          for (let n = from; n < Math.min(entries, from + 1000); n++) await tx.set(todoKey(n), todo(n, 0));
        }),
      ),
    );
  }
}

/** Writes versions `from` to `from + count - 1` (numbered by this writer) into `space`, each updating `perVersion(v)` todos of `entries`; resolves to the changes written. */
async function writeVersions(
  ctx: SyncContext,
  space: string,
  from: number,
  count: number,
  entries: number,
  perVersion: (v: number) => number,
): Promise<number> {
  let changes = 0;
  for (let start = from; start < from + count; start += IN_FLIGHT) {
    const batch: Array<Promise<void>> = [];
    for (let v = start; v < Math.min(from + count, start + IN_FLIGHT); v++) {
      const picked = [...new Set(Array.from({ length: perVersion(v) }, (_, j) => pick(v, j, entries)))];
      changes += picked.length;
      batch.push(
        transact(ctx, space, async (tx) => {
          for (const n of picked) await tx.set(todoKey(n), todo(n, v + 1));
        }),
      );
    }
    await Promise.all(batch);
  }
  return changes;
}

const oneToThree = (v: number) => 1 + (v % 3);

async function metaOf(storage: Storage, space: string): Promise<Meta> {
  return (await storage.transaction((tx) => tx.get(new SpaceKeys(space).meta), { readOnly: true, space })) as unknown as Meta;
}

/** The base as-of.ts reads `version` from: the whole checkpoint nearest it, or the live entries on a tie or when none is nearer. */
async function baseOf(storage: Storage, space: string, version: number): Promise<{ label: string; checkpoint: number | undefined; distance: number }> {
  const meta = await metaOf(storage, space);
  const checkpoints = await storage.transaction((tx) => doneCheckpoints(tx, new SpaceKeys(space)), { readOnly: true, space });
  let best: { checkpoint: number | undefined; distance: number } = { checkpoint: undefined, distance: meta.version - version };
  for (const checkpoint of checkpoints) {
    if (checkpoint < (meta.feedFrom ?? 0) || checkpoint > meta.version) continue;
    if (Math.abs(checkpoint - version) < best.distance) best = { checkpoint, distance: Math.abs(checkpoint - version) };
  }
  const label =
    best.checkpoint === undefined
      ? `base: the live entries, ${best.distance.toLocaleString('en-US')} versions undone`
      : `base: the checkpoint of version ${best.checkpoint.toLocaleString('en-US')}, ${best.distance.toLocaleString('en-US')} versions redone`;
  return { label, ...best };
}

/** The export of `space` read to its end: its lines and bytes, and the chunks when `keep`. */
async function readExport(ctx: SyncContext, space: string, keep?: Uint8Array[]): Promise<{ lines: number; bytes: number }> {
  let bytes = 0;
  let lines = 0;
  const reader = exportSpace(ctx, space).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { lines, bytes };
    keep?.push(value);
    bytes += value.length;
    for (let i = value.indexOf(10); i !== -1; i = value.indexOf(10, i + 1)) lines++;
  }
}

let runID = 0;
const fmt = (n: number) => n.toLocaleString('en-US');
const range = (values: number[], digits = 2) => `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`;

/** Alternating rounds of `at` the version, the export, and `at` the space's version now; resolves to their rows. */
async function readRounds(name: string, ctx: SyncContext, space: string, version: number, label: string): Promise<Row[]> {
  const base = await baseOf(ctx.storage, space, version);
  const exported = await readExport(ctx, space);
  const now = (await metaOf(ctx.storage, space)).version;
  const ms = { at: [] as number[], export: [] as number[], now: [] as number[] };
  const sides = ['at', 'export', 'now'] as const;
  for (let round = 0; round < READ_ROUNDS; round++) {
    // Which goes first turns round by round.
    for (const side of [...sides.slice(round % 3), ...sides.slice(0, round % 3)]) {
      collectHeap();
      const start = performance.now();
      if (side === 'export') await readExport(ctx, space);
      else {
        const read = await at(ctx, space, side === 'at' ? version : now);
        if (read.entries.length !== ENTRIES || read.more) throw new Error(`${name}: at read ${read.entries.length} entries, not ${ENTRIES}`);
      }
      ms[side].push(performance.now() - start);
    }
    progress(
      `${name}, ${label}: read round ${round + 1}/${READ_ROUNDS}: at ${ms.at.at(-1)!.toFixed(0)} ms, export ${ms.export.at(-1)!.toFixed(0)} ms, at now ${ms.now.at(-1)!.toFixed(0)} ms`,
    );
  }
  const ratios = ms.at.map((t, i) => t / ms.export[i]!);
  const againstNow = ms.at.map((t, i) => t / ms.now[i]!);
  return [
    {
      benchmark: `${name}: at, ${fmt(BACK)} versions back, ${label}`,
      value: median(ms.at),
      unit: 'ms',
      note: `${fmt(ENTRIES)} entries; ${base.label}; median of ${READ_ROUNDS}, range ${range(ms.at, 0)}`,
    },
    {
      benchmark: `${name}: export now, same rounds`,
      value: median(ms.export),
      unit: 'ms',
      note: `${(exported.bytes / 1e6).toFixed(1)} MB of NDJSON; median of ${READ_ROUNDS}, range ${range(ms.export, 0)}`,
    },
    {
      benchmark: `${name}: at the version now, same rounds`,
      value: median(ms.now),
      unit: 'ms',
      note: `the live entries parsed, nothing undone; median of ${READ_ROUNDS}, range ${range(ms.now, 0)}`,
    },
    {
      benchmark: `${name}: at / export, ${label}`,
      value: median(ratios),
      unit: 'x',
      note: `median of ${READ_ROUNDS} rounds' ratios (aim <= 2x); range ${range(ratios)}`,
    },
    {
      benchmark: `${name}: at / at now, ${label}`,
      value: median(againstNow),
      unit: 'x',
      note: `what going back costs over reading now, median of ${READ_ROUNDS} rounds' ratios; range ${range(againstNow)}`,
    },
  ];
}

async function readAsOf(name: string, storage: Storage): Promise<Row[]> {
  const ctx = historyContext(storage);
  const space = `read-${++runID}`;
  progress(`${name}: writing ${fmt(ENTRIES)} entries and ${fmt(BACK)} versions`);
  await fill(ctx, space, ENTRIES);
  let v = 0;
  await writeVersions(ctx, space, v, BACK, ENTRIES, oneToThree);
  v += BACK;
  await collectGarbage(ctx, space);
  const rows = await readRounds(name, ctx, space, (await metaOf(storage, space)).version - BACK, 'no checkpoint');
  // On until a checkpoint is due and built (housekeeping every 10,000 versions), then BACK + CHECKPOINT_OFFSET more.
  progress(`${name}: writing on until housekeeping has built a checkpoint`);
  const started = performance.now();
  for (;;) {
    const meta = await metaOf(storage, space);
    if ((await storage.transaction((tx) => doneCheckpoints(tx, new SpaceKeys(space)), { readOnly: true, space })).length > 0) break;
    const count = Math.min(10_000, Math.max(1, ENTRIES + 100 - meta.version));
    await writeVersions(ctx, space, v, count, ENTRIES, oneToThree);
    v += count;
    await collectGarbage(ctx, space);
  }
  await writeVersions(ctx, space, v, BACK + CHECKPOINT_OFFSET, ENTRIES, oneToThree);
  v += BACK + CHECKPOINT_OFFSET;
  progress(`${name}: ${fmt((await metaOf(storage, space)).version)} versions, written in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  rows.push(...(await readRounds(name, ctx, space, (await metaOf(storage, space)).version - BACK, 'checkpoint near')));
  return rows;
}

async function restoreRate(name: string, storage: Storage): Promise<Row[]> {
  const ctx = historyContext(storage);
  const ms = { restore: [] as number[], import: [] as number[] };
  const changed: number[] = [];
  let exportBytes = 0;
  for (let round = -1; round < RESTORE_ROUNDS; round++) {
    const space = `restore-${++runID}`;
    await fill(ctx, space, ENTRIES);
    await writeVersions(ctx, space, 0, BACK, ENTRIES, oneToThree);
    const to = (await metaOf(storage, space)).version - BACK;
    const dump: Uint8Array[] = [];
    exportBytes = (await readExport(ctx, space, dump)).bytes;
    for (const side of round % 2 === 0 ? (['restore', 'import'] as const) : (['import', 'restore'] as const)) {
      collectHeap();
      const start = performance.now();
      if (side === 'restore') {
        const result = await restoreSpace(ctx, space, { to });
        if (result.version === undefined) throw new Error(`${name}: the restore changed nothing`);
        if (round >= 0) changed.push(result.changes.length);
      } else {
        const result = await importSpace(ctx, `${space}-import`, dump, { mode: 'replace', from: space });
        if (result.entries !== ENTRIES) throw new Error(`${name}: the import read ${result.entries} entries`);
      }
      if (round >= 0) ms[side].push(performance.now() - start);
    }
    if (round >= 0)
      progress(
        `${name}: restore round ${round + 1}/${RESTORE_ROUNDS}: restore ${ms.restore.at(-1)!.toFixed(0)} ms (${changed.at(-1)} keys), import ${ms.import.at(-1)!.toFixed(0)} ms`,
      );
  }
  const ratios = ms.restore.map((t, i) => t / ms.import[i]!);
  return [
    {
      benchmark: `${name}: restoreSpace, ${fmt(BACK)} versions back`,
      value: median(ms.restore),
      unit: 'ms',
      note: `${fmt(ENTRIES)} entries, ${fmt(median(changed))} of them changed back in one commit; base: the live entries; median of ${RESTORE_ROUNDS}, range ${range(ms.restore, 0)}`,
    },
    {
      benchmark: `${name}: importSpace of the export, fresh space`,
      value: median(ms.import),
      unit: 'ms',
      note: `${(exportBytes / 1e6).toFixed(1)} MB of NDJSON, replace; median of ${RESTORE_ROUNDS}, range ${range(ms.import, 0)}`,
    },
    {
      benchmark: `${name}: restore / import`,
      value: median(ratios),
      unit: 'x',
      note: `median of ${RESTORE_ROUNDS} alternating rounds' ratios (aim <= 2x); range ${range(ratios)}`,
    },
  ];
}

/** Pushes `count` pushes of BATCH mutations into `space`, one after another, as one client (as in feed.ts); `id` goes on from the client's last. */
async function pushes(ctx: SyncContext, space: string, count: number, ids: Map<string, number>): Promise<void> {
  let id = ids.get(space) ?? 0;
  for (let push = 0; push < count; push++) {
    const mutations = Array.from({ length: BATCH }, (_, j) => {
      const n = (id + j) % KEYS;
      return { clientID: `c-${space}`, id: ++id, name: 'put', args: { key: `todo/${String(n).padStart(4, '0')}`, value: todo(n, id) }, timestamp: 0 };
    });
    const body = JSON.stringify({ pushVersion: 1, clientGroupID: `g-${space}`, profileID: 'p', schemaVersion: '', mutations });
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
  ids.set(space, id);
}

/** Resolves once no housekeeping run that pushes started in `ctx` is still going. */
async function housekeepingDone(ctx: SyncContext): Promise<void> {
  const runs = ctx.state.housekeeping;
  while ([...runs.values()].some((last) => last === -1)) await new Promise((resolve) => setTimeout(resolve, 1));
}

async function pushThroughput(name: string, storage: Storage): Promise<Row[]> {
  // A minute a second: housekeeping after pushes runs once a minute per space.
  const epoch = Date.now();
  const clock = () => epoch + (Date.now() - epoch) * 60;
  const contexts = { history: historyContext(storage, { clock }), feed: historyContext(storage, { clock, feedOnly: true }) };
  const count = Number(process.env.PUSHES ?? PUSHES[name] ?? 200);
  const ids = new Map<string, number>();
  const rows: Row[] = [];
  const run = ++runID;
  for (const clients of [1, CLIENTS]) {
    const per = Math.max(1, Math.round(count / clients));
    const ms = { history: [] as number[], feed: [] as number[] };
    const spaces = (side: string) => Array.from({ length: clients }, (_, c) => `push-${run}-${side}-${clients}-${c}`);
    for (let round = -1; round < ROUNDS; round++) {
      for (const side of ['history', 'feed'] as const) {
        collectHeap();
        const start = performance.now();
        await Promise.all(spaces(side).map((space) => pushes(contexts[side], space, per, ids)));
        await housekeepingDone(contexts[side]);
        const elapsed = performance.now() - start;
        if (round >= 0) ms[side].push(elapsed);
      }
      if (round >= 0)
        progress(
          `${name}, ${clients} client(s): round ${round + 1}/${ROUNDS}: history ${(ms.history.at(-1)! / (per * clients)).toFixed(2)} ms/push, feed ${(ms.feed.at(-1)! / (per * clients)).toFixed(2)} ms/push`,
        );
    }
    let checkpoints = 0;
    for (const space of spaces('history'))
      checkpoints += (await storage.transaction((tx) => tx.scan({ prefix: new SpaceKeys(space).checkpointRecordPrefix }), { readOnly: true, space })).length;
    let feedCheckpoints = 0;
    for (const space of spaces('feed'))
      feedCheckpoints += (await storage.transaction((tx) => tx.scan({ prefix: new SpaceKeys(space).checkpointRecordPrefix }), { readOnly: true, space }))
        .length;
    const total = per * clients;
    const rate = (times: number[]) => total / (median(times) / 1000);
    const ratios = ms.history.map((t, i) => t / ms.feed[i]!);
    const load = clients === 1 ? '1 client' : `${clients} clients in ${clients} spaces`;
    for (const side of ['feed', 'history'] as const) {
      const pushesPerSecond = rate(ms[side]);
      rows.push({
        benchmark: `${name}: push, ${load}, ${side === 'feed' ? 'changes: {}' : 'history: {}'}`,
        value: pushesPerSecond,
        unit: 'pushes/s',
        note: `${total} pushes of ${BATCH} a round, median of ${ROUNDS}; range ${Math.round(total / (Math.max(...ms[side]) / 1000))}-${Math.round(total / (Math.min(...ms[side]) / 1000))}${side === 'history' ? `; ${checkpoints} checkpoints begun in its spaces (feed's: ${feedCheckpoints})` : ''}`,
      });
    }
    rows.push({
      benchmark: `${name}: push, ${load}, history / feed`,
      value: median(ratios),
      unit: 'x',
      note: `median of ${ROUNDS} alternating rounds' ratios (aim <= 1.1x); range ${range(ratios)}; ratio of medians ${(median(ms.history) / median(ms.feed)).toFixed(2)}`,
    });
  }
  return rows;
}

/** Rows and bytes (key and value as JSON, UTF-8) of every row in the store, by the prefix before the first `/`. */
async function countByPrefix(storage: Storage, space: string): Promise<Map<string, { rows: number; bytes: number }>> {
  const counts = new Map<string, { rows: number; bytes: number }>();
  let start: { key: string; exclusive: boolean } | undefined;
  for (;;) {
    const page = await storage.transaction((tx) => tx.scan({ prefix: '', start, limit: 10_000 }), { readOnly: true, space });
    for (const [key, value] of page) {
      const prefix = `${key.slice(0, key.indexOf('/') + 1)}`;
      const count = counts.get(prefix) ?? { rows: 0, bytes: 0 };
      count.rows++;
      count.bytes += Buffer.byteLength(key) + Buffer.byteLength(typeof value === 'string' ? value : JSON.stringify(value));
      counts.set(prefix, count);
    }
    if (page.length < 10_000) return counts;
    start = { key: page.at(-1)![0], exclusive: true };
  }
}

async function storageTaken(name: string, storage: Storage, file?: { db: Database.Database; path: string }): Promise<Row[]> {
  const ctx = historyContext(storage);
  const space = 'history-storage';
  progress(`${name}: ${fmt(STORAGE_ENTRIES)} entries, then ${fmt(VERSIONS)} versions of one change each`);
  await fill(ctx, space, STORAGE_ENTRIES);
  const started = performance.now();
  for (let v = 0; v < VERSIONS; v += 10_000) {
    await writeVersions(ctx, space, v, Math.min(10_000, VERSIONS - v), STORAGE_ENTRIES, () => 1);
    await collectGarbage(ctx, space);
    if ((v / 10_000) % 10 === 9) progress(`${name}: ${fmt(v + 10_000)} versions, ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  const meta = await metaOf(storage, space);
  const counts = await countByPrefix(storage, space);
  const get = (prefix: string) => counts.get(prefix) ?? { rows: 0, bytes: 0 };
  const live = { rows: 0, bytes: 0 };
  for (const [prefix, count] of counts) if (!['f/', 'p/', 'q/'].includes(prefix)) (live.rows += count.rows), (live.bytes += count.bytes);
  const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;
  const log = get('f/');
  const points = { rows: get('p/').rows + get('q/').rows, bytes: get('p/').bytes + get('q/').bytes };
  const what = `${fmt(meta.version)} versions, ${fmt(STORAGE_ENTRIES)} entries`;
  const rows: Row[] = [
    {
      benchmark: `${name}: storage, ${what}: live data (every row but f/ p/ q/)`,
      value: live.bytes / 1e6,
      unit: 'MB',
      note: `${fmt(live.rows)} rows: e/ ${fmt(get('e/').rows)} (${mb(get('e/').bytes)}), v/ ${fmt(get('v/').rows)} (${mb(get('v/').bytes)}), other ${fmt(live.rows - get('e/').rows - get('v/').rows)}`,
    },
    {
      benchmark: `${name}: storage: the change log (f/)`,
      value: log.bytes / 1e6,
      unit: 'MB',
      note: `${fmt(log.rows)} rows, ${Math.round(log.bytes / log.rows)} B a row; ${(log.bytes / live.bytes).toFixed(0)}x the live data`,
    },
    {
      benchmark: `${name}: storage: checkpoints (p/ rows, q/ records)`,
      value: points.bytes / 1e6,
      unit: 'MB',
      note: `${fmt(get('p/').rows)} rows in ${fmt(get('q/').rows)} checkpoints; ${(points.bytes / log.bytes).toFixed(2)}x the bare log`,
    },
    {
      benchmark: `${name}: storage: history with checkpoints / bare log`,
      value: (log.bytes + points.bytes) / log.bytes,
      unit: 'x',
      note: `the space's history counter (quotas' historyBytes): ${mb(meta.history ?? 0)}`,
    },
  ];
  if (file) {
    file.db.pragma('wal_checkpoint(TRUNCATE)');
    const size = statSync(file.path).size;
    const copy = (suffix: string) => {
      const path = `${file.path}.${suffix}`;
      file.db.prepare('VACUUM INTO ?').run(path);
      return path;
    };
    const whole = copy('whole');
    const bare = new Database(copy('bare'));
    bare.exec("DELETE FROM viewsync_kv WHERE substr(key, 1, 2) IN ('p/', 'q/'); VACUUM");
    const bareSize = statSync(`${file.path}.bare`).size;
    bare.exec("DELETE FROM viewsync_kv WHERE substr(key, 1, 2) = 'f/'; VACUUM");
    const liveSize = statSync(`${file.path}.bare`).size;
    bare.close();
    const wholeSize = statSync(whole).size;
    rows.push(
      { benchmark: `${name}: file, as written`, value: size / 1e6, unit: 'MB', note: `after a WAL checkpoint; vacuumed ${mb(wholeSize)}` },
      { benchmark: `${name}: file, vacuumed: live data alone`, value: liveSize / 1e6, unit: 'MB', note: 'a copy without f/ p/ q/ rows' },
      {
        benchmark: `${name}: file, vacuumed: live data and the bare log`,
        value: bareSize / 1e6,
        unit: 'MB',
        note: `a copy without p/ q/ rows; ${((bareSize - liveSize) / log.rows).toFixed(0)} B a log row`,
      },
      {
        benchmark: `${name}: file, vacuumed: with checkpoints / without`,
        value: wholeSize / bareSize,
        unit: 'x',
        note: `the history alone (file less the live data's): ${((wholeSize - liveSize) / (bareSize - liveSize)).toFixed(2)}x the bare log's`,
      },
    );
  }
  return rows;
}

async function storageEachStore(): Promise<Row[]> {
  const rows: Row[] = [];
  for (const store of STORAGE_STORES) {
    if (store === 'memory') rows.push(...(await storageTaken('memory', memoryStorage())));
    else if (store === 'sqlite') {
      const dir = mkdtempSync(join(tmpdir(), 'viewsync-history-storage-'));
      const path = join(dir, 'history.db');
      const db = new Database(path);
      try {
        rows.push(...(await storageTaken('SQLite', sqliteStorage(db), { db, path })));
      } finally {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      }
    } else if (store === 'postgres') rows.push(...(await eachStore(['postgres'], 'history-storage', (name, storage) => storageTaken(name, storage))));
  }
  return rows;
}

const startLine = machineLine();
progress(startLine);
const rows: Row[] = [];
if (ONLY.includes('read')) rows.push(...(await eachStore(STORES, 'history-read', readAsOf)));
if (ONLY.includes('restore')) rows.push(...(await eachStore(STORES, 'history-restore', restoreRate)));
if (ONLY.includes('push')) rows.push(...(await eachStore(STORES, 'history-push', pushThroughput)));
if (ONLY.includes('storage')) rows.push(...(await storageEachStore()));
console.log(`\nviewsync history benchmark: ${startLine}; at the end: ${machineLine().replace(/^.*load average /, 'load average ')}\n`);
console.log(renderTable(rows));
