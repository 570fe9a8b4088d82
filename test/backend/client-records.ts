/**
 * Client groups in dumps (format 3), on any store: an export carries each group with its
 * clients' lastMutationIDs, and an import lets those clients go on where they were, never
 * applying a mutation twice.
 */
import { describe, expect, it } from 'vitest';
import { handlePull, handlePush, type JSONValue, type Storage, type SyncContext, createContext, type SyncOptions } from '../../src/index.js';
import { read } from '../../src/backend.js';
import { collectGarbage, DumpError, exportSpace, importSpace, inspect } from '../../src/ops.js';
import { stageGroups } from '../../src/sync/dumps/dumped-groups.js';
import { stage, stagingID } from '../../src/sync/dumps/import-batch.js';
import { applyPatch, mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';
import { chunked, dumpOf, rawContents, text } from './suite.js';

const SECOND = 1_000;

/** A format-3 dump made by hand: its header, the entries, the group lines as given, the end line with `groups`. */
export function dump3(entries: ReadonlyArray<readonly [string, JSONValue]>, groups: readonly object[], end: { groups?: number } = {}): string {
  const lines = [
    { viewsync: 'space', format: 3 },
    ...entries.map(([key, value]) => ({ key, value })),
    ...groups,
    { viewsync: 'end', entries: entries.length, groups: end.groups ?? groups.length },
  ];
  return lines.map((line) => JSON.stringify(line) + '\n').join('');
}

export function describeClientRecords(name: string, create: () => Storage): void {
  describe(`client groups in dumps: ${name}`, () => {
    /** A context on a new store, requests authenticated by `Bearer <user>` (none: anonymous), at a clock the test moves. */
    function context(limits?: SyncOptions['limits']) {
      const clock = { now: 1_800_000_000_000 };
      const ctx: SyncContext = createContext({
        storage: create(),
        mutators: testMutators,
        authenticate: (request) => request.headers.get('authorization')?.slice('Bearer '.length) ?? 'anonymous',
        retention: { clientGroupsMs: 10 * SECOND, tombstonesMs: false },
        clock: () => clock.now,
        limits,
        onError: () => {},
      });
      return { ctx, clock };
    }
    const as = (user: string) => ({ authorization: `Bearer ${user}` });
    async function push(ctx: SyncContext, user: string, group: string, mutations: Array<ReturnType<typeof mutation>>): Promise<unknown> {
      const response = await handlePush(post('/push', pushBody(group, mutations), as(user)), ctx);
      const body = await response.text();
      expect(response.status, body).toBe(200);
      return body === '' ? {} : JSON.parse(body);
    }
    async function pull(ctx: SyncContext, user: string, group: string, cookie: JSONValue) {
      const response = await handlePull(post('/pull', pullBody(group, cookie), as(user)), ctx);
      const body = await response.text();
      expect(response.status, body).toBe(200);
      return JSON.parse(body) as { cookie: JSONValue; lastMutationIDChanges: Record<string, number>; patch: Parameters<typeof applyPatch>[1]; error?: string };
    }
    const increment = (client: string, id: number, key = `count/${client}`) => mutation(client, id, 'increment', { key, delta: 1 });
    /** The same store, its requests anonymous: their groups' user is null. */
    const anonymous = (ctx: SyncContext): SyncContext => createContext({ ...ctx.options, authenticate: undefined });
    /** The dump's client group lines. */
    const groupLines = (dump: string) =>
      dump
        .trimEnd()
        .split('\n')
        .slice(1, -1)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => 'group' in line);

    it('an export writes each client group with its user and its clients’ lastMutationIDs, and expired groups’ markers, after the entries and in the store’s order; the end line counts them', async () => {
      const { ctx, clock } = context();
      await push(ctx, 'bob', 'gone', [increment('c0', 1)]);
      clock.now += 20 * SECOND;
      expect(await collectGarbage(ctx)).toMatchObject({ clientGroups: 1, clients: 1 });
      await push(ctx, 'alice', 'g/1', [increment('c1', 1), increment('c1', 2), increment('10', 1)]);
      await push(ctx, 'alice', 'g/1', [increment('9', 1), increment('c1', 3)]);
      await push(ctx, 'bob', 'g/1', [increment('c2', 1)]);
      await push(ctx, 'a/b', 'h', [increment('c3', 1)]);
      await push(ctx, 'bob', 'empty', []);
      await push(anonymous(ctx), '', 'z', [increment('c9', 1)]);
      const dump = await text(exportSpace(ctx, ''));
      const lines = dump.trimEnd().split('\n');
      expect(JSON.parse(lines[0]!)).toMatchObject({ viewsync: 'space', format: 3 });
      expect(
        lines
          .slice(1, 8)
          .map((line) => JSON.parse(line) as { key: string })
          .map(({ key }) => key),
      ).toEqual(['count/10', 'count/9', 'count/c0', 'count/c1', 'count/c2', 'count/c3', 'count/c9']);
      // In the store's order: anonymous first, then `u` and the user, `/` escaped; clients in UTF-8 order ("10" before "9").
      expect(lines.slice(8)).toEqual([
        '{"group":"z","user":null,"clients":{"c9":1}}',
        '{"group":"h","user":"a/b","clients":{"c3":1}}',
        '{"group":"g/1","user":"alice","clients":{"10":1,"9":1,"c1":3}}',
        '{"group":"empty","user":"bob","clients":{}}',
        '{"group":"g/1","user":"bob","clients":{"c2":1}}',
        '{"group":"gone","user":"bob","expired":true}',
        '{"viewsync":"end","entries":7,"groups":6}',
      ]);
    });

    it('export, then import into a new store: every client group and lastMutationID is there, and the new store exports the same lines; a group of many clients takes several lines', async () => {
      const { ctx, clock } = context();
      await push(ctx, 'bob', 'gone', [increment('c0', 1)]);
      clock.now += 20 * SECOND;
      await collectGarbage(ctx);
      // 2,500 clients of 40-character IDs: more than one line's worth.
      const many = Array.from({ length: 2_500 }, (_, i) =>
        mutation(`client-${String(i).padStart(4, '0')}-${'x'.repeat(28)}`, 1, 'put', { key: 'k', value: i }),
      );
      await push(ctx, 'alice', 'big', many);
      await push(anonymous(ctx), '', 'g1', [increment('c1', 1), increment('c1', 2)]);
      const dump = await text(exportSpace(ctx, ''));
      const bigLines = groupLines(dump).filter(({ group }) => group === 'big');
      expect(bigLines.length).toBeGreaterThan(1);
      expect(bigLines.reduce((sum, line) => sum + Object.keys(line.clients as object).length, 0)).toBe(2_500);
      expect(dump.trimEnd().split('\n').at(-1)).toBe('{"viewsync":"end","entries":3,"groups":3}');
      expect(groupLines(dump)[0]).toEqual({ group: 'g1', user: null, clients: { c1: 2 } });

      const target = context().ctx;
      expect(await importSpace(target, '', chunked(dump, 4_096), { mode: 'replace' })).toEqual({
        entries: 3,
        written: 3,
        deleted: 0,
        groups: 3,
        clients: 2_501,
        skipped: [],
      });
      const again = await text(exportSpace(target, ''));
      expect(again.slice(again.indexOf('\n'))).toBe(dump.slice(dump.indexOf('\n')));
      // The expired group's clients start over on the target too.
      expect(await push(target, 'bob', 'gone', [increment('c0', 2)])).toEqual({ error: 'ClientStateNotFound' });
      expect((await pull(target, 'bob', 'gone', null)).error).toBe('ClientStateNotFound');
      // The same dump again changes nothing.
      const rows = await rawContents(target.storage);
      expect(await importSpace(target, '', [dump], { mode: 'merge' })).toEqual({ entries: 3, written: 0, deleted: 0, groups: 3, clients: 0, skipped: [] });
      expect(await rawContents(target.storage)).toEqual(rows);
    });

    it('a client with pending mutations goes on after export and import into a new store: its next push applies once, an old one is not applied again, its pull reports its lastMutationID', async () => {
      const { ctx } = context();
      await push(ctx, 'alice', 'g1', [increment('c1', 1), increment('c1', 2), increment('c1', 3), increment('c2', 1)]);
      const held = await pull(ctx, 'alice', 'g1', null);
      expect(held.lastMutationIDChanges).toEqual({ c1: 3, c2: 1 });
      const view = applyPatch(new Map(), held.patch);
      const dump = await text(exportSpace(ctx, ''));

      const target = context().ctx;
      expect(await importSpace(target, '', [dump], { mode: 'replace' })).toMatchObject({ groups: 1, clients: 2 });
      // Its cookie is of the old store: a reset, with every lastMutationID of its group, and no ClientStateNotFound.
      const moved = await pull(target, 'alice', 'g1', held.cookie);
      expect(moved.error).toBeUndefined();
      expect(moved.lastMutationIDChanges).toEqual({ c1: 3, c2: 1 });
      expect(applyPatch(view, moved.patch)).toEqual(view);
      // Its pending mutations, sent again from 3 (already applied) on: 3 is skipped, 4 and 5 apply once.
      const pending = [increment('c1', 3), increment('c1', 4), increment('c1', 5)];
      expect(await push(target, 'alice', 'g1', pending)).toEqual({});
      expect(await push(target, 'alice', 'g1', pending)).toEqual({});
      expect(await read(target, '', (tx) => tx.get('count/c1'))).toBe(5);
      const next = await pull(target, 'alice', 'g1', moved.cookie);
      expect(next.lastMutationIDChanges).toEqual({ c1: 5 });
      expect(next.patch).toEqual([{ op: 'put', key: 'count/c1', value: 5 }]);

      // Without the client records (clients: false), the same client can only start over.
      const bare = context().ctx;
      expect(await importSpace(bare, '', [dump], { mode: 'replace', clients: false })).toEqual({
        entries: 2,
        written: 2,
        deleted: 0,
        groups: 1,
        clients: 0,
        skipped: [],
      });
      expect(await push(bare, 'alice', 'g1', pending)).toEqual({ error: 'ClientStateNotFound' });
      expect((await pull(bare, 'alice', 'g1', held.cookie)).lastMutationIDChanges).toEqual({});
    });

    it('a dump’s lastMutationIDs come from the snapshot of its entries, even while a push commits during the export', async () => {
      const { ctx } = context();
      await push(ctx, 'alice', 'g1', [increment('c1', 1), increment('c1', 2)]);
      const reader = exportSpace(ctx, '').getReader();
      const decoder = new TextDecoder();
      // The header, then the entries: the export waits for its reader before it reads the groups.
      let dump = decoder.decode((await reader.read()).value) + decoder.decode((await reader.read()).value);
      expect(dump).toContain('"count/c1"');
      const pushed = push(ctx, 'alice', 'g1', [increment('c1', 3)]);
      // PostgreSQL commits the push now; the stores in process hold it until the export ends.
      await new Promise((resolve) => setTimeout(resolve, 200));
      for (let next = await reader.read(); !next.done; next = await reader.read()) dump += decoder.decode(next.value);
      await pushed;
      expect(dump.split('\n').slice(1, -1)).toEqual([
        '{"key":"count/c1","value":2}',
        '{"group":"g1","user":"alice","clients":{"c1":2}}',
        '{"viewsync":"end","entries":1,"groups":1}',
      ]);
    });

    it('a lastMutationID is never lowered; a client the space has in another group stays there; a group the space expired stays expired; another user’s group of the same ID is untouched', async () => {
      const { ctx, clock } = context();
      await push(ctx, 'alice', 'g1', [increment('high', 1), increment('high', 2), increment('high', 3), increment('low', 1)]);
      await push(ctx, 'alice', 'other', [increment('moved', 1)]);
      // bob's group and client of the same IDs as alice's are others.
      await push(ctx, 'bob', 'g1', [increment('high', 1, 'bob')]);
      await push(ctx, 'carol', 'old', [increment('c', 1)]);
      clock.now += 5 * SECOND;
      await push(ctx, 'alice', 'g1', [increment('high', 4)]);
      await push(ctx, 'alice', 'other', [increment('moved', 2)]);
      await push(ctx, 'bob', 'g1', [increment('high', 2, 'bob')]);
      clock.now += 6 * SECOND;
      expect(await collectGarbage(ctx)).toMatchObject({ clientGroups: 1 });
      const cookie = (await pull(ctx, 'alice', 'g1', null)).cookie;
      const dump = dump3(
        [],
        [
          { group: 'g1', user: 'alice', clients: { high: 2, low: 7, moved: 9, new: 4 } },
          { group: 'other', user: 'alice', expired: true },
          { group: 'old', user: 'carol', clients: { c: 5 } },
        ],
      );
      const result = await importSpace(ctx, '', [dump], { mode: 'merge' });
      expect(result).toEqual({
        entries: 0,
        written: 0,
        deleted: 0,
        groups: 3,
        clients: 2,
        skipped: [
          { userID: 'alice', clientGroupID: 'g1', clientID: 'moved', reason: 'the space has the client in group "other", where it stays' },
          { userID: 'carol', clientGroupID: 'old', clientID: 'c', reason: 'the space expired its group (housekeeping): the client starts over in a new group' },
        ],
      });
      // alice's g1: `high` kept at 4 (not lowered to 2), `low` raised to 7, `new` added; a pull since the import's version hears of those two.
      expect((await pull(ctx, 'alice', 'g1', cookie)).lastMutationIDChanges).toEqual({ low: 7, new: 4 });
      await push(ctx, 'alice', 'g1', [increment('high', 3), increment('high', 4), increment('high', 5), increment('low', 8)]);
      expect(await read(ctx, '', (tx) => Promise.all([tx.get('count/high'), tx.get('count/low')]))).toEqual([5, 2]);
      expect((await pull(ctx, 'bob', 'g1', cookie)).lastMutationIDChanges).toEqual({});
      // `moved` is still other's, which the dump's marker did not expire; bob's g1 and carol's old are as they were.
      await push(ctx, 'alice', 'other', [increment('moved', 3)]);
      expect(await read(ctx, '', (tx) => tx.get('count/moved'))).toBe(3);
      await push(ctx, 'bob', 'g1', [increment('high', 2, 'bob'), increment('high', 3, 'bob')]);
      expect(await read(ctx, '', (tx) => tx.get('bob'))).toBe(3);
      expect(await push(ctx, 'carol', 'old', [increment('c', 6)])).toEqual({ error: 'ClientStateNotFound' });
    });

    it('a dump cut anywhere in its client groups, or missing one of their lines, is refused in both modes and changes nothing', async () => {
      const { ctx } = context();
      for (let g = 0; g < 4; g++) await push(ctx, 'alice', `g${g}`, [increment(`c${g}`, 1), increment(`d${g}`, 1)]);
      const dump = await text(exportSpace(ctx, ''));
      const lines = dump.split('\n').slice(0, -1);
      expect(lines.filter((line) => line.startsWith('{"group"'))).toHaveLength(4);
      await push(ctx, 'alice', 'g0', [increment('c0', 2)]);
      const before = await rawContents(ctx.storage);
      const groupsStart = dump.indexOf('{"group"');
      const cuts = new Set<number>();
      for (let at = groupsStart; at < dump.length - 1; at += 7) cuts.add(at);
      for (let at = dump.indexOf('\n', groupsStart); at >= 0 && at < dump.length - 1; at = dump.indexOf('\n', at + 1)) cuts.add(at).add(at + 1);
      const dropped = lines.filter((line) => line !== lines.find((each) => each.startsWith('{"group":"g2"'))).join('\n') + '\n';
      const inputs = [...[...cuts].map((cut) => dump.slice(0, cut)), dropped];
      for (const input of inputs) {
        for (const mode of ['replace', 'merge'] as const) {
          const failure = await importSpace(ctx, '', chunked(input, 16), { mode }).then(
            () => undefined,
            (error: unknown) => error,
          );
          expect(failure, `${mode}: …${JSON.stringify(input.slice(-40))}`).toBeInstanceOf(DumpError);
          expect(await rawContents(ctx.storage)).toEqual(before);
        }
      }
      await expect(importSpace(ctx, '', [dropped], { mode: 'merge' })).rejects.toThrow(
        `line ${lines.length - 1} of the dump is the dump's end line, which counts 4 client groups, but 3 came before it: lines were lost or added, so nothing was imported`,
      );
    });

    it('a dump refused after its client groups were staged leaves no staging row; one a killed import left is one import to inspect, and housekeeping removes it', async () => {
      const { ctx, clock } = context();
      await push(ctx, 'alice', 'g1', [increment('c1', 1)]);
      const before = await rawContents(ctx.storage);
      // More group lines than a staging batch holds, then a bad one.
      const groups = Array.from({ length: 1_200 }, (_, i) => ({ group: `g${String(i).padStart(4, '0')}`, user: null, clients: { c: i } }));
      const bad = dump3([['a', 1]], groups).replace('{"viewsync":"end"', '{"group":"z","user":null,"clients":{"c":-1}}\n{"viewsync":"end"');
      await expect(importSpace(ctx, '', [bad], { mode: 'merge' })).rejects.toThrow(/^line 1203 of the dump has client "c" with lastMutationID -1/);
      expect(await rawContents(ctx.storage)).toEqual(before);

      const id = stagingID(clock.now);
      await ctx.storage.transaction(
        async (tx) => {
          await stage(tx, '', id, [['a', 1]]);
          await stageGroups(tx, '', id, [{ group: { group: 'g', user: null, clients: { c: 1 } }, index: 0 }]);
        },
        { readOnly: false, space: '' },
      );
      expect((await inspect(ctx, '')).staging).toEqual([{ started: clock.now, rows: 2, bytes: expect.any(Number) }]);
      clock.now += 25 * 60 * 60 * SECOND;
      await collectGarbage(ctx);
      expect((await inspect(ctx, '')).staging).toEqual([]);
    });

    it('a format-2 dump (entries only) imports as it always did, and leaves the space’s clients as they are', async () => {
      const { ctx } = context();
      await push(ctx, 'alice', 'g1', [increment('c1', 1), increment('c1', 2)]);
      const before = (await pull(ctx, 'alice', 'g1', null)).cookie;
      const fixture =
        '{"viewsync":"space","format":2,"space":"","exported":"2026-11-24T00:00:00.000Z"}\n{"key":"a","value":1}\n{"key":"b","value":{"x":[true]}}\n{"viewsync":"end","entries":2}\n';
      expect(fixture).toBe(
        dumpOf(
          [
            ['a', 1],
            ['b', { x: [true] }],
          ],
          { space: '', exported: '2026-11-24T00:00:00.000Z' },
        ),
      );
      expect(await importSpace(ctx, '', [fixture], { mode: 'replace' })).toEqual({ entries: 2, written: 2, deleted: 1, groups: 0, clients: 0, skipped: [] });
      expect(await read(ctx, '', (tx) => tx.scan().entries().toArray())).toEqual([
        ['a', 1],
        ['b', { x: [true] }],
      ]);
      expect((await pull(ctx, 'alice', 'g1', before)).lastMutationIDChanges).toEqual({});
      await push(ctx, 'alice', 'g1', [increment('c1', 2), increment('c1', 3)]);
      expect(await read(ctx, '', (tx) => tx.get('count/c1'))).toBe(1);
      // Format 2 has no client groups: such a line is not one of its entries.
      await expect(
        importSpace(ctx, '', [fixture.replace('{"viewsync":"end"', '{"group":"g","user":null,"clients":{}}\n{"viewsync":"end"')], { mode: 'merge' }),
      ).rejects.toThrow('line 4 of the dump is not an entry: it should be an object with exactly "key" and "value"');
    });

    it('bad client group lines are refused naming the line, with clients: false too, and change nothing', async () => {
      const { ctx } = context({ idBytes: 9 });
      await push(ctx, 'alice', 'g1', [increment('c1', 1)]);
      const before = await rawContents(ctx.storage);
      const ok = { group: 'g', user: null, clients: { c: 1 } };
      const cases: Array<[string, number, string | RegExp]> = [
        [dump3([], [{ group: 1, user: null, clients: {} }]), 2, 'line 2 of the dump has a group ID that is not a string (1)'],
        [dump3([], [{ group: 'g', user: 5, clients: {} }]), 2, /has a user ID that is not a string \(5\)/],
        [
          dump3([], [{ group: 'g', clients: {} }]),
          2,
          /is not a client group: it should be an object with exactly "group", "user" and "clients" \(or "expired": true\)/,
        ],
        [dump3([], [{ ...ok, extra: 1 }]), 2, /is not a client group/],
        [dump3([], [{ group: 'g', user: null, clients: [1] }]), 2, /has "clients" that is not an object/],
        [dump3([], [{ group: 'g', user: null, expired: 1 }]), 2, /has "expired": 1: an expired group's line has "expired": true/],
        [dump3([], [{ group: 'g'.repeat(10), user: null, clients: {} }]), 2, 'line 2 of the dump has a group ID longer than 9 bytes (limits.idBytes)'],
        [dump3([], [{ group: 'g', user: 'ü'.repeat(5), clients: {} }]), 2, /has a user ID longer than 9 bytes/],
        [dump3([], [{ group: 'g', user: null, clients: { ['c'.repeat(10)]: 1 } }]), 2, /has a client ID longer than 9 bytes/],
        [dump3([], [{ group: '\ud800', user: null, clients: {} }]), 2, /has a group ID holding a lone surrogate/],
        ...[-1, 1.5, 2 ** 53, '3', null].map((lmid): [string, number, RegExp] => [
          dump3([], [{ group: 'g', user: null, clients: { c: lmid } }]),
          2,
          new RegExp(`has client "c" with lastMutationID ${JSON.stringify(lmid)}: it should be a whole number from 0 to 2\\^53 - 1`),
        ]),
        [dump3([], [{ group: 'h', user: null, clients: {} }, ok]), 3, /has client group "g" of anonymous requests, which is not after the previous line's/],
        [dump3([], [{ group: 'g', user: 'bob', clients: {} }, ok]), 3, /not after the previous line's/],
        [dump3([], [ok, ok], { groups: 1 }), 3, /has client group "g" of anonymous requests again: a group comes once/],
        [dump3([], [ok, { group: 'g', user: null, expired: true }], { groups: 1 }), 3, /again/],
        [dump3([], [ok, { group: 'g', user: null, clients: { b: 1 } }], { groups: 1 }), 3, /again/],
        [
          dump3(
            [],
            [
              { group: 'g', user: null, clients: { a: 1, c: 1 } },
              { group: 'g', user: null, clients: { b: 1 } },
            ],
            { groups: 1 },
          ),
          3,
          /again/,
        ],
        [
          dump3([], [ok]).replace('\n{"viewsync":"end"', '\n{"key":"z","value":1}\n{"viewsync":"end"'),
          3,
          'line 3 of the dump is an entry after the client groups: a dump lists its entries first, then its client groups',
        ],
        [
          dump3([], [ok]).replace(',"groups":1', ''),
          3,
          'line 3 of the dump is an end line without a count of client groups: a format-3 dump\'s is {"viewsync":"end","entries":N,"groups":M}',
        ],
        [dump3([], [ok], { groups: 2 }), 3, /counts 2 client groups, but 1 came before it/],
        [
          '{"viewsync":"space","format":5}\n',
          1,
          'line 1 of the dump is a header of dump format 5; this viewsync reads formats 4, 3 and 2 (and 1, with allowFormat1)',
        ],
      ];
      for (const [input, line, message] of cases) {
        for (const clients of [true, false]) {
          const failure = await importSpace(ctx, '', [input], { mode: 'replace', clients }).then(
            () => undefined,
            (error: unknown) => error,
          );
          expect(failure, input).toBeInstanceOf(DumpError);
          expect([(failure as DumpError).line, (failure as DumpError).message], input).toEqual([
            line,
            typeof message === 'string' ? message : expect.stringMatching(message),
          ]);
          expect(await rawContents(ctx.storage)).toEqual(before);
        }
      }
      // Good lines within the limits are taken: an empty ID, "__proto__", a group on two lines.
      const good =
        '{"viewsync":"space","format":3}\n{"group":"","user":null,"clients":{"__proto__":0,"":3}}\n{"group":"g","user":null,"clients":{"a":1}}\n{"group":"g","user":null,"clients":{"b":2}}\n{"viewsync":"end","entries":0,"groups":2}\n';
      expect(await importSpace(ctx, '', [good], { mode: 'merge' })).toMatchObject({ groups: 2, clients: 4, skipped: [] });
      expect(Object.entries((await pull(anonymous(ctx), '', '', null)).lastMutationIDChanges)).toEqual([
        ['', 3],
        ['__proto__', 0],
      ]);
      expect((await pull(anonymous(ctx), '', 'g', null)).lastMutationIDChanges).toEqual({ a: 1, b: 2 });
    });
  });
}
