/**
 * The change feed's invariant, on every store: replaying the feed from its start, in pages of
 * any size, each change's `before` is what the replay holds at its key, and the replay ends
 * equal to the space's live entries; places are in strictly increasing order, each version's
 * rows numbered from 0 without a hole. Random pushes (failing mutations among them), backend
 * writes and imports that replace the space; each event a mutation emitted is there once, right
 * after its mutation's writes, though every push was sent twice.
 */
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createContext, type JSONValue, type Storage } from '../../src/index.js';
import { type FeedChange, read, readChanges, transact } from '../../src/backend.js';
import { importSpace } from '../../src/ops.js';
import { mutation, push, testMutators } from '../support/helpers.js';
import { emit, type Mutators } from '../../src/index.js';

const mutators: Mutators = {
  ...testMutators,
  note: async (tx, { key, value }: { key: string; value: JSONValue }) => {
    await tx.set(key, value);
    await emit(tx, 'noted', { key });
  },
};

const keyArb = fc.constantFrom('a', 'b', 'c/1', 'c/2', 'd');
const valueArb = fc.oneof(fc.integer({ min: 0, max: 9 }), fc.constant(null), fc.record({ n: fc.integer({ min: 0, max: 3 }) }));

type Step =
  | { kind: 'push'; mutations: Array<{ name: 'put' | 'del' | 'putThenFail' | 'note'; key: string; value: JSONValue }> }
  | { kind: 'transact'; writes: Array<[string, JSONValue | undefined]> }
  | { kind: 'import'; entries: Array<[string, JSONValue]> };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('push' as const),
      mutations: fc.array(
        fc.record({ name: fc.constantFrom('put' as const, 'del' as const, 'putThenFail' as const, 'note' as const), key: keyArb, value: valueArb }),
        { minLength: 1, maxLength: 4 },
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('transact' as const),
      writes: fc.array(fc.tuple(keyArb, fc.option(valueArb, { nil: undefined })), { minLength: 1, maxLength: 4 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('import' as const),
      entries: fc.uniqueArray(fc.tuple(keyArb, valueArb), { selector: ([key]) => key, maxLength: 4 }),
    }),
  },
);

/** The space's live entries, read in one snapshot (no stream: workerd ties a stream to the object that made it). */
async function liveEntries(ctx: ReturnType<typeof createContext>, space: string): Promise<Map<string, JSONValue>> {
  return new Map(await read(ctx, space, async (tx) => (await tx.scan({ prefix: '' }).entries().toArray()) as Array<[string, JSONValue]>));
}

/** The feed's invariant on one store, over `runs` random histories. */
export function describeFeed(store: string, create: () => Storage, runs: number): void {
  describe(store, () => {
    it('replays to the live entries, each change from what the replay held', async () => {
      // One store for every case, each case in a space of its own: a new store per case made
      // each PostgreSQL case create its tables first, most of its time (a PGlite run outlasted
      // the test's timeout on a busy machine), while a space shares no row with another.
      const storage = create();
      let spaces = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 12 }), fc.integer({ min: 1, max: 7 }), async (steps, pageSize) => {
          const space = `s${spaces++}`;
          const ctx = createContext({ storage, mutators, changes: {}, space: () => space, onError: () => {} });
          let id = 0;
          const notes: number[] = [];
          for (const step of steps) {
            if (step.kind === 'push') {
              const sent = step.mutations.map(({ name, key, value }) => (name === 'note' && notes.push(id + 1), mutation('c', ++id, name, { key, value })));
              await push(ctx, 'g', sent);
              // Sent again, as a client does until a pull confirms them: nothing twice.
              await push(ctx, 'g', sent);
            } else if (step.kind === 'transact') {
              await transact(ctx, space, async (tx) => {
                for (const [key, value] of step.writes) await (value === undefined ? tx.del(key) : tx.set(key, value));
              });
            } else {
              const dump = [
                '{"viewsync":"space","format":3}',
                ...[...step.entries].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, value]) => JSON.stringify({ key, value })),
                JSON.stringify({ viewsync: 'end', entries: step.entries.length, groups: 0 }),
              ].join('\n');
              await importSpace(ctx, space, dump, { mode: 'replace', clients: false });
            }
          }
          const replay = new Map<string, JSONValue>();
          const read: FeedChange[] = [];
          let after = '0';
          for (;;) {
            const page = await readChanges(ctx, space, { after, limit: pageSize });
            read.push(...page.changes);
            after = page.cursor;
            if (!page.more) break;
          }
          for (const [i, change] of read.entries()) {
            const previous = read[i - 1];
            if (previous === undefined) expect(change.seq).toBe(0);
            else if (change.version === previous.version) expect(change.seq).toBe(previous.seq + 1);
            else expect([change.version > previous.version, change.seq]).toEqual([true, 0]);
            if (change.op === 'event') {
              // Right after its mutation's write, in the same commit.
              expect([previous?.version, previous?.by]).toEqual([change.version, change.by]);
              continue;
            }
            expect(change.before, `${change.cursor} ${change.key}`).toEqual(replay.get(change.key));
            if (change.op === 'set') replay.set(change.key, change.after);
            else replay.delete(change.key);
          }
          expect(replay).toEqual(await liveEntries(ctx, space));
          // Each note's event once, in the order they were sent.
          expect(read.flatMap((change) => (change.op === 'event' && change.by.kind === 'mutation' ? [change.by.mutationID] : []))).toEqual(notes);
        }),
        { numRuns: runs },
      );
      // A hang guard, not a time bound: PGlite's run takes about 5 s on a quiet 2-core machine and
      // 20-30 s on one running seven other suites' work; 60 s was outlasted on a busier one.
    }, 240_000);
  });
}
