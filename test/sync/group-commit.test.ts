import { describe, expect, it } from 'vitest';
import { handlePush, memoryStorage, type Storage, TemporaryError } from '../../src/index.js';
import { mutation, post, pull, push, pushBody, serverView, testContext, testMutators } from '../support/helpers.js';
import { WriteBuffer } from '../../src/storage/write-buffer.js';
import { KEYS_PER_JOB } from '../../src/sync/batching/read-ahead.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { countingPool } from '../support/counting-pool.js';
import { withPostgres } from '../support/stores.js';

/** A memory store that counts its read-write transactions. */
function counting(): { storage: Storage; writes: () => number } {
  const inner = memoryStorage();
  let writes = 0;
  return { storage: { transaction: (fn, options) => (options.readOnly || writes++, inner.transaction(fn, options)) }, writes: () => writes };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

/**
 * A memory store whose write transactions keep what they read, as the database stores do, and
 * note each read they make of the store: a `get` is a round trip on a database, a `getMany` one
 * for all its keys.
 */
function readCounting(): { storage: Storage; gets: string[]; getManys: string[][] } {
  const inner = memoryStorage();
  const gets: string[] = [];
  const getManys: string[][] = [];
  const storage: Storage = {
    transaction: (fn, options) =>
      options.readOnly
        ? inner.transaction(fn, options)
        : inner.transaction(async (tx) => {
            const buffer = new WriteBuffer(
              {
                get: (key) => (gets.push(key), tx.get(key)),
                getMany: async (keys) => (getManys.push([...keys]), Promise.all(keys.map((key) => tx.get(key)))),
                scan: (o) => tx.scan(o),
              },
              { cacheReads: true },
            );
            const result = await fn(buffer);
            await buffer.flushTo(tx);
            return result;
          }, options),
  };
  return { storage, gets, getManys };
}

describe('group commit: pushes to a space that queue behind a running one share its next transaction', () => {
  it('50 concurrent pushes to one space take a few transactions, and every increment lands once', async () => {
    const { storage, writes } = counting();
    const ctx = testContext({
      storage,
      mutators: {
        ...testMutators,
        slowIncrement: async (tx, args: { key: string }) => {
          const n = ((await tx.get(args.key)) as number | undefined) ?? 0;
          await tick();
          await tx.set(args.key, n + 1);
        },
      },
    });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => handlePush(post('/push', pushBody(`g${i}`, [mutation(`c${i}`, 1, 'slowIncrement', { key: 'n' })])), ctx)),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    expect(await serverView(ctx)).toEqual(new Map([['n', 50]]));
    // The first push runs alone; the 49 that queued behind it run together.
    expect(writes()).toBe(2);
    for (let i = 0; i < 50; i++) expect((await pull(ctx, `g${i}`, null)).lastMutationIDChanges).toEqual({ [`c${i}`]: 1 });
  });

  it("in one transaction, each push keeps its own outcome: one push's 400, lost state or temporary error never touches another's writes", async () => {
    const { storage, writes } = counting();
    const ctx = testContext({ storage, mutators: { ...testMutators, gate: () => tick() } });
    await handlePush(post('/push', pushBody('taken', [mutation('shared', 1, 'put', { key: 'x', value: 0 })])), ctx);
    // The first push holds the space while the others queue, so the four share one transaction.
    const first = handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'gate')])), ctx);
    const [refused, lost, temporary, fine] = await Promise.all([
      handlePush(
        post('/push', pushBody('g1', [mutation('c1', 1, 'put', { key: 'refused', value: 1 }), mutation('shared', 2, 'put', { key: 'refused2', value: 1 })])),
        ctx,
      ),
      handlePush(
        post('/push', pushBody('g2', [mutation('c2', 1, 'put', { key: 'lost', value: 1 }), mutation('gone', 7, 'put', { key: 'lost2', value: 1 })])),
        ctx,
      ),
      handlePush(
        post(
          '/push',
          pushBody('g3', [mutation('c3', 1, 'put', { key: 'kept', value: 1 }), mutation('c3', 2, 'putThenTemporary', { key: 'dropped', value: 1 })]),
        ),
        ctx,
      ),
      handlePush(post('/push', pushBody('g4', [mutation('c4', 1, 'put', { key: 'fine', value: 1 })])), ctx),
    ]);
    expect((await first).status).toBe(200);
    expect(refused.status).toBe(400);
    expect(await lost.json()).toEqual({ error: 'ClientStateNotFound' });
    expect(temporary.status).toBe(503);
    expect(fine.status).toBe(200);
    expect(writes()).toBe(3); // the setup push, the first, then the four together
    expect(await serverView(ctx)).toEqual(
      new Map([
        ['x', 0],
        ['kept', 1],
        ['fine', 1],
      ]),
    );
    expect((await pull(ctx, 'g1', null)).lastMutationIDChanges).toEqual({});
    expect((await pull(ctx, 'g2', null)).lastMutationIDChanges).toEqual({});
    expect((await pull(ctx, 'g3', null)).lastMutationIDChanges).toEqual({ c3: 1 });
    expect((await pull(ctx, 'g4', null)).lastMutationIDChanges).toEqual({ c4: 1 });
  });

  it('a store that fails the shared transaction fails every push in it, and commits none', async () => {
    const inner = memoryStorage();
    let failing = false;
    const ctx = testContext({
      storage: {
        transaction: (fn, o) =>
          inner.transaction(async (tx) => {
            const r = await fn(tx);
            if (failing && !o.readOnly) throw new Error('disk full');
            return r;
          }, o),
      },
      mutators: { ...testMutators, gate: () => tick() },
    });
    const first = handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'gate')])), ctx);
    failing = true;
    const rest = await Promise.all(
      [1, 2, 3].map((i) => handlePush(post('/push', pushBody(`g${i}`, [mutation(`c${i}`, 1, 'put', { key: `k${i}`, value: i })])), ctx)),
    );
    expect((await first).status).toBe(500);
    expect(rest.map((r) => r.status)).toEqual([500, 500, 500]);
    failing = false;
    expect(await serverView(ctx)).toEqual(new Map());
  });

  it('spaces queue apart: a slow push in one space does not hold up another space', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ctx = testContext({ space: (r) => new URL(r.url).searchParams.get('s') ?? '', mutators: { ...testMutators, wait: () => gate } });
    const slow = handlePush(post('/push?s=a', pushBody('g', [mutation('c', 1, 'wait')])), ctx);
    const other = await handlePush(post('/push?s=b', pushBody('g', [mutation('c', 1, 'put', { key: 'b', value: 1 })])), ctx);
    expect(other.status).toBe(200);
    release();
    expect((await slow).status).toBe(200);
  });

  it('a temporary error stops only its own push; the pushes grouped after it still run', async () => {
    const ctx = testContext({ mutators: { ...testMutators, gate: () => tick(), flaky: () => Promise.reject(new TemporaryError('later')) } });
    const first = handlePush(post('/push', pushBody('g0', [mutation('c0', 1, 'gate')])), ctx);
    const [flaky, after] = await Promise.all([
      handlePush(post('/push', pushBody('g1', [mutation('c1', 1, 'flaky')])), ctx),
      handlePush(post('/push', pushBody('g2', [mutation('c2', 1, 'put', { key: 'after', value: 1 })])), ctx),
    ]);
    await first;
    expect([flaky.status, after.status]).toEqual([503, 200]);
    expect(await serverView(ctx)).toEqual(new Map([['after', 1]]));
  });
});

describe("read-ahead: a group's push reads what its last push read with the batch's first getMany", () => {
  it("the second push of a group reads its mutator's key ahead, in the one getMany, with no get of its own; and the value is the one committed", async () => {
    const { storage, gets, getManys } = readCounting();
    const ctx = testContext({ storage });
    await push(ctx, 'g', [mutation('c', 1, 'increment', { key: 'n', delta: 1 })]);
    // The first push cannot know the mutator's read: one get of the entry (and one of the store's feed record, read once per space's first write).
    expect(gets).toContain('e//n');
    // Another group writes the key in between: what is read ahead is read in the transaction, so it sees that.
    await push(ctx, 'other', [mutation('d', 1, 'put', { key: 'n', value: 10 })]);
    gets.length = 0;
    getManys.length = 0;
    await push(ctx, 'g', [mutation('c', 2, 'increment', { key: 'n', delta: 1 })]);
    expect(gets).toEqual([]);
    expect(getManys).toHaveLength(1);
    expect(getManys[0]).toContain('e//n');
    expect(await serverView(ctx)).toEqual(new Map([['n', 11]]));
  });

  it('a guess that no longer holds costs a row read ahead for nothing, never a wrong value; the group then learns its new reads', async () => {
    const { storage, gets } = readCounting();
    const ctx = testContext({ storage });
    await push(ctx, 'g', [mutation('c', 1, 'increment', { key: 'a', delta: 1 })]);
    gets.length = 0;
    await push(ctx, 'g', [mutation('c', 2, 'increment', { key: 'b', delta: 5 })]);
    expect(gets).toEqual(['e//b']);
    gets.length = 0;
    await push(ctx, 'g', [mutation('c', 3, 'increment', { key: 'b', delta: 5 })]);
    expect(gets).toEqual([]);
    expect(await serverView(ctx)).toEqual(
      new Map([
        ['a', 1],
        ['b', 10],
      ]),
    );
  });

  it('learns only keys the store read: a key it refused is not read ahead, so it fails no later batch', async () => {
    const inner = readCounting();
    // A store that refuses one key, as a database may refuse a key it cannot hold.
    const storage: Storage = {
      transaction: (fn, options) =>
        options.readOnly
          ? inner.storage.transaction(fn, options)
          : inner.storage.transaction(async (tx) => {
              const refuse = (key: string) => {
                if (key.endsWith('refused')) throw new Error(`the store cannot hold ${key}`);
              };
              return fn({
                ...tx,
                get: async (key) => (refuse(key), tx.get(key)),
                getMany: async (keys) => (keys.forEach(refuse), tx.getMany!(keys)),
                put: (k, v) => tx.put(k, v),
                del: (k) => tx.del(k),
                scan: (o) => tx.scan(o),
              });
            }, options),
    };
    const ctx = testContext({ storage, mutators: { ...testMutators, readKey: async (tx, { key }: { key: string }) => void (await tx.get(key)) } });
    // Its mutator fails (a permanent error: skipped, the push answered 200).
    await push(ctx, 'g', [mutation('c', 1, 'readKey', { key: 'refused' })]);

    expect(String(ctx.errors[0])).toMatch(/cannot hold/);
    await push(ctx, 'g', [mutation('c', 2, 'put', { key: 'after', value: 1 })]);
    expect(await serverView(ctx)).toEqual(new Map([['after', 1]]));
  });

  it('learns at most KEYS_PER_JOB keys of a push, so a mutator that reads much keeps little here', async () => {
    const { storage, gets, getManys } = readCounting();
    const keys = Array.from({ length: 40 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    const ctx = testContext({
      storage,
      mutators: {
        ...testMutators,
        readAll: async (tx) => {
          for (const key of keys) await tx.get(key);
        },
      },
    });
    await push(ctx, 'g', [mutation('c', 1, 'readAll')]);
    gets.length = 0;
    getManys.length = 0;
    await push(ctx, 'g', [mutation('c', 2, 'readAll')]);
    // Beyond what every push reads first (the space's meta, the group's and the client's records):
    // KEYS_PER_JOB keys learned, the first it read (the store's feed record, then entries); the
    // rest are read each when asked for.
    const learned = getManys[0]!.filter((key) => !['m/', 'g//-/g', 'c//-/c'].includes(key));
    expect(learned).toHaveLength(KEYS_PER_JOB);
    const ahead = learned.filter((key) => key.startsWith('e//'));
    expect(ahead).toEqual(keys.slice(0, ahead.length).map((key) => `e//${key}`));
    expect(gets).toEqual(keys.slice(ahead.length).map((key) => `e//${key}`));
  });

  it("on PostgreSQL through a pg Pool, a group's next push reads its mutator's key with the first reads: no statement of its own", async () => {
    if (!withPostgres || process.env.DATABASE_URL === undefined) return;
    const { pool, counted, statements } = countingPool(process.env.DATABASE_URL);
    const schema = `read_ahead_${process.pid}`;
    try {
      const ctx = testContext({ storage: postgresStorage(counted, { schema }) });
      await push(ctx, 'g', [mutation('c', 1, 'increment', { key: 'n', delta: 1 })]);
      statements.length = 0;
      await push(ctx, 'g', [mutation('c', 2, 'increment', { key: 'n', delta: 1 })]);
      // BEGIN, the space's lock, one read of every key (meta, group, client, and the entry
      // learned), the writes (one statement), COMMIT: no `SELECT value` for the mutator's get.
      expect(statements).toEqual(['BEGIN ISOLATION', 'WITH bound', 'SELECT key,', 'WITH gone', 'COMMIT']);
      expect(await serverView(ctx)).toEqual(new Map([['n', 2]]));
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    }
  });
});
