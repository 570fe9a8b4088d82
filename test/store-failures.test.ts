import { describe, expect, it } from 'vitest';
import { handlePush, type Storage, type StorageTransaction } from '../src/index.js';
import { gate } from './support/gate.js';
import { mutation, post, pull, pushBody, serverView, testContext, testMutators } from './support/helpers.js';
import { onEveryStore } from './support/stores.js';

// A write the store refuses fails the transaction it is in. With group commit, that transaction
// holds other pushes too: they must not fail with it, on any retry.

/** `inner`, refusing at commit any transaction that wrote a key starting with `poison`. */
function poisoned(inner: Storage): Storage {
  return {
    transaction: (fn, options) =>
      inner.transaction(async (tx) => {
        let poison = false;
        const result = await fn(new Proxy(tx, {
          get(target, property) {
            if (property === 'put') return (key: string, value: unknown) => ((poison ||= key.includes('poison')), target.put(key, value as never));
            const member = Reflect.get(target, property, target) as unknown;
            return typeof member === 'function' ? member.bind(target) : member;
          },
        }) as StorageTransaction);
        if (poison) throw new Error('the store refused a row');
        return result;
      }, options),
  };
}

/** Pushes `others` while a first push holds the space, so that they share one transaction. */
async function pushTogether(ctx: ReturnType<typeof testContext>, others: Array<{ group: string; key: string }>): Promise<number[]> {
  const held = gate();
  ctx.mutators = { ...testMutators, hold: () => held.hold() };
  const first = handlePush(post('/push', pushBody('first', [mutation('first', 1, 'hold')])), ctx);
  await held.started;
  const pushes = others.map(({ group, key }) => handlePush(post('/push', pushBody(group, [mutation(`${group}-c`, 1, 'put', { key, value: group })])), ctx));
  await new Promise((resolve) => setTimeout(resolve, 20));
  held.release();
  expect((await first).status).toBe(200);
  return Promise.all(pushes.map(async (push) => (await push).status));
}

onEveryStore('storefail', (store, create) => {
  describe(store, () => {
    it("a push whose write the store refuses fails alone: the pushes that shared its transaction commit", async () => {
      const ctx = testContext({ storage: poisoned(create()) });
      const statuses = await pushTogether(ctx, [
        { group: 'a', key: 'a' },
        { group: 'bad', key: 'poison' },
        { group: 'b', key: 'b' },
      ]);
      expect(statuses).toEqual([200, 500, 200]);
      expect(await serverView(ctx)).toEqual(new Map([['a', 'a'], ['b', 'b']]));
      expect((await pull(ctx, 'a', null)).lastMutationIDChanges).toEqual({ 'a-c': 1 });
      expect((await pull(ctx, 'bad', null)).lastMutationIDChanges).toEqual({});
      // Its retry fails again, alone; the others' retries are skipped as processed.
      expect((await handlePush(post('/push', pushBody('bad', [mutation('bad-c', 1, 'put', { key: 'poison', value: 1 })])), ctx)).status).toBe(500);
    });
  });
});

/** `length` characters no compression shrinks much, as random keys are. */
const incompressible = (length: number, seed = 1) => Array.from({ length }, (_, i) => String.fromCharCode(48 + ((i * 7919 + seed * 104729) % 75))).join('');

// PostgreSQL's btree holds index rows up to 2,704 bytes: 2,692 of an incompressible key. The
// other stores have no such bound.
onEveryStore('keyroom', (store, create) => {
  if (!store.startsWith('postgresStorage')) return;
  const maxKeyBytes = 2_692;
  describe(`${store}: keys the store cannot hold`, () => {
    it(`a key too long for the store's index (${maxKeyBytes} bytes) fails its mutation with a clear reason; the push and the pushes beside it commit`, async () => {
      const ctx = testContext({ storage: create(), limits: { keyBytes: 4_000 } });
      const long = incompressible(3_000);
      const statuses = await pushTogether(ctx, [
        { group: 'a', key: 'a' },
        { group: 'long', key: long },
        { group: 'b', key: 'b' },
      ]);
      expect(statuses).toEqual([200, 200, 200]);
      expect(await serverView(ctx)).toEqual(new Map([['a', 'a'], ['b', 'b']]));
      expect((await pull(ctx, 'long', null)).lastMutationIDChanges).toEqual({ 'long-c': 1 });
      expect(ctx.errors.map(String)).toEqual([expect.stringContaining('storage.maxKeyBytes')]);
    });

    it('the longest key that fits is stored and read back, U+0000 (two bytes in SQL) counted', async () => {
      const ctx = testContext({ storage: create(), limits: { keyBytes: 4_000 } });
      // v/ + the space ('') + / (3), the version field (15), then the key, U+0000 as two bytes.
      const fits = incompressible(maxKeyBytes - 18 - 2, 1) + '\u0000';
      const over = incompressible(maxKeyBytes - 18 - 2, 2) + '\u0000\u0000';
      await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: fits, value: 1 }), mutation('c', 2, 'put', { key: over, value: 2 })])), ctx);
      expect(await serverView(ctx)).toEqual(new Map([[fits, 1]]));
      expect(ctx.errors).toHaveLength(1);
    });
  });
});
