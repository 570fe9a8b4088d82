/**
 * Webhooks on every store, delivered by several instances at once: three contexts, each with its
 * own connections to one store where it can have them (on PostgreSQL, three clients of one
 * database), each running `startWebhooks`, while all three write to three spaces.
 * The receiver gets every change once, in commit order per space, and no delivery twice: the lease
 * in the store gives each batch to one instance.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createContext, memoryStorage, type Storage } from '../../src/index.js';
import { startWebhooks, transact, type WebhookDelivery } from '../../src/backend.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { testDatabase } from '../support/stores.js';
import { testMutators } from '../support/helpers.js';
import { startReceiver } from './receiver.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** Three stores over the same data, as three instances would open it. */
const stores: Array<[string, () => Storage[]]> = [
  ['memoryStorage (one store, three contexts)', () => Array(3).fill(memoryStorage()) as Storage[]],
  // A SQLite file is served by one process (the store refuses a second handle): three contexts share it.
  [
    'sqliteStorage (one file, three contexts)',
    () => Array(3).fill(sqliteStorage(openSQLite(join(mkdtempSync(join(tmpdir(), 'viewsync-hooks-')), 'hooks.db')))) as Storage[],
  ],
];
const database = testDatabase('hooks');
if (database !== undefined) {
  let tables = 0;
  stores.push([
    'postgresStorage (three postgres.js clients)',
    () => {
      const prefix = `hooks${tables++}_`;
      return [0, 1, 2].map(() => {
        const sql = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: 3 });
        afterAll(() => sql.end());
        return postgresStorage(sql, { schema: database.schema, tablePrefix: prefix });
      });
    },
  ]);
  stores.push([
    'postgresStorage (three pg Pools)',
    () => {
      const prefix = `hooks${tables++}_`;
      return [0, 1, 2].map(() => {
        const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 3 });
        afterAll(() => pool.end());
        return postgresStorage(pool, { schema: database.schema, tablePrefix: prefix });
      });
    },
  ]);
}

describe.each(stores)('webhooks: %s', (_, open) => {
  // Several spaces a request: each group's claims, and its records, one transaction over the spaces' deliveries lanes.
  it.each([1, 10])('three instances deliver every change once, in order per space, each delivery once (spacesPerDelivery %i)', async (spacesPerDelivery) => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const contexts = open().map((storage) =>
      createContext({
        storage,
        mutators: testMutators,
        onError: (error) => cleanup.push(() => expect.fail(String(error))),
        changes: { webhooks: { hook: { url: receiver.url, secret: SECRET, allowPrivateAddresses: true, maxBatch: 5, spacesPerDelivery } } },
      }),
    );
    const runners = contexts.map((ctx) => startWebhooks(ctx, { sweepMs: 100 }));
    cleanup.push(() => Promise.all(runners.map((runner) => runner.stop())));
    const spaces = ['a', 'b', 'c'];
    const written = new Map(spaces.map((space) => [space, [] as string[]]));
    await Promise.all(
      contexts.map(async (ctx, i) => {
        for (let n = 0; n < 20; n++) {
          const space = spaces[(n + i) % 3]!;
          const key = `k/${i}/${n}`;
          await transact(ctx, space, (tx) => tx.set(key, n));
        }
      }),
    );
    for (const ctx of contexts)
      for (const space of spaces)
        for (const [key] of await transact(ctx, space, async (tx) => tx.scan({ prefix: '' }).entries().toArray()))
          written.get(space)!.includes(key) || written.get(space)!.push(key);
    // Each space's batch: a request's body, or an entry of one that carries several spaces.
    const entries = () =>
      receiver.delivered().flatMap(({ body }) => (JSON.parse(body) as { deliveries?: WebhookDelivery[] }).deliveries ?? [JSON.parse(body) as WebhookDelivery]);
    await expect.poll(() => entries().reduce((sum, { changes }) => sum + changes.length, 0), { timeout: 30_000 }).toBe(60);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const ids = receiver.received.map(({ id }) => id);
    expect(ids.length).toBe(new Set(ids).size);
    expect(new Set(entries().map(({ delivery }) => delivery)).size).toBe(entries().length);
    for (const space of spaces) {
      const changes = entries()
        .filter((delivery) => delivery.space === space)
        .flatMap(({ changes }) => changes);
      expect(changes.map(({ version }) => version)).toEqual([...changes.map(({ version }) => version)].sort((x, y) => x - y));
      expect(new Set(changes.map((change) => change.op !== 'event' && change.key))).toEqual(new Set(written.get(space)));
      expect(changes).toHaveLength(20);
    }
    await receiver.verifyAll(SECRET);
  });
});
