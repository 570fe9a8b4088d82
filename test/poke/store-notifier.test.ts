/**
 * storeNotifier: instances learn of each other's commits by reading the versions of the spaces
 * they hold poke streams for from the store, once per interval: no LISTEN connection, no other
 * service. The same cross-instance cases as postgresNotifier's, on a shared memory store and on
 * a real PostgreSQL server through pg Pools (which never LISTEN).
 */
import pg from 'pg';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { handlePoke, memoryStorage, type Storage, type SyncContext, createContext } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { routedStorage, storeNotifier } from '../../src/ops.js';
import { postgresStorage } from '../../src/postgres.js';
import { testMutators } from '../support/helpers.js';
import { EventReader } from './sse.js';

const INTERVAL = 50;

function instance(storage: Storage, notifier = storeNotifier(storage, { intervalMs: INTERVAL })): SyncContext & { notifier: ReturnType<typeof storeNotifier> } {
  // The context's notifier is the one its pokes name.
  return createContext({
    storage,
    mutators: testMutators,
    space: (request) => new URL(request.url).searchParams.get('space') ?? '',
    pokes: { notifier, coalesceMs: 0 },
    onError: (error) => console.error(error),
  }) as SyncContext & { notifier: ReturnType<typeof storeNotifier> };
}

async function subscribe(ctx: SyncContext, space: string): Promise<EventReader> {
  const response = await handlePoke(new Request(`http://b/poke?space=${encodeURIComponent(space)}`), ctx);
  expect(response.status).toBe(200);
  const reader = new EventReader(response.body!);
  await reader.until(() => reader.comments >= 1);
  return reader;
}

function describeAcrossInstances(name: string, stores: () => [Storage, Storage]) {
  describe(name, () => {
    it('a commit on A pokes the streams of its space on B within an interval, and only of that space', async () => {
      const [a, b] = stores().map((storage) => instance(storage));
      const [acme, other, odd] = [await subscribe(b!, 'acme'), await subscribe(b!, 'other'), await subscribe(b!, 'a\u0000"b":c')];
      await transact(a!, 'acme', (tx) => tx.set('invoice/1', { paid: true }));
      const reads = b!.notifier.reads;
      await acme.until(() => acme.pokes === 1);
      // Within an interval: at B's first read after the commit (or the one under way), counted
      // in reads rather than milliseconds, which a busy machine stretches. How often B reads is
      // the next tests'.
      expect(b!.notifier.reads - reads).toBeLessThanOrEqual(1);
      await transact(a!, 'a\u0000"b":c', (tx) => tx.set('k', 1));
      await odd.until(() => odd.pokes === 1);
      // A call that writes nothing moves no version and pokes no one.
      await transact(a!, 'acme', (tx) => tx.get('invoice/1'));
      await new Promise((resolve) => setTimeout(resolve, INTERVAL * 4));
      expect([acme.pokes, other.pokes, odd.pokes]).toEqual([1, 0, 1]);
      await Promise.all([acme.cancel(), other.cancel(), odd.cancel()]);
      a!.notifier.close();
      b!.notifier.close();
    });

    it('a commit on this instance pokes its own streams at once, once', async () => {
      const [a] = stores().map((storage) => instance(storage, storeNotifier(storage, { intervalMs: 60_000 })));
      const stream = await subscribe(a!, 'acme');
      await transact(a!, 'acme', (tx) => tx.set('k', 1));
      await stream.until(() => stream.pokes === 1, 1_000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(stream.pokes).toBe(1);
      await stream.cancel();
      a!.notifier.close();
    });

    it('reads once per interval however many streams it holds, and stops when none is left', async () => {
      const [a, b] = stores().map((storage) => instance(storage));
      const streams = await Promise.all(Array.from({ length: 100 }, (_, i) => subscribe(b!, `space ${i % 5}`)));
      expect(b!.notifier.spaces).toBe(5);
      const before = b!.notifier.reads;
      await new Promise((resolve) => setTimeout(resolve, INTERVAL * 10));
      const reads = b!.notifier.reads - before;
      // About ten, one per interval: not one per stream or per space. At least one: a busy
      // machine runs timers late and reads slowly (ten reads to the interval: fake timers, below).
      expect(reads).toBeGreaterThanOrEqual(1);
      expect(reads).toBeLessThanOrEqual(11);
      await transact(a!, 'space 3', (tx) => tx.set('k', 1));
      await Promise.all(streams.filter((_, i) => i % 5 === 3).map((stream) => stream.until(() => stream.pokes === 1)));
      expect(streams.filter((stream) => stream.pokes > 0)).toHaveLength(20);
      await Promise.all(streams.map((stream) => stream.cancel()));
      await new Promise((resolve) => setTimeout(resolve, INTERVAL * 2));
      expect(b!.notifier.spaces).toBe(0);
      const idle = b!.notifier.reads;
      await new Promise((resolve) => setTimeout(resolve, INTERVAL * 4));
      expect(b!.notifier.reads).toBe(idle);
      a!.notifier.close();
    });
  });
}

describe('storeNotifier on fake timers', () => {
  it('reads once per intervalMs while a space is watched, and not at all once none is', async () => {
    const storage = memoryStorage();
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const b = instance(storage);
      const unsubscribe = await b.notifier.subscribe('acme', () => {});
      const before = b.notifier.reads;
      await vi.advanceTimersByTimeAsync(INTERVAL * 10);
      expect(b.notifier.reads - before).toBe(10);
      unsubscribe();
      const idle = b.notifier.reads;
      await vi.advanceTimersByTimeAsync(INTERVAL * 10);
      expect(b.notifier.reads).toBe(idle);
      b.notifier.close();
    } finally {
      vi.useRealTimers();
    }
  });
});

describeAcrossInstances('storeNotifier on one memory store shared by two contexts', () => {
  const storage = memoryStorage();
  return [storage, storage];
});

const url = process.env.DATABASE_URL;
const pools: pg.Pool[] = [];
afterAll(async () => {
  await pools[0]?.query(`DROP SCHEMA IF EXISTS "store_notifier_${process.pid}" CASCADE`);
  await Promise.all(pools.map((pool) => pool.end()));
});
if (url !== undefined) {
  describeAcrossInstances('storeNotifier on PostgreSQL, two instances on pg Pools, no LISTEN connection', () => {
    const [a, b] = [new pg.Pool({ connectionString: url, max: 2 }), new pg.Pool({ connectionString: url, max: 2 })];
    pools.push(a, b);
    return [postgresStorage(a, { schema: `store_notifier_${process.pid}` }), postgresStorage(b, { schema: `store_notifier_${process.pid}` })];
  });
} else it.skip('storeNotifier on PostgreSQL: set DATABASE_URL (scripts/start-postgres.sh starts one)', () => {});

describe('storeNotifier when the store fails', () => {
  it('a failed read is reported, and the next one pokes what changed meanwhile', async () => {
    const storage = memoryStorage();
    let failing = false;
    const flaky: Storage = {
      ...storage,
      transaction: (fn, options) => (failing && options.readOnly ? Promise.reject(new Error('the store is away')) : storage.transaction(fn, options)),
    };
    const errors: unknown[] = [];
    const b = instance(flaky, storeNotifier(flaky, { intervalMs: INTERVAL, onError: (error) => errors.push(error) }));
    const a = instance(storage);
    const stream = await subscribe(b, 'acme');
    failing = true;
    await transact(a, 'acme', (tx) => tx.set('k', 1));
    await new Promise((resolve) => setTimeout(resolve, INTERVAL * 4));
    expect(stream.pokes).toBe(0);
    expect(errors.length).toBeGreaterThan(0);
    failing = false;
    await stream.until(() => stream.pokes === 1);
    await stream.cancel();
    a.notifier.close();
    b.notifier.close();
  });
});

describe('on a routed storage', () => {
  it("reads each watched space in its own store: a commit pokes its space's streams on another instance, and a store that is down stops only its own", async () => {
    let down = false;
    const inner = memoryStorage();
    const flaky: Storage = {
      transaction: (fn, options) => (down ? Promise.reject(Object.assign(new Error('gone'), { code: 'ECONNREFUSED' })) : inner.transaction(fn, options)),
    };
    const members = { up: memoryStorage(), flaky };
    const place = (space: string) => (space === 'lost' ? 'flaky' : 'up');
    const [a, b] = [instance(routedStorage({ stores: members, place })), instance(routedStorage({ stores: members, place }))];
    const [kept, lost] = [await subscribe(b, 'kept'), await subscribe(b, 'lost')];
    down = true;
    await transact(a, 'kept', (tx) => tx.set('k', 1));
    await kept.until(() => kept.pokes >= 1, 2_000);
    expect(lost.pokes).toBe(0);
    down = false;
    await transact(a, 'lost', (tx) => tx.set('k', 1));
    await lost.until(() => lost.pokes >= 1, 2_000);
    for (const ctx of [a, b]) ctx.notifier.close();
    await Promise.all([kept.cancel(), lost.cancel()]);
  });
});
