/**
 * Webhook deliveries and writes of one space do not wait for each other where the store locks a
 * space's write lanes apart (PostgreSQL, SQLite): a delivery's transactions are of the deliveries lane,
 * a push's and `transact`'s of the data lane. Each case holds one side's transaction open and
 * checks that the other goes through meanwhile; each fails when deliveries lock the whole space.
 */
import postgres from 'postgres';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createContext, type Storage } from '../../src/index.js';
import { deliverWebhooks, transact } from '../../src/backend.js';
import { collectGarbage } from '../../src/ops.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { testDatabase } from '../support/stores.js';
import { testMutators } from '../support/helpers.js';
import { startReceiver } from './receiver.js';
import { readFeedRecords } from '../../src/sync/feed/feed-record.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const stores: Array<[string, () => Storage]> = [['sqliteStorage', () => sqliteStorage(openSQLite())]];
const database = testDatabase('lanes');
if (database !== undefined) {
  let tables = 0;
  stores.push([
    'postgresStorage',
    () => {
      const sql = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: 4 });
      afterAll(() => sql.end());
      return postgresStorage(sql, { schema: database.schema, tablePrefix: `lanes${tables++}_` });
    },
  ]);
}

/** A store whose deliveries transactions, once they hold their lane, wait for `gate` to open. */
function heldDeliveries(storage: Storage, gate: Promise<void>): { storage: Storage; held: () => number } {
  let held = 0;
  return {
    held: () => held,
    storage: {
      ...storage,
      transaction: (fn, options) =>
        storage.transaction(async (tx) => {
          if (options.lane === 'deliveries') {
            // A read first: on PostgreSQL it is answered once the lane's lock is granted.
            await tx.get('held');
            held++;
            await gate;
          }
          return fn(tx);
        }, options),
    },
  };
}

function opened(): { gate: Promise<void>; release: () => void } {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return { gate, release };
}

/**
 * Waits for the store's feed record, which a context's first write sets in a transaction of no
 * space: that one waits for every space, and so would whatever queues behind it.
 */
async function feedRecorded(storage: Storage): Promise<void> {
  await expect.poll(async () => (await readFeedRecords(storage))[0]?.[1]?.on).toBe(true);
}

/** `work`, or a string saying it waited `ms`. */
function within<T>(work: Promise<T>, ms: number): Promise<T | string> {
  return Promise.race([work, new Promise<string>((resolve) => setTimeout(() => resolve(`still waiting after ${ms} ms`), ms))]);
}

describe.each(stores)('webhook deliveries and writes of one space on %s', (_, open) => {
  it('a delivery goes through while a transact of its space holds its transaction open', async () => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const ctx = createContext({
      storage: open(),
      mutators: testMutators,
      changes: { webhooks: { hook: { url: receiver.url, secret: SECRET, allowPrivateAddresses: true } } },
    });
    await transact(ctx, 'a', (tx) => tx.set('x', 1));
    await feedRecorded(ctx.storage);
    const { gate, release } = opened();
    const holding = transact(ctx, 'a', async (tx) => {
      await tx.set('y', 2);
      await gate;
    });
    cleanup.push(() => (release(), holding));
    expect(await within(deliverWebhooks(ctx, { space: 'a' }), 5_000)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    expect(receiver.delivered().flatMap(({ delivery }) => delivery.changes.map((change) => ('key' in change ? change.key : change.op)))).toEqual(['x']);
    release();
    await holding;
    await deliverWebhooks(ctx, { space: 'a' });
    expect(receiver.delivered().flatMap(({ delivery }) => delivery.changes.map((change) => ('key' in change ? change.key : change.op)))).toEqual(['x', 'y']);
  });

  it("a transact goes through while a delivery's transaction of its space is held open, and the delivery then goes on", async () => {
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const { gate, release } = opened();
    const store = heldDeliveries(open(), gate);
    const ctx = createContext({
      storage: store.storage,
      mutators: testMutators,
      changes: { webhooks: { hook: { url: receiver.url, secret: SECRET, allowPrivateAddresses: true } } },
    });
    await transact(ctx, 'a', (tx) => tx.set('x', 1));
    await feedRecorded(ctx.storage);
    const delivering = deliverWebhooks(ctx, { space: 'a' });
    cleanup.push(() => (release(), delivering));
    await expect.poll(store.held).toBe(1);
    expect(
      await within(
        transact(ctx, 'a', (tx) => tx.set('y', 2)),
        5_000,
      ),
    ).toBeUndefined();
    release();
    expect((await delivering).failed).toBe(0);
    await deliverWebhooks(ctx, { space: 'a' });
    expect(receiver.delivered().flatMap(({ delivery }) => delivery.changes.map((change) => ('key' in change ? change.key : change.op)))).toEqual(['x', 'y']);
  });
  it("housekeeping, which trims the log a delivery reads, waits for a delivery's transaction of its space, and goes on after it", async () => {
    const { gate, release } = opened();
    const store = heldDeliveries(open(), gate);
    const receiver = await startReceiver();
    cleanup.push(() => receiver.close());
    const ctx = createContext({
      storage: store.storage,
      mutators: testMutators,
      retention: { changesMs: 1, historyMs: 1 },
      changes: { webhooks: { hook: { url: receiver.url, secret: SECRET, allowPrivateAddresses: true } } },
    });
    await transact(ctx, 'a', (tx) => tx.set('x', 1));
    await feedRecorded(ctx.storage);
    const delivering = deliverWebhooks(ctx, { space: 'a' });
    cleanup.push(() => (release(), delivering));
    await expect.poll(store.held).toBe(1);
    let collected = false;
    const collecting = collectGarbage(ctx, 'a').then((result) => ((collected = true), result));
    expect(await within(collecting, 500)).toBe('still waiting after 500 ms');
    expect(collected).toBe(false);
    release();
    await delivering;
    await collecting;
  });
});
