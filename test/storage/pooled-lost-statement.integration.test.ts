/**
 * A statement postgres.js loses behind PgBouncer in transaction mode (test/support/pgbouncer.ts),
 * with a fault proxy between PgBouncer and the server (`DATABASE_URL`) that drops what PgBouncer
 * sends on one server connection. The process ID postgres.js knows there is PgBouncer's key, not a
 * backend's: the lost transaction's backend was never ended, and held its space's lock for as long
 * as its connection lived. The fault-injection suite's `pgbouncer` topology stalled on it once its
 * faults were over (the space's migrations and writes answered 503 for good).
 */
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { TemporaryError } from '../../src/base/errors.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { isUnreachable } from '../../src/storage/unreachable.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { havePgBouncer, type PgBouncer, startPgBouncer } from '../support/pgbouncer.js';
import { withPostgres } from '../support/stores.js';

const url = process.env.DATABASE_URL;
const cleanups: Array<() => Promise<unknown>> = [];

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
});

/** The fault proxy and PgBouncer, one for the file (each takes seconds to stop). */
let pooler: Promise<{ proxy: FaultProxy; bouncer: PgBouncer }> | undefined;
function startPooler() {
  pooler ??= (async () => {
    const proxy = await startFaultProxy(Number(new URL(url!).port));
    cleanups.push(() => proxy.close());
    const bouncer = await startPgBouncer({ db: proxy.url(url!) });
    cleanups.push(() => bouncer.stop());
    return { proxy, bouncer };
  })();
  return pooler;
}

/** A store in a schema of its own on postgres.js (two connections, `prepare: false`) through PgBouncer and the fault proxy, with a direct connection to look at the server. */
async function pooledStore(schema: string, lostAfterMs: number) {
  const { proxy, bouncer } = await startPooler();
  const admin = postgres(url!, { onnotice: () => {}, max: 1 });
  cleanups.push(async () => (await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`), await admin.end()));
  const pooled = postgres(bouncer.url('db'), { onnotice: () => {}, max: 2, fetch_types: false, prepare: false });
  cleanups.push(() => pooled.end({ timeout: 1 }));
  const store = postgresStorage(pooled, { schema, lostAfterMs, prepare: false });
  await store.migrate();
  await store.transaction(async (tx) => void tx.put('k', 1), { readOnly: false, space: 's' });
  return { admin, proxy, store };
}

describe.runIf(url !== undefined && withPostgres && havePgBouncer())('a statement postgres.js loses behind PgBouncer in transaction mode', () => {
  // Lost whole (the backend idle in the transaction), after its first write (with `prepare:
  // false`, postgres.js sends a statement's Parse and Describe, then its Bind and Execute once
  // answered: the backend waits in the middle of the statement, as the suite's stall showed), or
  // its COMMIT.
  for (const [losing, passing] of [
    ['a statement', 0],
    ['the rest of a statement', 1],
    ['its COMMIT', 0],
  ] as const) {
    it(`a transaction that loses ${losing} while it holds the space's lock fails as a lost connection, its backend is ended, and the space takes writes again`, async () => {
      const { admin, proxy, store } = await pooledStore(`pooled_lost_${process.pid}_${losing.length}`, 2_000);
      const holder = store
        .transaction(
          async (tx) => {
            await tx.get('k');
            proxy.swallowNext(passing);
            if (losing !== 'its COMMIT') await tx.get('j');
          },
          { readOnly: false, space: 's' },
        )
        .then(
          () => 'committed',
          (error: unknown) => error,
        );
      await expect.poll(() => proxy.swallowing.length, { timeout: 10_000 }).toBe(1);
      const lost = proxy.swallowing;
      // Its backend waits on its client, holding the lock, as the suite saw it.
      await expect
        .poll(async () => (await admin`SELECT state FROM pg_stat_activity WHERE client_port = ANY(${lost}::int[])`)[0]?.state, { timeout: 1_500 })
        .toBe(passing === 1 ? 'active' : 'idle in transaction');
      const error = await holder;
      expect(isUnreachable(error), String(error)).toBe(true);
      expect((error as Error).message).toMatch(
        losing === 'its COMMIT' ? /did not end the transaction within 2 s/ : /did not answer a statement of the transaction within 2 s/,
      );

      // That backend (PgBouncer's connection to the server) is ended.
      await expect
        .poll(async () => (await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE client_port = ANY(${lost}::int[])`)[0]!.n, { timeout: 10_000 })
        .toBe(0);
      // The space's lock is free: a write of it commits (a 503 at most while PgBouncer and
      // postgres.js learn that the connection is gone).
      await expect
        .poll(
          () =>
            store
              .transaction(async (tx) => void tx.put('k', 3), { readOnly: false, space: 's' })
              .then(
                () => 'committed',
                (error: unknown) => (isUnreachable(error) || error instanceof TemporaryError ? 'retry' : error),
              ),
          { timeout: 10_000 },
        )
        .toBe('committed');
      expect(await store.transaction((tx) => tx.get('k'), { readOnly: true, space: 's' })).toBe(3);
    }, 60_000);
  }
});
