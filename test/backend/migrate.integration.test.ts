/**
 * Moving a space between stores with exportSpace and importSpace, replacing a space under
 * clients that hold old cookies, and a bad line deep in a large dump.
 */
import { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type JSONValue, memoryStorage, type Storage, type SyncContext, createContext } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { DumpError, exportSpace, importSpace } from '../../src/ops.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { applyPatch, mutation, pull, push, testMutators } from '../support/helpers.js';
import { testDatabase } from '../support/stores.js';
import { chunked, dumpOf, NO_GROUPS, rawContents, text } from './suite.js';

const database = testDatabase('migrate');
let tables = 0;
const pglite = database === undefined ? new PGlite() : undefined;
/** A PostgreSQL store: the real server when there is one (CI), else PGlite. */
const postgresStore = (): Storage => postgresStorage(database?.sql ?? pglite!, { schema: database?.schema, tablePrefix: `m${tables++}_` });

const context = (storage: Storage): SyncContext => createContext({ storage, mutators: testMutators, onError: () => {} });
const RUNS = Number(process.env.FC_RUNS ?? 100);

/** What a full pull of the default space holds. */
async function everything(ctx: SyncContext): Promise<Map<string, JSONValue>> {
  return applyPatch(new Map(), (await pull(ctx, 'full-reader', null)).patch);
}

describe('moving a space between stores', () => {
  it('export from SQLite, import into PostgreSQL and into memory: full pulls of the three are equal', async () => {
    const sqlite = context(sqliteStorage(openSQLite()));
    // A history with pushes, deletes and backend writes, 3,000 entries across many pages.
    for (let i = 0; i < 30; i++) {
      await push(
        sqlite,
        'g',
        Array.from({ length: 100 }, (_, j) =>
          mutation('c', i * 100 + j + 1, 'put', { key: `item/${String(i * 100 + j).padStart(5, '0')}`, value: { i, j, text: 'ü🙂'.repeat(j % 5) } }),
        ),
      );
    }
    await push(sqlite, 'g', [
      mutation('c', 3001, 'del', { key: 'item/00007' }),
      mutation('c', 3002, 'put', { key: 'z\u0000nul', value: [null, 1.5, { '': '' }] }),
    ]);
    const dump = await text(exportSpace(sqlite, ''));
    // The header, the entries, g's client group, the end line and the empty text after it.
    expect(dump.split('\n').length).toBe(1 + 3000 + 1 + 1 + 1);

    const targets = [context(postgresStore()), context(memoryStorage())];
    for (const target of targets) {
      // Some data already there, which a replace removes.
      await transact(target, '', (tx) => tx.set('old', 1));
      expect(await importSpace(target, '', chunked(dump, 4096), { mode: 'replace' })).toEqual({
        entries: 3000,
        written: 3000,
        deleted: 1,
        groups: 1,
        clients: 1,
        skipped: [],
      });
    }
    const source = await everything(sqlite);
    expect(source.size).toBe(3000);
    for (const target of targets) expect(await everything(target)).toEqual(source);
    // Byte for byte: a dump of the copy is the dump of the original, less the time in its header.
    const body = (dump: string) => dump.slice(dump.indexOf('\n'));
    for (const target of targets) expect(body(await text(exportSpace(target, '')))).toBe(body(dump));

    // A client that held the SQLite store's cookie, pulling from the new store, gets a reset it takes.
    const held = await pull(sqlite, 'g', null);
    const moved = await pull(targets[0]!, 'g', held.cookie);
    expect(moved.patch[0]).toEqual({ op: 'clear' });
    expect(applyPatch(new Map(), moved.patch)).toEqual(source);
  });

  it('a replace import under clients holding older cookies: each converges to the new contents', async () => {
    const key = fc.constantFrom('a', 'b', 'c', 'd/1', 'd/2', 'e');
    const value = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constant({ x: 1 }));
    const contents = fc.dictionary(key, value, { maxKeys: 6 });
    const write = fc.record({ key, value: fc.option(value, { nil: undefined }) });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(write, { minLength: 1, maxLength: 3 }), { maxLength: 6 }),
        fc.array(fc.nat(6), { maxLength: 4 }),
        contents,
        async (history, holds, next) => {
          const ctx = context(memoryStorage());
          // The clients' cookies, taken after `hold` steps of history.
          const cookies: Array<{ cookie: JSONValue; data: Map<string, JSONValue> }> = [{ cookie: null, data: new Map() }];
          let id = 0;
          for (const step of history) {
            await push(
              ctx,
              'writer',
              step.map(({ key, value }) => mutation('w', ++id, value === undefined ? 'del' : 'put', { key, value: value as JSONValue })),
            );
            const { cookie, patch } = await pull(ctx, 'reader', cookies.at(-1)!.cookie);
            cookies.push({ cookie, data: applyPatch(cookies.at(-1)!.data, patch) });
          }
          const dump = dumpOf(
            Object.keys(next)
              .sort()
              .map((k) => [k, next[k]!] as const),
          );
          await importSpace(ctx, '', [dump], { mode: 'replace' });
          const expected = new Map(Object.entries(next) as Array<[string, JSONValue]>);
          for (const hold of [...holds, cookies.length - 1]) {
            const held = cookies[Math.min(hold, cookies.length - 1)]!;
            const { cookie, patch } = await pull(ctx, `client-${hold}`, held.cookie);
            expect(applyPatch(held.data, patch)).toEqual(expected);
            // And the next pull from there has nothing to add.
            expect((await pull(ctx, `client-${hold}`, cookie)).patch).toEqual([]);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a replace of a large space by a large dump that overlaps it, both over many batches, leaves exactly the dump', async () => {
    for (const storage of [memoryStorage(), sqliteStorage(openSQLite())]) {
      const ctx = context(storage);
      const name = (i: number) => `k/${String(i).padStart(5, '0')}`;
      await transact(ctx, '', async (tx) => {
        for (let i = 0; i < 5_000; i += 2) await tx.set(name(i), i);
      });
      const first = await pull(ctx, 'old', null);
      // Every third key from 0 to 6,000: some kept as they are, some changed, some new; the rest of the evens go.
      const expected = new Map<string, JSONValue>();
      for (let i = 0; i < 6_000; i += 3) expected.set(name(i), i % 4 === 0 ? i : -i);
      const result = await importSpace(ctx, '', [dumpOf([...expected])], { mode: 'replace' });
      // Of the 2,500 evens below 5,000, the 834 multiples of 6 are in the dump (the 417 multiples of 12
      // unchanged) and the other 1,666 go; the dump's 2,000 keys less those 417 are written.
      expect(result).toEqual({ entries: 2_000, written: 1_583, deleted: 1_666, ...NO_GROUPS });
      expect(await everything(ctx)).toEqual(expected);
      const { patch } = await pull(ctx, 'old', first.cookie);
      expect(applyPatch(applyPatch(new Map(), first.patch), patch)).toEqual(expected);
    }
  });

  it('a merge of a few keys into a large space reads only those keys: one transaction, one version', async () => {
    for (const storage of [memoryStorage(), sqliteStorage(openSQLite())]) {
      const ctx = context(storage);
      await transact(ctx, '', async (tx) => {
        for (let i = 0; i < 5_000; i++) await tx.set(`k/${String(i).padStart(5, '0')}`, i);
      });
      const before = await pull(ctx, 'reader', null);
      const dump = dumpOf([
        ['k/00000', 0],
        ['k/02500', 'changed'],
        ['k/99999', 'new'],
      ]);
      expect(await importSpace(ctx, '', dump, { mode: 'merge' })).toEqual({ entries: 3, written: 2, deleted: 0, ...NO_GROUPS });
      const after = await pull(ctx, 'reader', before.cookie);
      expect(after.patch).toEqual([
        { op: 'put', key: 'k/02500', value: 'changed' },
        { op: 'put', key: 'k/99999', value: 'new' },
      ]);
      expect((after.cookie as { order: number }).order).toBe((before.cookie as { order: number }).order + 1);
    }
  });

  for (const [name, create] of [
    ['SQLite', () => sqliteStorage(openSQLite())],
    ['PostgreSQL', postgresStore],
  ] as const) {
    it(`${name}: an import of a dump with a bad line at line 50,000 names line 50,000 and changes nothing`, async () => {
      const ctx = context(create());
      await transact(ctx, '', async (tx) => {
        for (let i = 0; i < 200; i++) await tx.set(`item/${String(i).padStart(6, '0')}`, { before: i });
      });
      const before = await rawContents(ctx.storage);
      const lines = ['{"viewsync":"space","format":2,"space":"","exported":"2026-11-24T00:00:00.000Z"}'];
      for (let i = 0; lines.length < 60_000; i++)
        lines.push(JSON.stringify({ key: `item/${String(i).padStart(6, '0')}`, value: { after: i, pad: 'x'.repeat(40) } }));
      lines.push(`{"viewsync":"end","entries":${lines.length - 1}}`);
      lines[49_999] = lines[49_999]!.slice(0, -1);
      const failure = await importSpace(ctx, '', chunked(lines.join('\n') + '\n', 65_536), { mode: 'replace' }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(DumpError);
      expect((failure as DumpError).line).toBe(50_000);
      expect((failure as DumpError).message).toMatch(/^line 50000 of the dump is not JSON/);
      expect(await rawContents(ctx.storage)).toEqual(before);
    });
  }
});
