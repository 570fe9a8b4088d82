/**
 * The big spaces of the big-space suites (test/sync/streamed-reset.test.ts,
 * test/sync/first-sync-pages.test.ts): numbered items in key order, written many to a mutation.
 */
import type { JSONValue, Mutators } from '../../src/index.js';
import { testMutators } from './helpers.js';

/** Items whose titles are `titleChars` long: their keys, their values, and the test mutators with `fill`, which writes `count` of them from `from`. */
export function bigSpace(titleChars: number) {
  const keyOf = (i: number) => `item/${String(i).padStart(6, '0')}`;
  const valueOf = (i: number, round = 0): JSONValue => ({ title: `Item ${i} `.padEnd(titleChars, '.'), n: i, round });
  const mutators: Mutators = {
    ...testMutators,
    fill: async (tx, { from, count }: { from: number; count: number }) => {
      for (let i = from; i < from + count; i++) await tx.set(keyOf(i), valueOf(i));
    },
  };
  return { keyOf, valueOf, mutators };
}
