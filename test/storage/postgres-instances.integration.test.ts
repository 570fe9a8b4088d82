import postgres from 'postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { serve, type SyncServer } from '../../adapters/node.js';
import { type JSONValue, type SyncContext, TemporaryError, createContext } from '../../src/index.js';
import type { PatchOperation } from '../../src/protocol.js';
import { postgresNotifier, postgresStorage } from '../../src/postgres.js';
import { EventReader } from '../poke/sse.js';
import { applyPatch, mutation, pullBody, pushBody, testMutators } from '../support/helpers.js';

// Several server instances on one PostgreSQL database: each instance its own connection pool,
// store and Node server, so they meet only in the database. Needs a real server (DATABASE_URL).
const url = process.env.DATABASE_URL;
const admin = url === undefined ? undefined : postgres(url, { onnotice: () => {}, max: 2 });
const schemas: string[] = [];
const running: Array<() => Promise<void>> = [];

afterAll(async () => {
  await Promise.all(running.splice(0).map((stop) => stop()));
  if (admin) {
    for (const schema of schemas) await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
}, 60_000);

function newSchema(): string {
  const schema = `instances_${process.pid}_${schemas.length}`;
  schemas.push(schema);
  return schema;
}

let gate: Promise<void> = Promise.resolve();
const mutators = {
  ...testMutators,
  /** Writes, then waits for the test to let it finish. */
  waitThenPut: async (tx: Parameters<(typeof testMutators)['put']>[0], args: { key: string; value: JSONValue }) => {
    await tx.set(`${args.key}/first`, args.value);
    await gate;
    await tx.set(args.key, args.value);
  },
  never: () => Promise.reject(new TemporaryError('unused')),
};

/** A server instance: its own pool, store and Node server, on `schema`. */
async function instance(schema: string, name = 'viewsync'): Promise<{ server: SyncServer; stop: () => Promise<void> }> {
  const sql = postgres(url!, { onnotice: () => {}, max: 8, connection: { application_name: name }, fetch_types: false });
  // Notices on a channel of this test's own, so that other tests' instances stay out.
  const notifier = postgresNotifier(sql, { channel: schema });
  const ctx: SyncContext = createContext({ storage: postgresStorage(sql, { schema }), mutators, onError: () => {}, pokes: { notifier } });
  const server = await serve(ctx, { port: 0 });
  const stop = async () => {
    await server.stop();
    await sql.end({ timeout: 1 });
  };
  running.push(stop);
  return { server, stop };
}

async function send(server: SyncServer, path: 'push' | 'pull', body: unknown): Promise<Response> {
  return fetch(new URL(path, server.url), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

describe.runIf(admin)('instances sharing one PostgreSQL database', () => {
  it('16 clients push 50 increments each to random instances while pullers apply every patch: exactly 800, every lastMutationID 50, no 5xx', async () => {
    const schema = newSchema();
    const instances = [await instance(schema), await instance(schema)];
    const pick = () => instances[Math.floor(Math.random() * instances.length)]!.server;
    const statuses: number[] = [];
    let pushing = true;

    const clients = Array.from({ length: 16 }, async (_, c) => {
      for (let id = 1; id <= 50; id++) {
        // A real client retries until the push is answered 200; count every answer.
        for (;;) {
          const response = await send(pick(), 'push', pushBody(`group-${c}`, [mutation(`client-${c}`, id, 'increment', { key: 'counter', delta: 1 })]));
          statuses.push(response.status);
          if (response.status === 200) break;
        }
      }
    });
    const pullers = Array.from({ length: 4 }, async (_, p) => {
      let cookie: JSONValue = null;
      let view = new Map<string, JSONValue>();
      const pullOnce = async () => {
        const response = await send(pick(), 'pull', pullBody(`puller-${p}`, cookie));
        statuses.push(response.status);
        const body = (await response.json()) as { cookie: JSONValue; patch: PatchOperation[] };
        view = applyPatch(view, body.patch);
        cookie = body.cookie;
      };
      while (pushing) await pullOnce();
      await pullOnce();
      return view;
    });
    await Promise.all(clients);
    pushing = false;
    const views = await Promise.all(pullers);

    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    const full = (await (await send(instances[0]!.server, 'pull', pullBody('checker', null))).json()) as { patch: PatchOperation[] };
    const truth = applyPatch(new Map(), full.patch);
    expect(truth.get('counter')).toBe(800);
    for (const view of views) expect(view).toEqual(truth);
    for (let c = 0; c < 16; c++) {
      const { lastMutationIDChanges } = (await (await send(instances[1]!.server, 'pull', pullBody(`group-${c}`, null))).json()) as {
        lastMutationIDChanges: Record<string, number>;
      };
      expect(lastMutationIDChanges).toEqual({ [`client-${c}`]: 50 });
    }
  }, 120_000);

  it('a push whose connection is killed halfway leaves nothing, and the retry applies it', async () => {
    const schema = newSchema();
    const { server } = await instance(schema, 'victim');
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    const body = pushBody('g', [mutation('c', 1, 'put', { key: 'before', value: 1 }), mutation('c', 2, 'waitThenPut', { key: 'k', value: 2 })]);
    const pushing = send(server, 'push', body);
    // Wait until the transaction is open (it holds the space's advisory lock), then kill it.
    await expect
      .poll(
        async () =>
          (
            await admin!.unsafe(
              `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'advisory' AND a.application_name = 'victim'`,
            )
          )[0]!.n,
        { timeout: 10_000 },
      )
      .toBeGreaterThan(0);
    await admin!.unsafe(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'victim'`);
    release();
    // A lost connection is temporary: 503, and the client sends the push again.
    expect((await pushing).status).toBe(503);
    const view = async () => applyPatch(new Map(), ((await (await send(server, 'pull', pullBody('g', null))).json()) as { patch: PatchOperation[] }).patch);
    expect(await view()).toEqual(new Map());
    gate = Promise.resolve();
    expect((await send(server, 'push', body)).status).toBe(200);
    expect(await view()).toEqual(
      new Map<string, JSONValue>([
        ['before', 1],
        ['k', 2],
        ['k/first', 2],
      ]),
    );
  }, 60_000);

  it('restarting an instance loses nothing: its clients carry on where they were', async () => {
    const schema = newSchema();
    const first = await instance(schema);
    expect(
      (await send(first.server, 'push', pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 }), mutation('c', 2, 'put', { key: 'b', value: 2 })])))
        .status,
    ).toBe(200);
    const before = (await (await send(first.server, 'pull', pullBody('g', null))).json()) as { cookie: JSONValue };
    await first.stop();

    const second = await instance(schema);
    const after = (await (await send(second.server, 'pull', pullBody('g', before.cookie))).json()) as { cookie: JSONValue; patch: unknown[] };
    expect(after).toEqual({ cookie: before.cookie, lastMutationIDChanges: {}, patch: [] });
    // The client's next mutation continues its sequence: no ClientStateNotFound.
    const next = await send(second.server, 'push', pushBody('g', [mutation('c', 3, 'put', { key: 'c', value: 3 })]));
    expect(await next.json()).toEqual({});
    const full = (await (await send(second.server, 'pull', pullBody('g', null))).json()) as {
      patch: PatchOperation[];
      lastMutationIDChanges: Record<string, number>;
    };
    expect(applyPatch(new Map(), full.patch)).toEqual(
      new Map([
        ['a', 1],
        ['b', 2],
        ['c', 3],
      ]),
    );
    expect(full.lastMutationIDChanges).toEqual({ c: 3 });
  }, 60_000);
  it('a push on one instance pokes the streams of its space on the others; a dropped LISTEN connection, once back, pokes them all', async () => {
    const schema = newSchema();
    const [a, b] = [await instance(schema, 'poke-a'), await instance(schema, 'poke-b')];
    const open = async (server: { server: SyncServer }) => {
      const response = await fetch(new URL('poke', server.server.url));
      expect(response.status).toBe(200);
      const reader = new EventReader(response.body!);
      await reader.until(() => reader.blocks.length > 0);
      return reader;
    };
    const [onA, onB] = [await open(a), await open(b)];
    const latencies: number[] = [];
    for (let i = 1; i <= 20; i++) {
      const started = performance.now();
      expect((await send(a.server, 'push', pushBody('poke-group', [mutation('poke-client', i, 'put', { key: 'k', value: i })]))).status).toBe(200);
      await onB.until(() => onB.pokes === i);
      latencies.push(performance.now() - started);
      await onA.until(() => onA.pokes === i);
      // Past the coalescing window, so that each push is a poke of its own.
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    expect(onB.pokes).toBe(20);
    latencies.sort((x, y) => x - y);
    console.log(`push on A until poke on B, 20 pushes: p50 ${latencies[10]!.toFixed(1)} ms, max ${latencies[19]!.toFixed(1)} ms`);

    // Kill B's listening connection: postgres.js reconnects, and B pokes its streams, since
    // notices sent in between are lost.
    await admin!.unsafe(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'poke-b' AND query ILIKE 'listen%'`);
    await onB.until(() => onB.pokes === 21, 15_000);
    expect((await send(a.server, 'push', pushBody('poke-group', [mutation('poke-client', 21, 'put', { key: 'k', value: 21 })]))).status).toBe(200);
    await onB.until(() => onB.pokes === 22, 15_000);
    await Promise.all([onA.cancel(), onB.cancel()]);
  });
});

if (!admin) it.skip('instances sharing one PostgreSQL database: set DATABASE_URL (scripts/start-postgres.sh starts a server)', () => {});
