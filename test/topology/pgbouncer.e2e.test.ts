/**
 * The store behind PgBouncer in transaction pool mode (test/support/pgbouncer.ts), as
 * docs/production.md sets it up: two instances, each with its own pool, over two PostgreSQL
 * servers reached only through PgBouncer, on postgres.js with `prepare: false` and on pg's Pool.
 * Pushes, pulls, pokes between the instances through `storeNotifier` (LISTEN does not work
 * there), housekeeping, a move of a space between the two servers while it is pushed to, and
 * (postgres.js) the CLI's move back, its URLs saying `prepare=false`.
 * The fault-injection suite's `pgbouncer` topology runs the same deployment under faults.
 */
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createContext, handlePoke, type Storage, type SyncContext } from '../../src/index.js';
import { collectGarbage, moveSpace, routedStorage, storeNotifier } from '../../src/ops.js';
import { main } from '../../src/cli/main.js';
import { postgresStorage } from '../../src/postgres.js';
import { EventReader } from '../poke/sse.js';
import { pullFrom, pushTo } from '../route/support.js';
import { type Cluster, haveServers, startCluster } from '../support/clusters.js';
import { mutation, testMutators } from '../support/helpers.js';
import { havePgBouncer, type PgBouncer, startPgBouncer } from '../support/pgbouncer.js';
import { fastLoop } from '../support/stores.js';

const DAY = 24 * 60 * 60 * 1000;

describe.runIf(havePgBouncer() && haveServers() && !fastLoop)('behind PgBouncer in transaction pool mode', () => {
  let clusters: Cluster[] = [];
  let bouncer: PgBouncer;
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    clusters = [startCluster('bounced-a'), startCluster('bounced-b')];
    bouncer = await startPgBouncer({ a: clusters[0]!.url, b: clusters[1]!.url });
  }, 120_000);

  afterAll(async () => {
    for (const close of closers) await close().catch(() => {});
    await bouncer?.stop();
    for (const cluster of clusters) cluster.remove();
  });

  /** One instance's store: its own pool per server, through PgBouncer only. */
  const store = (driver: 'postgres.js' | 'pg', prefix: string | undefined): Storage => {
    const client = (name: string) => {
      if (driver === 'pg') {
        const pool = new pg.Pool({ connectionString: bouncer.url(name), max: 4 });
        pool.on('error', () => {});
        closers.push(() => pool.end());
        return pool;
      }
      // Transaction mode lends a different server connection to each transaction: a statement
      // prepared on one is unknown on the next.
      const sql = postgres(bouncer.url(name), { max: 4, prepare: false, fetch_types: false, onnotice: () => {} });
      closers.push(() => sql.end({ timeout: 1 }));
      return sql;
    };
    return routedStorage({
      stores: { a: postgresStorage(client('a'), { tablePrefix: prefix }), b: postgresStorage(client('b'), { tablePrefix: prefix }) },
      place: () => 'a',
    });
  };

  for (const driver of ['postgres.js', 'pg'] as const) {
    it(`${driver}: pushes, pulls, pokes through storeNotifier, housekeeping and a move between the two servers${driver === 'postgres.js' ? ", and the CLI's move back" : ''}`, async () => {
      // Each driver in tables of its own, so the two runs share nothing; postgres.js's in the
      // default ones, which the CLI opens.
      const prefix = driver === 'pg' ? 'pgpool_' : undefined;
      let now = Date.now();
      const instance = (storage: Storage) => {
        const notifier = storeNotifier(storage, { intervalMs: 50 });
        closers.push(async () => notifier.close());
        const errors: unknown[] = [];
        const ctx = createContext({
          storage,
          mutators: testMutators,
          space: (request) => new URL(request.url).searchParams.get('space') ?? '',
          pokes: { notifier, coalesceMs: 0 },
          clock: () => now,
          retention: { clientGroupsMs: 7 * DAY },
          onError: (error) => errors.push(error),
        });
        return Object.assign(ctx, { errors });
      };
      const [one, two] = [instance(store(driver, prefix)), instance(store(driver, prefix))];

      // A poke stream on the second instance; a push on the first.
      const stream = await handlePoke(new Request('http://b/poke?space=s'), two);
      expect(stream.status).toBe(200);
      const reader = new EventReader(stream.body!);
      closers.push(() => reader.cancel());
      await reader.until(() => reader.comments >= 1);
      const next = new Map<string, number>();
      const pushAs = async (ctx: SyncContext & { errors: unknown[] }, group: string, delta: number) => {
        const client = `${group}-client`;
        const id = (next.get(client) ?? 0) + 1;
        const response = await pushTo(ctx, 's', group, [mutation(client, id, 'increment', { key: 'count', delta })]);
        expect(response.status, `${await response.clone().text()} ${String(ctx.errors.at(-1))}`).toBe(200);
        next.set(client, id);
      };
      await pushAs(one, 'g1', 1);
      await reader.until(() => reader.pokes >= 1, 10_000);

      // Pulls on either instance see it.
      const pulled = async (ctx: SyncContext & { errors: unknown[] }, group: string, cookie: unknown) => {
        const response = await pullFrom(ctx, 's', group, cookie);
        expect(response.status, `${await response.clone().text()} ${String(ctx.errors.at(-1))}`).toBe(200);
        return (await response.json()) as {
          cookie: unknown;
          lastMutationIDChanges: Record<string, number>;
          patch: Array<{ op: string; key?: string; value?: unknown }>;
          error?: string;
        };
      };
      const first = await pulled(two, 'g1', null);
      expect(first.lastMutationIDChanges).toEqual({ 'g1-client': 1 });
      expect(first.patch).toContainEqual({ op: 'put', key: 'count', value: 1 });

      // A move to the other server while both instances push to the space.
      let moving = true;
      const pushers = [one, two].map(async (ctx, i) => {
        for (let n = 0; moving || n < 3; n++) await pushAs(ctx, `mover${i}`, 1);
      });
      const moved = await moveSpace(one, 's', 'b');
      moving = false;
      await Promise.all(pushers);
      expect(moved.to).toBe('b');
      const acknowledged = 1 + [...next.entries()].filter(([client]) => client.startsWith('mover')).reduce((sum, [, id]) => sum + id, 0);
      // Every acknowledged push counted once, read after the move from the other server.
      const after = await pulled(two, 'g1', first.cookie);
      expect(after.patch).toContainEqual({ op: 'put', key: 'count', value: acknowledged });
      const pokesBefore = reader.pokes;
      await pushAs(one, 'g1', 1);
      await reader.until(() => reader.pokes > pokesBefore, 10_000);

      // Housekeeping, a week on: the idle groups go, on the server the space lives on now.
      now += 8 * DAY;
      const collected = await collectGarbage(one, 's');
      expect(collected.clientGroups).toBe(3);
      expect((await pulled(two, 'g1', after.cookie)).error).toBe('ClientStateNotFound');
      expect([...one.errors, ...two.errors]).toEqual([]);

      if (driver === 'postgres.js') {
        // The CLI through the pooler: postgres.js reads prepare=false from the URL.
        const url = (name: string) => `${name}=${bouncer.url(name)}?prepare=false`;
        expect(await main(['move', 's', '--to', 'a', '--store', url('a'), '--store', url('b'), '--quiet'])).toBe(0);
        const fresh = await pulled(two, 'fresh', null);
        expect(fresh.patch).toContainEqual({ op: 'put', key: 'count', value: acknowledged + 1 });
      }
    }, 120_000);
  }

  it('postgres.js preparing statements behind it: each failure says to pass prepare: false', async () => {
    const sql = postgres(bouncer.url('a'), { max: 4, fetch_types: false, onnotice: () => {} });
    closers.push(() => sql.end({ timeout: 1 }));
    const storage = postgresStorage(sql, { tablePrefix: 'prepared_' });
    // Four at a time, so that PgBouncer lends several server connections, each transaction
    // whichever is free: a statement prepared on one is missing from the next, soon.
    const failures: Error[] = [];
    for (let round = 0; round < 50 && failures.length < 3; round++) {
      await Promise.all(
        Array.from({ length: 4 }, (_, i) =>
          storage.transaction((tx) => tx.put(`k${i}`, round), { readOnly: false, space: `s${i}` }).catch((error: Error) => failures.push(error)),
        ),
      );
    }
    expect(failures.length).toBeGreaterThan(0);
    for (const failure of failures) expect(failure.message).toMatch(/pooler in transaction mode \(PgBouncer\): pass `prepare: false`/);
  }, 60_000);
});
