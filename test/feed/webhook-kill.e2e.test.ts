/**
 * Webhook deliverers killed (-9) mid-delivery, as real processes on one PostgreSQL: the batch a
 * killed process was sending goes out again from another, under the same delivery ID, once the
 * dead one's lease has run out; a process started after a kill goes on from where the store says
 * deliveries got to, sending again at most the batch that was in flight, under its ID.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createContext } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { bundled, Watched } from '../chaos/processes.js';
import { testDatabase } from '../support/stores.js';
import { startReceiver } from './receiver.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const database = testDatabase('hookkill');

describe.skipIf(database === undefined)('webhook deliverers killed mid-delivery', () => {
  it('pass the batch in flight on under its ID, and lose nothing', async () => {
    const receiver = await startReceiver();
    const crashes: string[] = [];
    const script = await bundled('test/feed/deliverer.ts');
    const env = { DATABASE_URL: process.env.DATABASE_URL!, SCHEMA: database!.schema, TABLE_PREFIX: 'kill_', RECEIVER_URL: receiver.url, SECRET };
    const storage = postgresStorage(database!.sql, { schema: database!.schema, tablePrefix: 'kill_' });
    const ctx = createContext({ storage, mutators: {}, changes: {} });
    const processes: Watched[] = [];
    afterAll(async () => {
      for (const each of processes) await each.stop();
      await receiver.close();
    });
    /** The distinct changes delivered (answered 2xx), in the order they first came. */
    const deliveredChanges = () => [
      ...new Map(receiver.delivered().flatMap(({ delivery }) => delivery.changes.map((change) => [change.id, change] as const))).values(),
    ];
    const write = async (from: number, to: number) => {
      for (let i = from; i < to; i++) await transact(ctx, 's', (tx) => tx.set(`k${String(i).padStart(2, '0')}`, i));
    };
    await write(0, 4);

    // The first process's first request hangs; it is killed while it waits.
    receiver.answer = 'stall';
    const first = new Watched('deliverer 1', script, env, crashes);
    processes.push(first);
    await first.start();
    await expect.poll(() => receiver.received.length, { timeout: 20_000 }).toBe(1);
    await first.kill();
    const inFlight = receiver.received[0]!.id;

    // Started at once, another waits out the dead one's lease; its clock ahead, it takes the batch over.
    receiver.answer = 'ok';
    const second = new Watched('deliverer 2', script, { ...env, CLOCK_OFFSET_MS: String(60_000) }, crashes);
    processes.push(second);
    await second.start();
    await expect.poll(() => deliveredChanges().length, { timeout: 20_000 }).toBe(4);
    expect(receiver.delivered()[0]!.id).toBe(inFlight);

    // Killed (perhaps mid-delivery), then more changes: a third process sends those.
    await second.kill();
    await write(4, 8);
    const third = new Watched('deliverer 3', script, { ...env, CLOCK_OFFSET_MS: String(120_000) }, crashes);
    processes.push(third);
    await third.start();
    await expect.poll(() => deliveredChanges().length, { timeout: 20_000 }).toBe(8);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(deliveredChanges().map((change) => change.op !== 'event' && change.key)).toEqual(
      Array.from({ length: 8 }, (_, i) => `k${String(i).padStart(2, '0')}`),
    );
    // A batch sent again (the one in flight at the first kill; maybe one the second process sent
    // and was killed before recording) came under the ID it had, with the same changes; no change
    // came under two IDs.
    const bodies = new Map<string, string>();
    for (const { id, delivery } of receiver.received)
      expect(JSON.stringify(delivery.changes), id).toBe(bodies.get(id) ?? (bodies.set(id, JSON.stringify(delivery.changes)), JSON.stringify(delivery.changes)));
    const idsOf = new Map<string, Set<string>>();
    for (const { id, delivery } of receiver.received) for (const change of delivery.changes) idsOf.set(change.id, (idsOf.get(change.id) ?? new Set()).add(id));
    expect([...idsOf.values()].filter((ids) => ids.size > 1)).toEqual([]);
    expect(receiver.received.filter(({ id }) => id === inFlight).length).toBeGreaterThanOrEqual(2);
    expect(crashes).toEqual([]);
    await receiver.verifyAll(SECRET);
  });
});
