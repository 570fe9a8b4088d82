/**
 * The big spaces of the big-space suites (test/sync/streamed-reset.test.ts,
 * test/sync/first-sync-pages.test.ts): numbered items in key order, written many to a mutation.
 */
import type { JSONValue, Mutators, SyncContext } from '../../src/index.js';
import { mutation, push, testMutators } from './helpers.js';

/** A write a property draws: a put or a delete of item `entry`, at moment `at` of a sync. */
export interface DrawnWrite {
  at: number;
  entry: number;
  op: 'put' | 'del';
}

/** Items whose titles are `titleChars` long: their keys, their values, and the test mutators with `fill`, which writes `count` of them from `from`. */
export function bigSpace(titleChars: number) {
  const keyOf = (i: number) => `item/${String(i).padStart(6, '0')}`;
  const valueFor = (i: number, round = 0): JSONValue => ({ title: `Item ${i} `.padEnd(titleChars, '.'), n: i, round });
  const mutators: Mutators = {
    ...testMutators,
    fill: async (tx, { from, count }: { from: number; count: number }) => {
      for (let i = from; i < from + count; i++) await tx.set(keyOf(i), valueFor(i));
    },
  };
  /**
   * Pushes, as `client` of `group`, each of `writes` drawn for moment `at` (values of round
   * `run`), one mutation each, and keeps `expected` (the space as it should end) up to date.
   */
  const writer = (ctx: SyncContext, group: string, client: string, expected: Map<string, JSONValue>, run: number) => {
    let made = 0;
    return async (writes: readonly DrawnWrite[], at: number) => {
      for (const { entry, op } of writes.filter((w) => w.at === at)) {
        const key = keyOf(entry);
        const value = valueFor(entry, run);
        await push(ctx, group, [mutation(client, ++made, op, op === 'put' ? { key, value } : { key })]);
        if (op === 'put') expected.set(key, value);
        else expected.delete(key);
      }
      return made;
    };
  };
  return { keyOf, valueFor, mutators, writer };
}
