/**
 * A store that comes back with fewer commits than it acknowledged (a restore from a backup here;
 * an asynchronous standby promoted in test/failover), then takes new commits: the versions the
 * lost commits gave clients must never name the new data. Without the skip, a client holding a
 * lost commit's cookie got an ordinary patch once the new commits passed its version: it kept
 * the lost writes, missed the new ones before its version, and was never told (found by the
 * fault-injection suite's asynchronous failover).
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { handlePull, handlePush, type JSONValue, type SyncContext, createContext } from '../../src/index.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { applyPatch } from '../support/helpers.js';
import { mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { keptGaps, skipTo } from '../../src/sync/version/skipped-versions.js';

const dir = mkdtempSync(join(tmpdir(), 'viewsync-lost-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** A SQLite store in a file, and a way to take a backup of it and to open one: each open is a new incarnation, as a restored server is. */
function store() {
  const file = join(dir, `store-${files++}.db`);
  let db = openSQLite(file);
  const open = (path: string): SyncContext => {
    db.close();
    db = openSQLite(path);
    return createContext({ storage: sqliteStorage(db), mutators: testMutators, onError: () => {} });
  };
  return {
    ctx: open(file),
    backup(): string {
      const copy = join(dir, `backup-${files++}.db`);
      db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
      copyFileSync(file, copy);
      return copy;
    },
    open,
    close: () => db.close(),
  };
}

let ids: Record<string, number> = {};
async function put(ctx: SyncContext, group: string, client: string, key: string) {
  ids[client] = (ids[client] ?? 0) + 1;
  const response = await handlePush(post('/push', pushBody(group, [mutation(client, ids[client]!, 'put', { key, value: key })])), ctx);
  return { status: response.status, body: (await response.json()) as unknown };
}
const pullAs = async (ctx: SyncContext, group: string, cookie: JSONValue) =>
  (await handlePull(post('/pull', pullBody(group, cookie)), ctx)).json() as Promise<{
    cookie: JSONValue;
    patch: Parameters<typeof applyPatch>[1];
    lastMutationIDChanges: Record<string, number>;
    error?: string;
  }>;

describe('a store restored with fewer commits than it acknowledged', () => {
  it("a group holding a lost commit's cookie is told ClientStateNotFound once new commits pass its version, and a new group forking that cookie gets a reset to the data as it is", async () => {
    ids = {};
    const s = store();
    for (const key of ['a/0', 'a/1']) await put(s.ctx, 'ga', 'a', key);
    const backup = s.backup();
    // Acknowledged, then lost: the client saw them, with their cookie.
    for (const key of ['a/2', 'a/3', 'a/4']) await put(s.ctx, 'ga', 'a', key);
    const seen = await pullAs(s.ctx, 'ga', null);
    const held = applyPatch(new Map(), seen.patch);
    expect([...held.keys()]).toEqual(['a/0', 'a/1', 'a/2', 'a/3', 'a/4']);
    expect(seen.lastMutationIDChanges).toEqual({ a: 5 });

    const restored = s.open(backup);
    // Another group's new commits pass the lost ones' versions.
    for (let i = 0; i < 6; i++) expect((await put(restored, 'gb', 'b', `b/${i}`)).status).toBe(200);
    const again = await pullAs(restored, 'ga', seen.cookie);
    expect(again).toEqual({ error: 'ClientStateNotFound' });

    // A reloaded page forks the cookie into a new group: everything, as the store has it, above its cookie.
    const forked = await pullAs(restored, 'ga-reloaded', seen.cookie);
    expect(forked.patch[0]).toEqual({ op: 'clear' });
    expect([...applyPatch(held, forked.patch).keys()]).toEqual(['a/0', 'a/1', 'b/0', 'b/1', 'b/2', 'b/3', 'b/4', 'b/5']);
    expect((forked.cookie as { order: number }).order).toBeGreaterThan((seen.cookie as { order: number }).order);
    s.close();
  });

  it("a client's next push, past the lastMutationID the store came back with, is told ClientStateNotFound, and nothing of it is committed", async () => {
    ids = {};
    const s = store();
    await put(s.ctx, 'ga', 'a', 'a/0');
    const backup = s.backup();
    await put(s.ctx, 'ga', 'a', 'a/1');
    const restored = s.open(backup);
    const pushed = await put(restored, 'ga', 'a', 'a/2');
    expect(pushed).toEqual({ status: 200, body: { error: 'ClientStateNotFound' } });
    expect([...applyPatch(new Map(), (await pullAs(restored, 'observer', null)).patch).keys()]).toEqual(['a/0']);
    s.close();
  });

  it('a store opened again with every commit (a restart) changes nothing for its clients: their cookies go on with patches, none is told it lost anything', async () => {
    ids = {};
    const s = store();
    await put(s.ctx, 'ga', 'a', 'a/0');
    const first = await pullAs(s.ctx, 'ga', null);
    const reopened = s.open(s.backup());
    // The first write after the restart skips versions; the cookie before it is still good.
    await put(reopened, 'ga', 'a', 'a/1');
    const next = await pullAs(reopened, 'ga', first.cookie);
    expect(next.patch).toEqual([{ op: 'put', key: 'a/1', value: 'a/1' }]);
    expect(next.lastMutationIDChanges).toEqual({ a: 2 });
    await put(reopened, 'ga', 'a', 'a/2');
    expect((await pullAs(reopened, 'ga', next.cookie)).patch).toEqual([{ op: 'put', key: 'a/2', value: 'a/2' }]);
    s.close();
  });
});

describe('the skipped ranges a space keeps', () => {
  it('keeps the newest 16; one dropped raises the floor past it (a cookie there gets a reset, not a patch), and ranges below the floor go', () => {
    const ranges = Array.from({ length: 18 }, (_, i): [number, number] => [i * 100, i * 100 + 50]);
    const kept = keptGaps(ranges, { floor: 0 });
    expect(kept.gaps).toEqual(ranges.slice(2));
    expect(kept.floor).toBe(150);
    expect(
      keptGaps(
        [
          [10, 20],
          [30, 40],
        ],
        { floor: 25 },
      ),
    ).toEqual({ gaps: [[30, 40]] });
  });

  it('a write skips only when the store is in another incarnation than the last write named, and only forward', () => {
    const meta = { version: 5, epoch: 'e', base: 1_000_000, incarnation: 'one' };
    expect(skipTo(meta, 'one', 10_000)).toBeUndefined();
    expect(skipTo(meta, undefined, 10_000)).toBeUndefined();
    expect(skipTo({ ...meta, incarnation: undefined }, 'two', 10_000)).toBeUndefined();
    // A thousand versions a millisecond since the space's base: 10,000 ms is 10,000,000 - 1,000,000.
    expect(skipTo(meta, 'two', 10_000)).toBe(9_000_000);
    // A clock behind the versions already given: no skip (nothing above them to skip to).
    expect(skipTo({ ...meta, version: 9_500_000 }, 'two', 10_000)).toBeUndefined();
  });
});
