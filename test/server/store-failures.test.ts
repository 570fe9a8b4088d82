import { describe, expect, it } from 'vitest';
import { handlePull, handlePush, memoryStorage, type Storage } from '../../src/index.js';
import type { StorageTransaction } from '../../src/store.js';
import { gate } from '../support/gate.js';
import { mutation, post, pull, pullBody, pushBody, serverView, testContext, testMutators } from '../support/helpers.js';
import { onEveryStore } from '../support/stores.js';

// A write the store refuses fails the transaction it is in. With group commit, that transaction
// holds other pushes too: they must not fail with it, on any retry.

/** `inner`, refusing at commit any transaction that wrote a key starting with `poison`. */
function poisoned(inner: Storage): Storage {
  return {
    transaction: (fn, options) =>
      inner.transaction(async (tx) => {
        let poison = false;
        const result = await fn(
          new Proxy(tx, {
            get(target, property) {
              if (property === 'put') return (key: string, value: unknown) => ((poison ||= key.includes('poison')), target.put(key, value as never));
              const member = Reflect.get(target, property, target) as unknown;
              return typeof member === 'function' ? member.bind(target) : member;
            },
          }) as StorageTransaction,
        );
        if (poison) throw new Error('the store refused a row');
        return result;
      }, options),
  };
}

/** The gate the `hold` mutator of {@link holdingMutators} waits at (see pushTogether). */
let held = gate();
const holdingMutators = { ...testMutators, hold: () => held.hold() };

/** Pushes `others` while a first push holds the space, so that they share one transaction (`ctx` has {@link holdingMutators}). */
async function pushTogether(ctx: ReturnType<typeof testContext>, others: Array<{ group: string; key: string }>): Promise<number[]> {
  held = gate();
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
    it('a push whose write the store refuses fails alone: the pushes that shared its transaction commit', async () => {
      const ctx = testContext({ storage: poisoned(create()), mutators: holdingMutators });
      const statuses = await pushTogether(ctx, [
        { group: 'a', key: 'a' },
        { group: 'bad', key: 'poison' },
        { group: 'b', key: 'b' },
      ]);
      expect(statuses).toEqual([200, 500, 200]);
      expect(await serverView(ctx)).toEqual(
        new Map([
          ['a', 'a'],
          ['b', 'b'],
        ]),
      );
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
      const ctx = testContext({ storage: create(), limits: { keyBytes: 4_000 }, mutators: holdingMutators });
      const long = incompressible(3_000);
      const statuses = await pushTogether(ctx, [
        { group: 'a', key: 'a' },
        { group: 'long', key: long },
        { group: 'b', key: 'b' },
      ]);
      expect(statuses).toEqual([200, 200, 200]);
      expect(await serverView(ctx)).toEqual(
        new Map([
          ['a', 'a'],
          ['b', 'b'],
        ]),
      );
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

/** `inner`, whose transactions fail with `error` while `failing` says so. */
function failingWith(inner: Storage, error: () => unknown, failing: () => boolean): Storage {
  return { transaction: (fn, options) => (failing() ? Promise.reject(error()) : inner.transaction(fn, options)) };
}

describe('a store that lost its connection', () => {
  // Every store, routed or not, answers a lost connection the same way: temporary (spec, push
  // rule 7), 503 with Retry-After, so the client backs off and sends again; never a 500.
  const lost = [
    ['a killed backend (57P01)', () => Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' })],
    ["postgres.js's closed connection", () => Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' })],
    ['a refused connection', () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    [
      'a standby reached during a failover (25006)',
      () => Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006', severity: 'ERROR' }),
    ],
  ] as const;
  for (const [what, error] of lost) {
    it(`${what}: pulls and pushes answer 503 with Retry-After, onError is told, and the push applies once the store is back`, async () => {
      let failing = true;
      const ctx = testContext({ storage: failingWith(memoryStorage(), error, () => failing) });
      const pushed = await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])), ctx);
      expect(pushed.status).toBe(503);
      expect(pushed.headers.get('retry-after')).toBe('1');
      expect(await pushed.json()).toMatchObject({ error: 'ServiceUnavailable' });
      const pulled = await handlePull(post('/pull', pullBody('g', null)), ctx);
      expect(pulled.status).toBe(503);
      expect(ctx.errors).toHaveLength(2);
      failing = false;
      expect((await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])), ctx)).status).toBe(200);
      expect(await serverView(ctx)).toEqual(new Map([['k', 1]]));
    });
  }

  it('any other failure of the store is still a 500 that reveals nothing', async () => {
    const ctx = testContext({
      storage: failingWith(
        memoryStorage(),
        () => Object.assign(new Error('relation "viewsync_kv" does not exist'), { code: '42P01' }),
        () => true,
      ),
    });
    const pushed = await handlePush(post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'k', value: 1 })])), ctx);
    expect(pushed.status).toBe(500);
    expect(await pushed.text()).not.toContain('viewsync_kv');
  });
});
