/**
 * Delivery work follows what changed, not how many spaces there are: a runner hears of changes
 * committed elsewhere from its notifier (no sweep over the spaces), and a sweep or a round over
 * many idle spaces costs a few reads, counted with a wrapper around the store, not timed.
 */
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { createContext, memoryStorage, type Storage, type SyncContext } from '../../src/index.js';
import { deliverWebhooks, startWebhooks, transact, type WebhookOptions } from '../../src/backend.js';
import { postgresNotifier } from '../../src/poke/postgres-notifier.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { claimDelivery } from '../../src/sync/feed/deliveries.js';
import { hooksOf } from '../../src/backend/webhooks.js';
import { testMutators } from '../support/helpers.js';
import { testDatabase } from '../support/stores.js';
import { receiversOfTests } from './receiver.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const HOUR = 60 * 60_000;
/** More than one page of the sweep's reads (a thousand spaces). */
const IDLE = 1_200;
const { cleanup, receiver } = receiversOfTests();

function hooked(storage: Storage, url: string, hook: Partial<WebhookOptions> = {}, pokes?: Parameters<typeof createContext>[0]['pokes']): SyncContext {
  return createContext({
    storage,
    mutators: testMutators,
    onError: (error) => cleanup.push(() => expect.fail(String(error))),
    changes: { webhooks: { hook: { url, secret: SECRET, allowPrivateAddresses: true, ...hook } } },
    ...(pokes !== undefined && { pokes }),
  });
}

/** `storage`, its transactions counted, and its write transactions. */
function counted(storage: Storage): Storage & { transactions: number; writes: number } {
  const counter = { transactions: 0, writes: 0 };
  return new Proxy(storage, {
    get(target, property, receiver) {
      if (property === 'transactions' || property === 'writes') return counter[property];
      if (property !== 'transaction') return Reflect.get(target, property, receiver) as unknown;
      return (fn: never, options: { readOnly: boolean }) => {
        counter.transactions++;
        if (!options.readOnly) counter.writes++;
        return target.transaction(fn, options as never);
      };
    },
  }) as Storage & { transactions: number; writes: number };
}

/** IDLE spaces with changes the webhook does not want (outside its prefix), passed over by a round: idle from then on. */
async function idleSpaces(ctx: SyncContext): Promise<void> {
  for (let i = 0; i < IDLE; i++) await transact(ctx, `idle-${i}`, (tx) => tx.set('other', i));
  await deliverWebhooks(ctx);
}

describe('webhook wakes', () => {
  it('startWebhooks delivers a change another context of the process commits, heard from the notifier, with no sweep', async () => {
    const at = await receiver();
    const storage = memoryStorage();
    const deliverer = hooked(storage, at.url);
    const writer = hooked(storage, at.url);
    const runner = startWebhooks(deliverer, { sweepMs: HOUR });
    cleanup.push(() => runner.stop());
    // The first sweep, at start, has nothing to find: what follows is heard, not swept.
    await new Promise((resolve) => setTimeout(resolve, 100));
    await transact(writer, 's', (tx) => tx.set('a', 1));
    await expect.poll(() => at.delivered().flatMap(({ delivery }) => delivery.changes.map((change) => change.op !== 'event' && change.key))).toEqual(['a']);
  });

  it("a change heard from the notifier while another instance holds the delivery's lease takes no write transaction of the runner", async () => {
    const at = await receiver();
    const storage = counted(memoryStorage());
    const deliverer = hooked(storage, at.url);
    const writer = hooked(storage, at.url);
    await transact(writer, 's', (tx) => tx.set('a', 1));
    // Another instance's claim: its lease holds the batch for leaseMs (25 s).
    const [hook] = hooksOf(writer, 's');
    expect((await storage.transaction((tx) => claimDelivery(tx, 's', hook!.rule, 'another-instance', Date.now()), { readOnly: false, space: 's' })).kind).toBe(
      'deliver',
    );
    const runner = startWebhooks(deliverer, { sweepMs: HOUR });
    cleanup.push(() => runner.stop());
    await new Promise((resolve) => setTimeout(resolve, 100));
    const writes = storage.writes;
    await transact(writer, 's', (tx) => tx.set('b', 2));
    // Past the heard change's grace (100 ms) and its look.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(storage.writes - writes).toBe(1);
    expect(at.received).toHaveLength(0);
  });

  it("stop resolves while the notifier's subscribeAll has not (a database down at shutdown)", { timeout: 10_000 }, async () => {
    const at = await receiver();
    let asked = false;
    const notifier = {
      notify: () => {},
      subscribe: () => () => {},
      subscribeAll: () => ((asked = true), new Promise<never>(() => {})),
    };
    const runner = startWebhooks(hooked(memoryStorage(), at.url, {}, { notifier }), { sweepMs: HOUR });
    expect(asked).toBe(true);
    await runner.stop();
  });

  it('a round of deliverWebhooks over many idle spaces costs a few reads, and steps only where something changed', async () => {
    const at = await receiver();
    const storage = counted(memoryStorage());
    const ctx = hooked(storage, at.url, { prefixes: ['wanted/'] });
    await idleSpaces(ctx);
    await transact(ctx, 'idle-7', (tx) => tx.set('wanted/x', 1));
    const before = storage.transactions;
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    // Two pages of spaces (a scan and the states' read each), the one space's claim and record, and what housekeeping the write set off.
    expect(storage.transactions - before).toBeLessThanOrEqual(7);
    expect(at.delivered().map(({ delivery }) => delivery.space)).toEqual(['idle-7']);
  });

  it("startWebhooks' sweep over many idle spaces costs a few reads, not a transaction per space", async () => {
    const at = await receiver();
    const storage = counted(memoryStorage());
    const ctx = hooked(storage, at.url, { prefixes: ['wanted/'] });
    await idleSpaces(ctx);
    const before = storage.transactions;
    const runner = startWebhooks(ctx, { sweepMs: HOUR });
    cleanup.push(() => runner.stop());
    await transact(ctx, 'idle-7', (tx) => tx.set('wanted/x', 1));
    await expect.poll(() => at.delivered().length).toBe(1);
    // Let the first sweep end, if it has not: it finds nothing due but what was delivered.
    await new Promise((resolve) => setTimeout(resolve, 300));
    // The sweep's four reads, the commit, the claim and the record, and a claim the sweep may have woken.
    expect(storage.transactions - before).toBeLessThanOrEqual(10);
    expect(at.delivered()).toHaveLength(1);
  });
});

const database = testDatabase('hook_wakes');
describe.skipIf(database === undefined)('webhook wakes on PostgreSQL', () => {
  it('startWebhooks delivers a change another instance commits, heard through postgresNotifier, with no sweep', async () => {
    const at = await receiver();
    const instances = [0, 1].map(() => {
      const sql = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: 3 });
      const notifier = postgresNotifier(sql);
      afterAll(async () => {
        await notifier.close();
        await sql.end();
      });
      return hooked(postgresStorage(sql, { schema: database!.schema }), at.url, {}, { notifier });
    });
    const runner = startWebhooks(instances[0]!, { sweepMs: HOUR });
    cleanup.push(() => runner.stop());
    await new Promise((resolve) => setTimeout(resolve, 300));
    await transact(instances[1]!, 'elsewhere', (tx) => tx.set('a', 1));
    await expect
      .poll(() => at.delivered().flatMap(({ delivery }) => delivery.changes.map((change) => change.op !== 'event' && change.key)), { timeout: 10_000 })
      .toEqual(['a']);
  });
});
