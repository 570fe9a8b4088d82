/**
 * The app's backend on any store: `transact`, `mutate`, `read`, `exportSpace`, `importSpace` and
 * `inspect`, against pulls and pushes of the same space.
 */
import * as v from 'valibot';
import { describe, expect, test } from 'vitest';
import {
  defineMutator,
  InvalidArgsError,
  type JSONValue,
  type Mutators,
  type Storage,
  type SyncContext,
  UnknownMutatorError,
  createContext,
} from '../../src/index.js';
import { mutate, read, transact } from '../../src/backend.js';
import { DumpError, exportSpace, importSpace, inspect } from '../../src/ops.js';
import { gate } from '../support/gate.js';
import { applyPatch, mutation, pull, push, testMutators } from '../support/helpers.js';

const mutators: Mutators = {
  ...testMutators,
  /** Sets `a`, waits, sets `b`: a reader that could see half a push would see them differ. */
  pair: async (tx, { n }: { n: number }) => {
    await tx.set('pair/a', n);
    await new Promise((resolve) => setTimeout(resolve, 1));
    await tx.set('pair/b', n);
  },
  paid: defineMutator(v.object({ invoice: v.string() }), async (tx, { invoice }) => {
    await tx.set(`invoice/${invoice}`, { paid: true, by: tx.userID ?? null });
  }),
};

/** Everything in the store, raw: what "changes nothing" is checked against. */
export async function rawContents(storage: Storage): Promise<ReadonlyArray<readonly [string, unknown]>> {
  return storage.transaction((tx) => tx.scan({ prefix: '' }), { readOnly: true });
}

/** The text of a stream of bytes. */
export async function text(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

/** A format-2 dump (entries only, as `exportSpace` wrote before client groups): its header (with `header`'s fields), the entries, the end line. */
export function dumpOf(entries: ReadonlyArray<readonly [string, JSONValue]>, header: Record<string, JSONValue> = {}): string {
  const lines = [{ viewsync: 'space', format: 2, ...header }, ...entries.map(([key, value]) => ({ key, value })), { viewsync: 'end', entries: entries.length }];
  return lines.map((line) => JSON.stringify(line) + '\n').join('');
}

/** What an import of a dump without client groups (format 2, or a space none pushed to) says of them. */
export const NO_GROUPS = { groups: 0, clients: 0, skipped: [] };

/** A dump's lines as a stream cut into pieces of `size` characters, as a file or socket would deliver them. */
export function chunked(dump: string, size = 7): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(dump);
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, (at += size)));
    },
  });
}

/**
 * Runs a test's body on a new store. A Durable Object's store runs the body inside its object
 * (workerd forbids awaiting, inside one object, a promise or stream made outside it).
 */
export type Within = (body: (storage: Storage) => Promise<void>) => Promise<void>;

export function describeBackend(name: string, create: () => Storage | Promise<Storage>, within: Within = async (body) => body(await create())): void {
  describe(`the app's backend: ${name}`, () => {
    const it = (title: string, body: (ctx: SyncContext) => Promise<void>) =>
      test(title, () => within((storage) => body(createContext({ storage, mutators, onError: () => {} }))));
    const order = (cookie: JSONValue) => (cookie as { order: number }).order;

    it('a backend write between two pulls is in the second pull’s patch, with a higher cookie; no lastMutationID moves', async (ctx) => {
      await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'invoice/1', value: { paid: false } })]);
      const first = await pull(ctx, 'g1', null);
      const returned = await transact(ctx, '', async (tx) => {
        const invoice = (await tx.get('invoice/1')) as { paid: boolean };
        await tx.set('invoice/1', { ...invoice, paid: true });
        await tx.set('invoice/2', { paid: false });
        await tx.del('missing');
        return { clientID: tx.clientID, mutationID: tx.mutationID, userID: tx.userID };
      });
      expect(returned).toEqual({ clientID: '', mutationID: 0, userID: undefined });
      const second = await pull(ctx, 'g1', first.cookie);
      expect(second.patch).toEqual([
        { op: 'put', key: 'invoice/1', value: { paid: true } },
        { op: 'put', key: 'invoice/2', value: { paid: false } },
      ]);
      expect(order(second.cookie)).toBe(order(first.cookie) + 1);
      expect(second.lastMutationIDChanges).toEqual({});
      // The client's next mutation is still its next: its lastMutationID stayed 1.
      await push(ctx, 'g1', [mutation('c1', 2, 'put', { key: 'invoice/3', value: {} })]);
      expect((await pull(ctx, 'g1', second.cookie)).lastMutationIDChanges).toEqual({ c1: 2 });

      // A backend call that writes nothing keeps the version: the cookie stays.
      const third = await pull(ctx, 'g1', null);
      expect(await transact(ctx, '', (tx) => tx.get('invoice/2'))).toEqual({ paid: false });
      expect((await pull(ctx, 'g1', third.cookie)).cookie).toEqual(third.cookie);
    });

    it('transact interleaved with 8 concurrent pushers loses no write, and every client converges', async (ctx) => {
      const rounds = 6;
      const views = new Map<string, { cookie: JSONValue; data: Map<string, JSONValue> }>();
      async function catchUp(group: string) {
        const held = views.get(group) ?? { cookie: null, data: new Map<string, JSONValue>() };
        const { cookie, patch } = await pull(ctx, group, held.cookie);
        views.set(group, { cookie, data: applyPatch(held.data, patch) });
      }
      const pusher = async (p: number) => {
        for (let i = 1; i <= rounds; i++) {
          await push(ctx, `g${p}`, [
            mutation(`c${p}`, 2 * i - 1, 'increment', { key: 'count', delta: 1 }),
            mutation(`c${p}`, 2 * i, 'put', { key: `pusher/${p}/${i}`, value: i }),
          ]);
          await catchUp(`g${p}`);
        }
      };
      const backend = async () => {
        for (let i = 1; i <= rounds; i++) {
          await transact(ctx, '', async (tx) => {
            await tx.set('count', (((await tx.get('count')) as number | undefined) ?? 0) + 100);
            await tx.set(`backend/${i}`, i);
          });
        }
      };
      await Promise.all([...Array.from({ length: 8 }, (_, p) => pusher(p)), backend()]);
      const everything = await pull(ctx, 'reader', null);
      const server = applyPatch(new Map(), everything.patch);
      expect(server.get('count')).toBe(8 * rounds + 100 * rounds);
      expect(server.size).toBe(1 + 8 * rounds + rounds);
      for (let p = 0; p < 8; p++) {
        await catchUp(`g${p}`);
        expect(views.get(`g${p}`)!.data).toEqual(server);
      }
    });

    it('a throwing fn rejects with its error and leaves nothing; pushes committed beside it stay', async (ctx) => {
      await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'kept', value: 1 })]);
      const before = await rawContents(ctx.storage);
      const failure = new Error('the webhook was forged');
      await expect(
        transact(ctx, '', async (tx) => {
          await tx.set('kept', 2);
          await tx.set('new', 2);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await rawContents(ctx.storage)).toEqual(before);

      // Queued together behind a running transaction, they share one storage transaction. Its fn
      // holds the space once its store has begun (on a real PostgreSQL server under load, later
      // than the fixed 10 ms this waited: release was then not yet set).
      const held = gate();
      const running = transact(ctx, '', async (tx) => {
        await held.hold();
        await tx.set('first', 1);
      });
      await held.started;
      const pushed = push(ctx, 'g1', [mutation('c1', 2, 'put', { key: 'pushed', value: 1 })]);
      const failed = expect(
        transact(ctx, '', async (tx) => {
          await tx.set('pushed', 'overwritten');
          throw failure;
        }),
      ).rejects.toBe(failure);
      held.release();
      await running;
      await pushed;
      await failed;
      const data = applyPatch(new Map(), (await pull(ctx, 'reader', null)).patch);
      expect(Object.fromEntries(data)).toEqual({ first: 1, kept: 1, pushed: 1 });
      // A transaction kept after fn returned is closed.
      let kept!: { set(key: string, value: JSONValue): Promise<void> };
      await transact(ctx, '', (tx) => void (kept = tx));
      await expect(kept.set('late', 1)).rejects.toThrow(/closed/);
    });

    it('a fn that runs past its time rejects, writes nothing, and frees the space', async (ctx) => {
      const stuck = transact(
        ctx,
        '',
        async (tx) => {
          await tx.set('never', 1);
          await new Promise((resolve) => setTimeout(resolve, 5_000));
        },
        { timeoutMs: 50 },
      );
      await expect(stuck).rejects.toThrow('The transact function ran longer than 50 ms (timeoutMs); its writes were discarded');
      await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'after', value: 1 })]);
      expect((await pull(ctx, 'reader', null)).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'after', value: 1 }]);
    });

    it('a transact of the same space from inside fn waits for fn, which times out and writes nothing; the inner one then runs', async (ctx) => {
      let inner: Promise<void> | undefined;
      const outer = transact(
        ctx,
        '',
        async (tx) => {
          await tx.set('outer', 1);
          inner = transact(ctx, '', (tx2) => tx2.set('inner', 1));
          await inner;
        },
        { timeoutMs: 200 },
      );
      await expect(outer).rejects.toThrow(/ran longer than 200 ms/);
      await inner;
      expect(await read(ctx, '', (tx) => tx.scan().entries().toArray())).toEqual([['inner', 1]]);
    });

    it('read sees no half of a concurrent push', async (ctx) => {
      const seen: Array<[unknown, unknown]> = [];
      const pushes = (async () => {
        for (let n = 1; n <= 15; n++) await push(ctx, 'g1', [mutation('c1', n, 'pair', { n })]);
      })();
      let reading = true;
      void pushes.finally(() => (reading = false));
      while (reading) {
        seen.push(
          await read(ctx, '', async (tx) => {
            const a = await tx.get('pair/a');
            await new Promise((resolve) => setTimeout(resolve, 1));
            return [a, await tx.get('pair/b')] as [unknown, unknown];
          }),
        );
      }
      await pushes;
      expect(seen.length).toBeGreaterThan(3);
      for (const [a, b] of seen) expect(a).toBe(b);
      expect(await read(ctx, '', (tx) => tx.scan({ prefix: 'pair/' }).entries().toArray())).toEqual([
        ['pair/a', 15],
        ['pair/b', 15],
      ]);
      // Read-only: the transaction has no set.
      expect(await read(ctx, '', (tx) => 'set' in tx)).toBe(false);
    });

    it('a read that holds its snapshot past its time rejects and lets pushes commit; its tx is closed', async (ctx) => {
      let wake!: () => void;
      let late: Promise<unknown> | undefined;
      const stuck = read(
        ctx,
        '',
        async (tx) => {
          await new Promise<void>((resolve) => (wake = resolve));
          late = tx.get('x').then(
            () => 'read',
            (error: unknown) => error,
          );
        },
        { timeoutMs: 100 },
      );
      await expect(stuck).rejects.toThrow('The read function ran longer than 100 ms (timeoutMs); its snapshot was let go');
      await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'after', value: 1 })]);
      expect(await read(ctx, '', (tx) => tx.get('after'))).toBe(1);
      wake();
      await expect.poll(() => late).toBeDefined();
      expect(await late).toEqual(expect.objectContaining({ message: expect.stringMatching(/closed/) }));
    });

    it('mutate runs a registered mutator as a push would; args its schema refuses or an unknown name reject and write nothing', async (ctx) => {
      const cookie = (await pull(ctx, 'g1', null)).cookie;
      await mutate(ctx, '', 'paid', { invoice: '7' }, { userID: 'stripe' });
      expect((await pull(ctx, 'g1', cookie)).patch).toEqual([{ op: 'put', key: 'invoice/7', value: { paid: true, by: 'stripe' } }]);
      const before = await rawContents(ctx.storage);
      await expect(mutate(ctx, '', 'paid', { invoice: 7 })).rejects.toBeInstanceOf(InvalidArgsError);
      await expect(mutate(ctx, '', 'nope', {})).rejects.toBeInstanceOf(UnknownMutatorError);
      await expect(mutate(ctx, '', 'putThenFail', { key: 'x', value: 1 })).rejects.toThrow(/permanent failure/);
      expect(await rawContents(ctx.storage)).toEqual(before);
    });

    it('export then import, into another space of this store (named by `from`), gives the same full pull; merge only sets', async (ctx) => {
      // In UTF-8 order: `z` (0x7a) before `ü` (0xc3 0xbc).
      const entries: Array<[string, JSONValue]> = [
        ['a', 1],
        ['b/z', 'line\nbreak'],
        ['b/ü', { nested: ['🙂', null, true] }],
        ['c', -0.5],
        ['\u{10FFFF}', ''],
      ];
      await transact(ctx, 'from', async (tx) => {
        for (const [key, value] of entries) await tx.set(key, value);
        await tx.set('b/gone', 1);
      });
      // A tombstone, which no export carries.
      await transact(ctx, 'from', (tx) => tx.del('b/gone'));
      const dump = await text(exportSpace(ctx, 'from'));
      const lines = dump.trimEnd().split('\n');
      expect(JSON.parse(lines[0]!)).toMatchObject({ viewsync: 'space', format: 3, space: 'from' });
      expect(lines.slice(1, -1).map((line) => JSON.parse(line) as unknown)).toEqual(entries.map(([key, value]) => ({ key, value })));
      expect(JSON.parse(lines.at(-1)!)).toEqual({ viewsync: 'end', entries: 5, groups: 0 });

      await transact(ctx, 'to', (tx) => tx.set('stale', 1));
      expect(await importSpace(ctx, 'to', chunked(dump), { mode: 'replace', from: 'from' })).toEqual({ entries: 5, written: 5, deleted: 1, ...NO_GROUPS });
      const view = await read(ctx, 'to', (tx) => tx.scan().entries().toArray());
      expect(view).toEqual(entries);
      // The same dump again changes nothing.
      expect(await importSpace(ctx, 'to', chunked(dump, 1000), { mode: 'replace', from: 'from' })).toEqual({
        entries: 5,
        written: 0,
        deleted: 0,
        ...NO_GROUPS,
      });
      // Merge sets and keeps the rest.
      await transact(ctx, 'to', (tx) => tx.set('extra', true));
      const merge = `${lines[0]}\n{"key":"a","value":2}\n{"viewsync":"end","entries":1,"groups":0}\n`;
      expect(await importSpace(ctx, 'to', [merge], { mode: 'merge', from: 'from' })).toEqual({ entries: 1, written: 1, deleted: 0, ...NO_GROUPS });
      expect(await read(ctx, 'to', (tx) => Promise.all([tx.get('a'), tx.get('extra'), tx.get('c')]))).toEqual([2, true, -0.5]);
    });

    it('an export whose reader stops reading fails after idleMs and lets the space’s pushes commit', async (ctx) => {
      await transact(ctx, '', (tx) => tx.set('k', 1));
      const reader = exportSpace(ctx, '', { idleMs: 50 }).getReader();
      expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^\{"viewsync":"space"/);
      await new Promise((resolve) => setTimeout(resolve, 200));
      await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'after', value: 1 })]);
      await expect(reader.read()).rejects.toThrow(/asked for nothing for 50 ms/);
      expect(await read(ctx, '', (tx) => tx.get('after'))).toBe(1);
    });

    it('a dump with a bad line rejects naming it and changes nothing', async (ctx) => {
      await transact(ctx, '', (tx) => tx.set('kept', 1));
      const before = await rawContents(ctx.storage);
      const header = '{"viewsync":"space","format":2,"space":"","exported":"2026-11-24T00:00:00.000Z"}';
      const cases: Array<[string, number, RegExp]> = [
        ['', 1, /empty/],
        ['{"viewsync":"space","format":5}\n', 1, /format 5; this viewsync reads formats 4, 3 and 2/],
        [`${header}\n{"key":"a","value":1}\n{"key":"b","value":\n`, 3, /not JSON/],
        [`${header}\n{"key":"b","value":1}\n{"key":"a","value":1}\n`, 3, /not after/],
        [`${header}\n{"key":"a","value":1}\n{"key":"a","value":2}\n`, 3, /not after/],
        [`${header}\n{"key":1,"value":1}\n`, 2, /not a string/],
        [`${header}\n{"key":"a"}\n`, 2, /exactly "key" and "value"/],
        [`${header}\n{"key":"\\ud800","value":1}\n`, 2, /lone surrogate/],
        [`${header}\n\n{"key":"a","value":1}\n["a",1]\n`, 4, /not an entry/],
      ];
      for (const [dump, line, message] of cases) {
        const failure = await importSpace(ctx, '', [dump], { mode: 'replace' }).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect(failure, dump).toBeInstanceOf(DumpError);
        expect((failure as DumpError).line, dump).toBe(line);
        expect((failure as DumpError).message, dump).toMatch(message);
        expect(await rawContents(ctx.storage)).toEqual(before);
      }
    });

    it('an export cut at any line boundary or inside any line is refused, in replace and in merge mode, and changes nothing; the whole one is taken', async (ctx) => {
      // As in the issue: the target already holds what the export holds, so a prefix taken for
      // the whole dump would delete the rest.
      await transact(ctx, '', async (tx) => {
        for (let i = 0; i < 12; i++) await tx.set(`item/${String(i).padStart(2, '0')}`, { i, text: 'ü🙂'.repeat(i % 3) });
      });
      await push(ctx, 'g1', [mutation('c1', 1, 'del', { key: 'item/05' })]);
      const dump = await text(exportSpace(ctx, ''));
      const lines = dump.split('\n').slice(0, -1);
      // The header, 11 entries, g1's client group, the end line.
      expect(lines).toHaveLength(1 + 11 + 1 + 1);
      const before = await rawContents(ctx.storage);
      // Every cut: after each line but the last (a dump that stops at a line's end), before each
      // line's newline, and inside each line, at its middle and one character short.
      const cuts = new Set<number>();
      let at = 0;
      for (const [i, line] of lines.entries()) {
        cuts.add(at + line.length - 1).add(at + Math.floor(line.length / 2));
        if (i < lines.length - 1) cuts.add(at + line.length).add(at + line.length + 1);
        at += line.length + 1;
      }
      expect(at).toBe(dump.length);
      for (const cut of [...cuts].sort((a, b) => a - b)) {
        for (const mode of ['replace', 'merge'] as const) {
          const failure = await importSpace(ctx, '', chunked(dump.slice(0, cut), 16), { mode }).then(
            () => undefined,
            (error: unknown) => error,
          );
          expect(failure, `${mode}, cut at ${cut}: ${JSON.stringify(dump.slice(Math.max(0, cut - 30), cut))}`).toBeInstanceOf(DumpError);
          expect(await rawContents(ctx.storage)).toEqual(before);
        }
      }
      // A cut at the end of a line names the last line.
      const afterFive = lines.slice(0, 6).join('\n') + '\n';
      await expect(importSpace(ctx, '', [afterFive], { mode: 'replace' })).rejects.toThrow(
        'line 6 of the dump is its last, and not its end line, {"viewsync":"end","entries":…}: the dump was cut short (an export that failed or was stopped midway?), so nothing was imported',
      );
      // The whole dump, with or without its last newline, is taken, and changes nothing either.
      for (const whole of [dump, dump.slice(0, -1)]) {
        expect(await importSpace(ctx, '', chunked(whole, 16), { mode: 'replace' })).toEqual({
          entries: 11,
          written: 0,
          deleted: 0,
          groups: 1,
          clients: 0,
          skipped: [],
        });
      }
      expect(await rawContents(ctx.storage)).toEqual(before);
    });

    it('an end line with the wrong count, lines after it, a format-1 dump and a dump of another space are refused and change nothing; allowFormat1 and from take them', async (ctx) => {
      await transact(ctx, 'acme', (tx) => tx.set('kept', 1));
      const before = await rawContents(ctx.storage);
      const entries: Array<[string, JSONValue]> = [
        ['a', 1],
        ['b', 2],
      ];
      const dump = dumpOf(entries, { space: 'acme' });
      const [header] = dump.split('\n');
      const format1 = `{"viewsync":"space","format":1,"space":"acme"}\n{"key":"a","value":1}\n{"key":"b","value":2}\n`;
      const cases: Array<[string, 'replace' | 'merge', number, string | RegExp]> = [
        [
          dump.replace('"entries":2', '"entries":3'),
          'replace',
          4,
          "line 4 of the dump is the dump's end line, which counts 3 entries, but 2 came before it: lines were lost or added, so nothing was imported",
        ],
        [dump.replace('{"key":"a","value":1}\n', ''), 'merge', 3, /counts 2 entries, but 1 came before it/],
        [dump.replace('"entries":2', '"entries":"2"'), 'replace', 4, /is an end line without a count of entries/],
        [
          `${dump}{"key":"c","value":3}\n`,
          'merge',
          5,
          "line 5 of the dump comes after the dump's end line (line 4): a dump ends there (were two dumps joined?), so nothing was imported",
        ],
        [`${dump}\n${dump}`, 'replace', 6, /comes after the dump's end line \(line 4\)/],
        [`${header}\n${dumpOf([]).split('\n')[1]}\n\n${header}\n`, 'replace', 4, /comes after the dump's end line \(line 2\)/],
        [
          format1,
          'replace',
          1,
          /^line 1 of the dump is the header of a format-1 dump, which has no end line: if it was cut short \(an export that failed midway\), nothing shows it, and a replace would delete every entry after the cut\. Export it again with this viewsync \(format 3\), or, if you know the dump is whole, import it with allowFormat1: true \(CLI: --allow-format-1\)$/,
        ],
        [format1, 'merge', 1, /a merge would set only the entries before the cut\. .* allowFormat1: true/],
        [
          dumpOf(entries, { space: 'globex' }),
          'replace',
          1,
          'line 1 of the dump is the header of a dump of space "globex", not "acme": to import it into "acme" anyway, pass from: "globex" (CLI: --from "globex")',
        ],
        [dumpOf(entries, { space: 7 }), 'merge', 1, /whose "space" is not a string/],
      ];
      for (const [input, mode, line, message] of cases) {
        const failure = await importSpace(ctx, 'acme', chunked(input), { mode }).then(
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
      // `from` names the space a dump must come from, which is then the only one taken.
      await expect(importSpace(ctx, 'acme', [dumpOf(entries, { space: 'globex' })], { mode: 'merge', from: 'initech' })).rejects.toThrow(
        'line 1 of the dump is the header of a dump of space "globex", not "initech" (options.from)',
      );
      expect(await rawContents(ctx.storage)).toEqual(before);

      expect(await importSpace(ctx, 'acme', [format1], { mode: 'replace', allowFormat1: true })).toEqual({ entries: 2, written: 2, deleted: 1, ...NO_GROUPS });
      expect(await read(ctx, 'acme', (tx) => tx.scan().entries().toArray())).toEqual(entries);
      // A dump of another space, named; a dump made by hand without a space goes anywhere.
      expect(await importSpace(ctx, 'acme', [dumpOf([['c', 3]], { space: 'globex' })], { mode: 'merge', from: 'globex' })).toEqual({
        entries: 1,
        written: 1,
        deleted: 0,
        ...NO_GROUPS,
      });
      expect(await importSpace(ctx, 'initech', [dumpOf(entries)], { mode: 'replace' })).toEqual({ entries: 2, written: 2, deleted: 0, ...NO_GROUPS });
      expect(await importSpace(ctx, 'empty', [dumpOf([])], { mode: 'replace' })).toEqual({ entries: 0, written: 0, deleted: 0, ...NO_GROUPS });
    });

    it('inspect lists spaces with their entries, size, version and groups, and one space’s clients', async (ctx) => {
      await push(ctx, 'g1', [mutation('c1', 1, 'put', { key: 'k', value: 'vv' }), mutation('c2', 1, 'put', { key: 'k2', value: 1 })]);
      await transact(ctx, 'other', (tx) => tx.set('x', null));
      const { spaces } = await inspect(ctx);
      expect(spaces.map(({ space, entries, bytes, version, clientGroups }) => ({ space, entries, bytes, version, clientGroups }))).toEqual([
        { space: '', entries: 2, bytes: 'k"vv"k21'.length, version: 1, clientGroups: 1 },
        { space: 'other', entries: 1, bytes: 'xnull'.length, version: 1, clientGroups: 0 },
      ]);
      expect(typeof spaces[0]!.lastActivity).toBe('number');
      const detail = await inspect(ctx, '');
      expect(detail.groups).toEqual([
        { userID: null, clientGroupID: 'g1', lastActive: spaces[0]!.lastActivity, expired: false, schemaVersion: '', clients: { c1: 1, c2: 1 } },
      ]);
      // The active groups by the schema version they push with (the helpers' is '').
      expect(detail.schemaVersions).toEqual({ '': 1 });
      expect(await inspect(ctx, 'none')).toEqual({
        space: 'none',
        entries: 0,
        bytes: 0,
        history: 0,
        version: 0,
        clientGroups: 0,
        lastActivity: null,
        staging: [],
        groups: [],
        rejectedMutations: [],
      });
    });
  });
}
