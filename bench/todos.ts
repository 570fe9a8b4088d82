import type { JSONValue, Mutators } from '../src/index.js';

/** The benchmarks' workload of to-dos: one mutator that sets a key, and values of about 150 bytes of JSON. */

export const putMutators: Mutators = {
  put: async (tx, { key, value }: { key: string; value: JSONValue }) => {
    await tx.set(key, value);
  },
};

/** A to-do of about 150 bytes of JSON, different for each `change` of to-do `n`. */
export const todo = (n: number, change: number) => ({
  title: `Buy ${['milk', 'bread', 'coffee', 'apples', 'rice'][n % 5]} for the ${['weekend', 'office', 'party'][n % 3]} #${n}`,
  done: change % 2 === 1,
  list: `list-${n % 20}`,
  order: n,
  tags: ['home', 'errands'],
  updatedAt: new Date(1_700_000_000_000 + change * 1000).toISOString(),
});
