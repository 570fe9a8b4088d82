import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { postgresStorage } from '../../src/storage/postgres.js';
import { TemporaryError } from '../../src/base/errors.js';
import { isUnreachable } from '../../src/storage/unreachable.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';

// postgres.js 3.4 can lose a statement of a transaction on a connection it reconnected after a
// network cut: the fault-injection suite found a backend waiting for the rest of a statement for
// minutes, in the middle of a transaction, while every later transaction of the space queued
// behind it. Here a fault proxy drops what the driver sends on one connection in the middle of a
// transaction (the server never hears the statement: it waits, holding the space's lock, with
// no server timeout to end the wait), on a real PostgreSQL server.
const url = process.env.DATABASE_URL;
const cleanups: Array<() => Promise<unknown>> = [];

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

/**
 * A store in a schema of its own on postgres.js (two connections) through a fault proxy, with a
 * direct connection to look at the server; all removed after the file.
 */
async function proxiedStore(schema: string, lostAfterMs: number) {
  const admin = postgres(url!, { onnotice: () => {}, max: 1 });
  cleanups.push(async () => (await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`), await admin.end()));
  const proxy: FaultProxy = await startFaultProxy(Number(new URL(url!).port));
  cleanups.push(() => proxy.close());
  const proxied = postgres(proxy.url(url!), { onnotice: () => {}, max: 2, fetch_types: false });
  cleanups.push(() => proxied.end({ timeout: 1 }));
  const store = postgresStorage(proxied, { schema, lostAfterMs });
  await store.migrate();
  return { schema, admin, proxy, store };
}

describe.runIf(url)('a statement postgres.js never sends in full (a fault proxy before a real PostgreSQL server)', () => {
  it('the transaction fails as a lost connection after lostAfterMs, its backend is ended, and the space is free again: the next transaction of it commits', async () => {
    const lostAfterMs = 2_000;
    const { schema, admin, proxy, store } = await proxiedStore(`lost_statement_${process.pid}`, lostAfterMs);
    const direct = postgres(url!, { onnotice: () => {}, max: 2, fetch_types: false });
    cleanups.push(() => direct.end({ timeout: 1 }));
    const other = postgresStorage(direct, { schema });
    await other.transaction(async (tx) => void tx.put('k', 1), { readOnly: false, space: 's' });

    const started = performance.now();
    const stuck = store
      .transaction(
        async (tx) => {
          await tx.get('k');
          proxy.swallowNext();
          await tx.get('k');
          await tx.put('k', 2);
        },
        { readOnly: false, space: 's' },
      )
      .then(
        () => 'committed',
        (error: unknown) => error,
      );
    // The connection that lost the statement, noted while it waits (it closes once its backend ends).
    await expect.poll(() => proxy.swallowing.length, { timeout: 10_000 }).toBe(1);
    const lost = proxy.swallowing;
    const error = await stuck;
    expect(isUnreachable(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/did not answer a statement of the transaction within 2 s/);
    // Bounded: lostAfterMs, not for ever (the bound only catches a hang).
    expect(performance.now() - started).toBeLessThan(lostAfterMs * 10);

    // The backend is ended: its lock is free, and another server's transaction of the space commits.
    await expect
      .poll(async () => (await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE client_port = ANY(${lost}::int[])`)[0]!.n, { timeout: 10_000 })
      .toBe(0);
    await other.transaction(async (tx) => void tx.put('k', 3), { readOnly: false, space: 's' });
    expect(await other.transaction((tx) => tx.get('k'), { readOnly: true, space: 's' })).toBe(3);
    // And the proxied client works on: its pool got its connection back (after, at most, one
    // more lost connection: postgres.js 3.4 may fail a statement with the ended backend's FATAL).
    await expect
      .poll(() => store.transaction((tx) => tx.get('k'), { readOnly: true, space: 's' }).catch((error: unknown) => (isUnreachable(error) ? 'lost' : error)), {
        timeout: 10_000,
      })
      .toBe(3);
  }, 60_000);

  // The holder loses a statement of its body, or the COMMIT postgres.js sends after it (which no
  // statement bound covered: the backend sat idle in the transaction, holding the lock).
  for (const losing of ['a statement', 'its COMMIT'] as const) {
    it(`a transaction that loses ${losing} while it holds the space's lock, with its pool's other connection waiting on that lock, is still ended: the waiter gives up at the server (55P03, a 503) and frees its connection, the holder's backend is ended from it, and the space serves again`, async () => {
      const lostAfterMs = 2_000;
      const { schema, admin, proxy, store } = await proxiedStore(`lost_holder_${process.pid}_${losing.length}`, lostAfterMs);
      const direct = postgres(url!, { onnotice: () => {}, max: 2, fetch_types: false });
      cleanups.push(() => direct.end({ timeout: 1 }));
      const other = postgresStorage(direct, { schema });
      await other.transaction(async (tx) => void tx.put('k', 1), { readOnly: false, space: 's' });

      const holder = store
        .transaction(
          async (tx) => {
            await tx.get('k');
            proxy.swallowNext();
            if (losing === 'a statement') await tx.get('j');
          },
          { readOnly: false, space: 's' },
        )
        .then(
          () => 'committed',
          (error: unknown) => error,
        );
      await expect.poll(() => proxy.swallowing.length, { timeout: 10_000 }).toBe(1);
      const lost = proxy.swallowing;
      // The pool's other connection: a transaction of the space, waiting on the lost one's lock.
      // Were it to wait as long as the holder's bound, the holder's backend would be ended from a
      // connection of the pool when none is free, and it would keep the lock for ever.
      const waiter = store
        .transaction(async (tx) => void tx.put('k', 2), { readOnly: false, space: 's' })
        .then(
          () => 'committed',
          (error: unknown) => error,
        );
      const waited = await waiter;
      expect(waited).toBeInstanceOf(TemporaryError);
      expect((waited as Error).message).toMatch(/busy for longer than 1000 ms/);
      const error = await holder;
      expect(isUnreachable(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(
        losing === 'a statement' ? /did not answer a statement of the transaction within 2 s/ : /did not end the transaction within 2 s/,
      );

      await expect
        .poll(async () => (await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE client_port = ANY(${lost}::int[])`)[0]!.n, { timeout: 10_000 })
        .toBe(0);
      await other.transaction(async (tx) => void tx.put('k', 3), { readOnly: false, space: 's' });
      expect(await other.transaction((tx) => tx.get('k'), { readOnly: true, space: 's' })).toBe(3);
      await expect
        .poll(() => store.transaction((tx) => tx.get('k'), { readOnly: true, space: 's' }).catch((error: unknown) => (isUnreachable(error) ? 'lost' : error)), {
          timeout: 10_000,
        })
        .toBe(3);
    }, 60_000);
  }

  // Lost whole (postgres.js never wrote it: the backend waits idle), or after its first write
  // (its Parse and Describe went, its Bind and Execute did not: the backend waits in the middle of
  // the statement, as the suite saw).
  for (const passing of [0, 1]) {
    it(`a statement outside any transaction (a pull read in one go), lost after ${passing} writes, fails as a lost connection after lostAfterMs, and its backend is ended, so its connection serves again`, async () => {
      const { admin, proxy, store } = await proxiedStore(`lost_read_${process.pid}_${passing}`, 2_000);
      await store.transaction(async (tx) => void tx.put('v/s/1/a', 1), { readOnly: false, space: 's' });
      // A statement new to the connection: postgres.js sends its Parse and Describe, waits for the
      // server's answer, then its Bind and Execute.
      proxy.swallowNext(passing);
      const read = store.readMany!([{ prefix: 'v/s/', limit: 10 }], { space: 's' }).then(
        () => 'answered',
        (error: unknown) => error,
      );
      await expect.poll(() => proxy.swallowing.length, { timeout: 10_000 }).toBe(1);
      const lost = proxy.swallowing;
      const error = await read;
      expect(isUnreachable(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(/did not answer the statement within 2 s/);
      // The backend the lost statement waited on is ended (idle or not), and with it the connection.
      await expect
        .poll(async () => (await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE client_port = ANY(${lost}::int[])`)[0]!.n, { timeout: 10_000 })
        .toBe(0);
      // Both connections serve again (reads enough to need each). postgres.js 3.4 may fail one
      // statement more with the ended backend's FATAL: a lost connection too (503), never another error.
      const reads = () =>
        Promise.all(
          Array.from({ length: 8 }, () =>
            store.readMany!([{ prefix: 'v/s/', limit: 10 }], { space: 's' }).then(
              (rows) => rows[0]!.length,
              (error: unknown) => (isUnreachable(error) ? 'lost' : error),
            ),
          ),
        );
      const seen: unknown[] = [];
      await expect.poll(async () => (seen.push(...(await reads())), seen.slice(-8)), { timeout: 10_000 }).toEqual(Array(8).fill(1));
      expect(seen.filter((outcome) => outcome !== 1 && outcome !== 'lost')).toEqual([]);
    }, 60_000);
  }
});
