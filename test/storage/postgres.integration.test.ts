import { PGlite } from '@electric-sql/pglite';
import { neonConfig, Pool as NeonPool } from '@neondatabase/serverless';
import { describeHistory } from '../history/suite.js';
import pg from 'pg';
import { WebSocket } from 'ws';
import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { TemporaryError } from '../../src/base/errors.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { startRelay } from '../support/ws-relay.js';
import { describeStorageConformance } from './conformance.js';

// PostgreSQL stores: on a real server when DATABASE_URL is set (.ci/run starts one), and always on
// PGlite, so a fresh clone runs these too. Each store gets a schema of its own.
const url = process.env.DATABASE_URL;
// pg 8 deprecates a statement sent while another runs (pg 9 refuses it): the store must not.
const warnings: string[] = [];
process.on('warning', (warning) => warnings.push(`${warning.name}: ${warning.message}`));
const server = url === undefined ? undefined : postgres(url, { onnotice: () => {}, max: 4 });
const pool = url === undefined ? undefined : new pg.Pool({ connectionString: url, max: 4 });
const lite = new PGlite();
const schemas: string[] = [];
const schema = () => {
  const name = `conformance_${process.pid}_${schemas.length}`;
  schemas.push(name);
  return name;
};

afterAll(async () => {
  if (server) {
    for (const name of schemas) await server.unsafe(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
    await server.end();
  }
  await pool?.end();
  await lite.close();
}, 60_000);

if (server)
  describeStorageConformance('postgresStorage (postgres.js, a real server)', () => postgresStorage(server, { schema: schema() }), { lanesApart: true });
if (pool) describeStorageConformance('postgresStorage (a pg Pool, a real server)', () => postgresStorage(pool, { schema: schema() }), { lanesApart: true });
// Neon's serverless Pool, in Node over WebSocket through a local relay to the same server.
const neonPool = await (async () => {
  if (url === undefined) return undefined;
  const target = new URL(url);
  const relay = await startRelay({ host: target.hostname, port: Number(target.port || 5432) });
  neonConfig.webSocketConstructor = WebSocket;
  neonConfig.wsProxy = (host, port) => `${relay.address}/v1?address=${host}:${port}`;
  Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
  const neon = new NeonPool({ connectionString: url, max: 4 });
  neon.on('error', () => {});
  afterAll(async () => {
    await neon.end();
    await relay.close();
  });
  return neon;
})();
if (neonPool)
  describeStorageConformance("postgresStorage (Neon's serverless Pool over WebSocket, a real server)", () => postgresStorage(neonPool, { schema: schema() }));
// History on the third driver too (the other stores run it in test/history/stores.test.ts).
if (neonPool) describeHistory("postgresStorage (Neon's serverless Pool over WebSocket, a real server)", () => postgresStorage(neonPool, { schema: schema() }));
else it.skip('postgresStorage on a real server: set DATABASE_URL (scripts/start-postgres.sh starts one)', () => {});
describeStorageConformance('postgresStorage (PGlite)', () => postgresStorage(lite, { schema: schema() }), { oneAtATime: true });

describe.runIf(server)('postgresStorage on a pg Pool', () => {
  it('refuses a pg Client, one connection, saying to pass a Pool', async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      expect(() => postgresStorage(client as never, { schema: schema() })).toThrow('postgresStorage got a pg Client, one connection: give it a Pool');
    } finally {
      await client.end();
    }
  });

  it('a transaction whose backend is killed fails; its connection is closed, not reused, and the process lives on', async () => {
    const name = `viewsync_kill_${process.pid}`;
    // One connection: were the dead one given back to the pool, the next transaction would fail too.
    const killed = new pg.Pool({ connectionString: url, max: 1, application_name: name });
    killed.on('error', () => {});
    const store = postgresStorage(killed, { schema: schema() });
    try {
      await store.migrate();
      let entered!: () => void;
      const inside = new Promise<void>((resolve) => (entered = resolve));
      let proceed!: () => void;
      const resumed = new Promise<void>((resolve) => (proceed = resolve));
      const failing = store.transaction(
        async (tx) => {
          await tx.get('a');
          entered();
          await resumed;
          await tx.put('a', 1);
        },
        { readOnly: false, space: 's' },
      );
      await inside;
      await server!.unsafe('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [name]);
      // The error reaches the idle-in-transaction connection as an event, between statements.
      await new Promise((resolve) => setTimeout(resolve, 200));
      proceed();
      await expect(failing).rejects.toThrow();
      await store.transaction((tx) => tx.put('b', 2), { readOnly: false, space: 's' });
      expect(await store.transaction((tx) => tx.get('b'), { readOnly: true })).toBe(2);
      expect(await store.transaction((tx) => tx.get('a'), { readOnly: true })).toBeUndefined();
    } finally {
      await killed.end();
    }
  });
});

describe.runIf(server)('postgresStorage on a real server', () => {
  it('two instances starting at once on an empty database both come up, with one set of tables', async () => {
    const name = schema();
    const clients = [postgres(url!, { onnotice: () => {}, max: 1 }), postgres(url!, { onnotice: () => {}, max: 1 })];
    try {
      await Promise.all(
        clients.map((client, i) => postgresStorage(client, { schema: name }).transaction((tx) => tx.put(`from ${i}`, i), { readOnly: false, space: 's' })),
      );
      const tables = await server!.unsafe(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, [name]);
      expect(tables.map((row) => row.table_name)).toEqual(['viewsync_kv', 'viewsync_schema']);
      expect(await server!.unsafe(`SELECT version FROM "${name}".viewsync_schema`)).toEqual([{ version: 1 }]);
    } finally {
      await Promise.all(clients.map((client) => client.end()));
    }
  });

  it('keys are text in the C collation, values text: byte order, and JSON exactly as written', async () => {
    const name = schema();
    await postgresStorage(server!, { schema: name }).migrate();
    const columns = await server!.unsafe(
      `SELECT column_name, data_type, collation_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'viewsync_kv' ORDER BY ordinal_position`,
      [name],
    );
    expect(columns.map((row) => ({ ...row }))).toEqual([
      { column_name: 'key', data_type: 'text', collation_name: 'C' },
      { column_name: 'value', data_type: 'text', collation_name: null },
    ]);
  });

  it('starting on tables that exist prints nothing (was: a NOTICE, relation already exists, on every start, which postgres.js prints by default)', async () => {
    const name = schema();
    const notices: unknown[] = [];
    const client = postgres(url!, { onnotice: (notice) => notices.push(notice), max: 1 });
    try {
      await postgresStorage(client, { schema: name }).migrate();
      await postgresStorage(client, { schema: name }).migrate();
      await postgresStorage(client, { schema: name }).migrate();
    } finally {
      await client.end();
    }
    expect(notices).toEqual([]);
  });

  it('a newer schema version is refused with a clear error', async () => {
    const name = schema();
    await postgresStorage(server!, { schema: name }).migrate();
    await server!.unsafe(`UPDATE "${name}".viewsync_schema SET version = 7`);
    await expect(postgresStorage(server!, { schema: name }).migrate()).rejects.toThrow(
      /schema version 7, newer than this viewsync knows \(1\): upgrade viewsync/,
    );
  });
});

describe.runIf(server)('a write waiting on its space held by another transaction', () => {
  for (const driver of ['postgres.js', 'a pg Pool'] as const) {
    it(`on ${driver}, gives up at the server after lostAfterMs / 2 with a TemporaryError (503), its connection serving again; other spaces go on meanwhile`, async () => {
      // PGlite, starting, holds this file's event loop for seconds: the driver's bound would pass
      // before the waiter heard the server's answer.
      await lite.waitReady;
      const name = schema();
      const holding = postgresStorage(server!, { schema: name });
      const waiting = postgresStorage(driver === 'postgres.js' ? server! : pool!, { schema: name, lostAfterMs: 2_000 });
      await holding.migrate();
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let holds!: () => void;
      const holdsNow = new Promise<void>((resolve) => (holds = resolve));
      const holder = holding.transaction(async (tx) => (await tx.get('k'), holds(), await held, tx.put('k', 'holder')), { readOnly: false, space: 's' });
      await holdsNow;
      try {
        const started = performance.now();
        const error = await waiting
          .transaction((tx) => tx.put('k', 'waiter'), { readOnly: false, space: 's' })
          .then(
            () => 'committed',
            (error: unknown) => error,
          );
        expect(error, String(error)).toBeInstanceOf(TemporaryError);
        expect((error as TemporaryError).status).toBe(503);
        expect((error as Error).message).toMatch(/busy for longer than 1000 ms/);
        // The time bound only catches a hang.
        expect(performance.now() - started).toBeLessThan(20_000);
        await waiting.transaction((tx) => tx.put('k', 'other space'), { readOnly: false, space: 't' });
      } finally {
        release();
        await holder;
      }
      expect(await waiting.transaction((tx) => tx.get('k'), { readOnly: true, space: 's' })).toBe('holder');
      await waiting.transaction((tx) => tx.put('k', 'waiter'), { readOnly: false, space: 's' });
      expect(await holding.transaction((tx) => tx.get('k'), { readOnly: true, space: 's' })).toBe('waiter');
    });
  }
});

it.runIf(url !== undefined)('on pg, no statement was sent while another ran (pg 8 warns, pg 9 refuses)', () => {
  expect(warnings.filter((warning) => warning.includes('already executing a query'))).toEqual([]);
});

describe.runIf(pool)('postgresStorage.readMany on a real server', () => {
  it('reads each range and each joined key through the primary key index, never a whole-table scan', async () => {
    const seen: Array<{ text: string; params: unknown[] }> = [];
    const watched = {
      async connect() {
        const client = await pool!.connect();
        return Object.assign(Object.create(client) as typeof client, {
          query: (text: string, params: unknown[] = []) => (
            text.startsWith('SELECT * FROM ((SELECT 0 AS i') && seen.push({ text, params }), client.query(text, params)
          ),
          release: (destroy?: boolean) => client.release(destroy),
        });
      },
    };
    const name = schema();
    const storage = postgresStorage(watched, { schema: name });
    // Enough rows that a join could take the whole table (hash it) for a lookup per row.
    await storage.transaction(
      async (tx) => {
        for (let i = 0; i < 5_000; i++) {
          await tx.put(`e/item${i}`, { i });
          await tx.put(`v/0${i % 9}/item${i}`, null);
        }
      },
      { readOnly: false },
    );
    await pool!.query(`ANALYZE "${name}".viewsync_kv`);
    const [meta, changes] = await storage.readMany!(
      [
        { prefix: 'e/item1', limit: 1 },
        { prefix: 'v/', start: { key: 'v/08' }, limit: 128, join: { prefix: 'e/', skip: 3 } },
      ],
      {},
    );
    expect(meta).toEqual([['e/item1', { i: 1 }, undefined]]);
    expect(changes).toHaveLength(128);
    for (const [key, , joined] of changes!) expect(joined).toEqual({ i: Number(key.slice('v/08/item'.length)) });
    const { text, params } = seen.at(-1)!;
    const plan = async () => (await pool!.query(`EXPLAIN (FORMAT JSON) ${text}`, params)).rows[0]['QUERY PLAN'] as Array<{ Plan: { 'Total Cost': number } }>;
    const small = await plan();
    expect(JSON.stringify(small)).toContain('Index Scan');
    expect(JSON.stringify(small)).not.toContain('Seq Scan');
    // Its estimated cost must not grow with the table: past PostgreSQL's JIT threshold (cost
    // 100,000), every run would be compiled first (7 ms, for a read of 0.2).
    await pool!.query(`INSERT INTO "${name}".viewsync_kv SELECT 'other/' || n, '{}' FROM generate_series(1, 100000) n`);
    await pool!.query(`ANALYZE "${name}".viewsync_kv`);
    const large = await plan();
    expect(large[0]!.Plan['Total Cost']).toBeLessThan(small[0]!.Plan['Total Cost'] * 1.5);
  });
});

describe.runIf(server)('a commit whose writes the server refuses, COMMIT sent with them (postgres.js)', () => {
  it('commits none of them: not the other puts, not the deletes; the transaction rejects with the server error, and the next commits', async () => {
    const storage = postgresStorage(server!, { schema: schema() });
    await storage.transaction(async (tx) => (await tx.put('kept', 1), tx.put('doomed', 1)), { readOnly: false, space: 's' });
    // Past the btree's 2,704 bytes, and incompressible: the index refuses the row (54000).
    const long = Array.from(crypto.getRandomValues(new Uint8Array(3_000)), (byte) => String.fromCharCode(33 + (byte % 90))).join('');
    const refused = storage.transaction(
      async (tx) => {
        await tx.put('kept', 2);
        await tx.put(long, 'too long');
        await tx.del('doomed');
      },
      { readOnly: false, space: 's' },
    );
    await expect(refused).rejects.toMatchObject({ code: '54000' });
    const read = () => storage.transaction(async (tx) => [await tx.get('kept'), await tx.get('doomed')], { readOnly: true, space: 's' });
    expect(await read()).toEqual([1, 1]);
    await storage.transaction(async (tx) => (await tx.put('kept', 3), tx.del('doomed')), { readOnly: false, space: 's' });
    expect(await read()).toEqual([3, undefined]);
  });
});
