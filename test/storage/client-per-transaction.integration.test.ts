import pg from 'pg';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { clientPerTransaction } from '../../src/storage/client-per-transaction.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { describeStorageConformance } from './conformance.js';

// The store on a client per transaction (what the edge examples use, there on Neon's Client): the
// same guarantees as on a pool, and no connection left once a transaction ends.
const url = process.env.DATABASE_URL;
const server = url === undefined ? undefined : postgres(url, { onnotice: () => {}, max: 1 });
const schemas: string[] = [];
const schema = () => {
  const name = `per_transaction_${process.pid}_${schemas.length}`;
  schemas.push(name);
  return name;
};

afterAll(async () => {
  for (const name of schemas) await server?.unsafe(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
  await server?.end();
}, 60_000);

// Fewer property cases than the pool's run: each transaction here forks a backend, and the driver
// behind this seam is the pool's own, checked in full in postgres.integration.test.ts.
if (url !== undefined)
  describeStorageConformance(
    'postgresStorage (a pg Client per transaction, a real server)',
    () =>
      postgresStorage(
        clientPerTransaction(() => new pg.Client({ connectionString: url })),
        { schema: schema() },
      ),
    { runs: 10 },
  );

describe.runIf(server)('clientPerTransaction', () => {
  const named = (name: string) => clientPerTransaction(() => new pg.Client({ connectionString: url, application_name: name }));
  const open = async (name: string) => Number((await server!`SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = ${name}`)[0]!.n);
  const until = async (condition: () => Promise<boolean>) => {
    for (const deadline = Date.now() + 5_000; !(await condition()); ) {
      if (Date.now() > deadline) throw new Error('a connection was not ended within 5 s');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it('a transaction holds one connection of its own, ended when it ends; concurrent ones each have theirs', async () => {
    const name = `viewsync_per_tx_${process.pid}`;
    const store = postgresStorage(named(name), { schema: schema() });
    await store.migrate();
    await until(async () => (await open(name)) === 0);
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => (inside = resolve));
    let leave!: () => void;
    const left = new Promise<void>((resolve) => (leave = resolve));
    const held = Array.from({ length: 3 }, (_, i) =>
      store.transaction(
        async (tx) => {
          await tx.put(`k${i}`, i);
          if (i === 2) inside();
          await left;
        },
        { readOnly: false, space: `s${i}` },
      ),
    );
    await entered;
    await until(async () => (await open(name)) === 3);
    leave();
    await Promise.all(held);
    await until(async () => (await open(name)) === 0);
    expect(await store.transaction((tx) => tx.get('k1'), { readOnly: true, space: 's1' })).toBe(1);
    await until(async () => (await open(name)) === 0);
  });

  it('a client that cannot connect fails the transaction, and the next one connects anew', async () => {
    const unreachable = new URL(url!);
    unreachable.port = '1';
    let first = true;
    const store = postgresStorage(
      clientPerTransaction(() => {
        const client = new pg.Client({ connectionString: first ? unreachable.href : url });
        first = false;
        return client;
      }),
      { schema: schema() },
    );
    await expect(store.migrate()).rejects.toThrow(/ECONNREFUSED/);
    await store.migrate();
  });

  it('refuses anything but a function that makes a client, saying what to pass', () => {
    expect(() => clientPerTransaction(new pg.Client() as never)).toThrow('clientPerTransaction takes a function that makes a client');
  });
});
