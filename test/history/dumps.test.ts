/**
 * exportSpace and importSpace carrying a space's history (a format-4 dump): a space imported with
 * its history into another store reads the same as of every kept version; without the option
 * nothing changes; a dump with history cut anywhere is refused and changes nothing.
 */
import { describe, expect, it } from 'vitest';
import type { SyncContext } from '../../src/index.js';
import { eraseData, readHistory } from '../../src/backend.js';
import { DumpError, exportSpace, importSpace } from '../../src/ops.js';
import { countHistory } from '../../src/sync/history/history-bytes.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import { chunked } from '../backend/suite.js';
import { onEveryStore } from '../support/stores.js';
import { buildCheckpoint, everything, historyContext, metaOf, Recorder, stateAt } from './suite.js';

/** A space of a dozen versions by two users, a key erased, and a checkpoint (which the dump leaves out). */
async function source(ctx: SyncContext, space = 'src'): Promise<Recorder> {
  const r = new Recorder(ctx, space);
  for (let i = 0; i < 12; i++)
    await r.modelled(
      { [`k${i % 4}`]: { i, text: `v${i}` }, ...(i === 3 && { secret: 'SECRET' }), ...(i % 5 === 4 && { [`k${(i + 1) % 4}`]: undefined }) },
      i % 2 === 0 ? 'ann' : 'bob',
    );
  await buildCheckpoint(ctx, space);
  await eraseData(ctx, space, { key: 'secret' });
  await r.settle();
  return r;
}

async function answers(ctx: SyncContext, space: string, versions: number) {
  const states = [];
  for (let v = 0; v <= versions; v++) states.push(await stateAt(ctx, space, v));
  const { changes, kept } = await readHistory(ctx, space);
  return { states, changes, from: kept.from };
}

onEveryStore('hdump', (name, create) => {
  describe(`a dump with history: ${name}`, () => {
    it('imported with its history into a new space of another store, it reads the same as of every kept version, and goes on', async () => {
      const { ctx: from } = historyContext(await create());
      const r = await source(from);
      const version = (await metaOf(from, 'src'))!.version;
      const before = await answers(from, 'src', version);
      const dump = await new Response(exportSpace(from, 'src', { history: true })).text();
      expect(dump).not.toContain('SECRET');
      expect(JSON.parse(dump.slice(0, dump.indexOf('\n')))).toMatchObject({ format: 4, version, history: { from: 0 } });

      const { ctx: to } = historyContext(await create());
      const result = await importSpace(to, 'copy', chunked(dump, 100), { mode: 'replace', from: 'src', history: true });
      expect(result).toMatchObject({ entries: Object.keys(r.at(version)).length, changes: before.changes.length + 1 });
      expect((await metaOf(to, 'copy'))!.version).toBe(version);
      expect(await answers(to, 'copy', version)).toEqual(before);
      const keys = new SpaceKeys('copy');
      expect((await metaOf(to, 'copy'))!.history).toBe(await to.storage.transaction((tx) => countHistory(tx, keys), { readOnly: true, space: 'copy' }));
      // The imported space goes on: a write is the next version, and the older ones read as they did.
      await new Recorder(to, 'copy').write({ k0: 'later' });
      expect((await stateAt(to, 'copy', version + 1)).k0).toBe('later');
      expect(await stateAt(to, 'copy', 5)).toEqual(before.states[5]);
    });

    it('without the option nothing changes: a format-3 dump, and a dump with history imported as one without', async () => {
      const { ctx } = historyContext(await create());
      await source(ctx);
      const plain = await new Response(exportSpace(ctx, 'src')).text();
      expect(JSON.parse(plain.slice(0, plain.indexOf('\n')))).toMatchObject({ format: 3 });
      expect(plain).not.toContain('"log"');
      const withHistory = await new Response(exportSpace(ctx, 'src', { history: true })).text();
      const a = await importSpace(ctx, 'a', plain, { mode: 'replace', from: 'src' });
      const b = await importSpace(ctx, 'b', withHistory, { mode: 'replace', from: 'src' });
      expect(b).toEqual({ ...a, changes: undefined });
      const version = (await metaOf(ctx, 'b'))!.version;
      expect(await stateAt(ctx, 'b', version)).toEqual(await stateAt(ctx, 'a', version));
      // Its own history, of the import alone: nothing from the dump's.
      expect((await readHistory(ctx, 'b')).changes.every(({ by }) => by.kind === 'backend' && by.call === 'import')).toBe(true);
      // A dump without history cannot give one, and a space written to cannot take one.
      await expect(importSpace(ctx, 'c', plain, { mode: 'replace', from: 'src', history: true })).rejects.toThrow(/holds no history/);
      await expect(importSpace(ctx, 'a', withHistory, { mode: 'replace', from: 'src', history: true })).rejects.toThrow(/new space only/);
    });

    it('a dump with history cut anywhere, or with a row out of place, is refused and changes nothing', async () => {
      const { ctx } = historyContext(await create());
      await source(ctx);
      const dump = await new Response(exportSpace(ctx, 'src', { history: true })).text();
      const lines = dump.split('\n').filter((line) => line !== '');
      const firstLog = lines.findIndex((line) => line.startsWith('{"log"'));
      const raw = await everything(ctx.storage);
      for (const cut of [firstLog, firstLog + 3, lines.length - 1]) {
        const text = lines.slice(0, cut).join('\n') + '\n';
        for (const history of [true, false]) {
          const failure = await importSpace(ctx, 'cut', chunked(text, 50), { mode: 'replace', from: 'src', history }).catch((error: unknown) => error);
          expect(failure, `cut before line ${cut + 1}`).toBeInstanceOf(DumpError);
          expect(await everything(ctx.storage)).toBe(raw);
        }
      }
      const swapped = [...lines];
      [swapped[firstLog], swapped[firstLog + 1]] = [swapped[firstLog + 1]!, swapped[firstLog]!];
      await expect(importSpace(ctx, 'cut', swapped.join('\n'), { mode: 'replace', from: 'src', history: true })).rejects.toThrow(/not after the previous one/);
      expect(await everything(ctx.storage)).toBe(raw);
    });
  });
});
