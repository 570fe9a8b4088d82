/**
 * Any interleaving of a migration's batches with pushes, runs stopped between batches and runs
 * killed before a commit gives the state of applying the migration once to each entry it reached:
 * every entry pushed before the migration passed its key is done once, one pushed after is not.
 */
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { handlePush, memoryStorage, type SyncContext } from '../../src/index.js';
import { migrationStatus, runMigration } from '../../src/ops.js';
import { mutation, post, pushBody } from '../support/helpers.js';
import { type Counted, countOnce, entriesOf, itemKey, killable, Killed, migrationContext, seed } from './migrations-suite.js';

const RUNS = Number(process.env.FC_RUNS ?? 100);
const KEYS = 12;

type Step = { kind: 'push'; key: number; n: number } | { kind: 'delete'; key: number } | { kind: 'run'; batches: number } | { kind: 'kill'; after: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('push' as const), key: fc.nat(KEYS + 3), n: fc.nat(1000) }),
  fc.record({ kind: fc.constant('delete' as const), key: fc.nat(KEYS + 3) }),
  fc.record({ kind: fc.constant('run' as const), batches: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant('kill' as const), after: fc.integer({ min: 1, max: 4 }) }),
);

test('any interleaving of batches, pushes, stops and kills gives each entry the migration once, if it was there when the migration passed its key', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 25 }), fc.integer({ min: 1, max: 4 }), async (steps, batch) => {
      let countdown = Infinity;
      const ctx = migrationContext(killable(memoryStorage(), () => --countdown === 0));
      await seed(ctx, 's', KEYS);
      /** What each key should end as: its `n`, and whether the migration should have done it (undefined: deleted). */
      const expected = new Map<string, { n: number; done: boolean } | undefined>();
      for (let i = 0; i < KEYS; i++) expected.set(itemKey(i), { n: i, done: true });
      let id = 0;
      for (const s of steps) {
        if (s.kind === 'push' || s.kind === 'delete') {
          const key = itemKey(s.key);
          const args = s.kind === 'push' ? mutation('c', ++id, 'put', { key, value: { n: s.n } }) : mutation('c', ++id, 'del', { key });
          expect((await handlePush(post('/push?space=s', pushBody('g', [args])), ctx)).status).toBe(200);
          // Done once unless the migration already passed the key (then the push's value stays as written).
          expected.set(key, s.kind === 'delete' ? undefined : { n: s.n, done: !(await passed(ctx, key)) });
        } else if (s.kind === 'run') {
          const stop = new AbortController();
          let batches = 0;
          await runMigration(ctx, countOnce, {
            batch,
            signal: stop.signal,
            onProgress: () => void (++batches >= s.batches && stop.abort(new Error('stop'))),
          }).catch((error: Error) => {
            if (error.message !== 'stop') throw error;
          });
        } else {
          countdown = s.after;
          await runMigration(ctx, countOnce, { batch }).catch((error: unknown) => {
            if (!(error instanceof Killed)) throw error;
          });
          countdown = Infinity;
        }
      }
      await runMigration(ctx, countOnce, { batch });
      const entries = await entriesOf(ctx, 's');
      const items = new Map([...entries].filter(([key]) => key.startsWith('item/')));
      const wanted = new Map(
        [...expected].flatMap(
          ([key, value]): Array<[string, Counted]> => (value === undefined ? [] : [[key, value.done ? { n: value.n, m: 1 } : { n: value.n }]]),
        ),
      );
      expect(Object.fromEntries(items)).toEqual(Object.fromEntries(wanted));
    }),
    { numRuns: RUNS },
  );
});

/** Whether the migration has passed `key` in space `s`: done, or its last key at or after it. */
async function passed(ctx: SyncContext, key: string): Promise<boolean> {
  const [status] = await migrationStatus(ctx, 'count-once');
  return status !== undefined && (status.state === 'done' || (status.after !== undefined && status.after >= key));
}
