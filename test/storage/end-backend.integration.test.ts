/**
 * A lost statement's backend is ended by its process ID (postgres-js.ts `endBackend`), through
 * whichever connection of the pool is free: with several hosts that may be another server, where
 * the ID may be any backend's. Only a backend of the client's own user and application name is
 * ended. On a real PostgreSQL server (`DATABASE_URL`).
 */
import postgres from 'postgres';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { endBackend } from '../../src/storage/postgres-js.js';
import { withPostgres } from '../support/stores.js';

const url = process.env.DATABASE_URL;

describe.runIf(url !== undefined && withPostgres)("ending a lost statement's backend", () => {
  const clients: postgres.Sql[] = [];
  const connect = (application: string) => {
    const sql = postgres(url!, { max: 1, fetch_types: false, onnotice: () => {}, connection: { application_name: application } });
    clients.push(sql);
    return sql;
  };
  afterAll(async () => {
    for (const sql of clients) await sql.end({ timeout: 1 });
  });

  /** The process ID of `sql`'s one connection, idle past the bound's half from then on. */
  const idlePid = async (sql: postgres.Sql) => Number((await sql`SELECT pg_backend_pid() AS pid`)[0]!.pid);
  const alive = async (by: postgres.Sql, pid: number) => Number((await by`SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ${pid}`)[0]!.n) === 1;

  it("ends a backend of its own application, and leaves another application's with that ID alone", async () => {
    const ender = connect('viewsync-app');
    const own = connect('viewsync-app');
    const bystander = connect('someone-else');
    const [ownPid, bystanderPid] = [await idlePid(own), await idlePid(bystander)];
    await new Promise((resolve) => setTimeout(resolve, 300));
    // As a statement whose backend is `pid` would carry it (postgres.js's `state`).
    const lost = (pid: number) => Object.assign(Promise.resolve(), { state: { pid } });
    endBackend(ender as never, lost(bystanderPid), 200);
    endBackend(ender as never, lost(ownPid), 200);
    await vi.waitFor(async () => expect(await alive(ender, ownPid)).toBe(false), { timeout: 10_000 });
    expect(await alive(ender, bystanderPid)).toBe(true);
    expect(Number((await bystander`SELECT 1 AS one`)[0]!.one)).toBe(1);
  }, 30_000);

  it("asks about a process ID past an integer's range (a pooler's key, any 32-bit number) without an error", async () => {
    const sql = connect('viewsync-app');
    const sent: Array<PromiseLike<unknown>> = [];
    const ender = { begin: sql.begin, unsafe: (query: string, params?: never[]) => (sent.push(sql.unsafe(query, params)), sent.at(-1)!) };
    endBackend(ender as never, Object.assign(Promise.resolve(), { state: { pid: 3_000_000_000 } }), 200);
    expect(sent).toHaveLength(1);
    const [answer] = (await sent[0]) as Array<{ self: number }>;
    // And it says which backend ran it: postgres.js's ID of this direct connection, not a pooler.
    expect(answer!.self).toBe((sent[0] as { state?: { pid?: number } }).state?.pid);
  }, 30_000);

  it('on a direct connection, leaves a backend of its own application idle in a transaction alone unless it has the ID: ending such backends is only for behind a pooler, where the ID is unknown', async () => {
    const ender = connect('viewsync-app');
    const idle = connect('viewsync-app');
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let pid = 0;
    const holding = idle.begin(async (tx) => {
      pid = Number((await tx`SELECT pg_backend_pid() AS pid`)[0]!.pid);
      await released;
    });
    await vi.waitFor(() => expect(pid).toBeGreaterThan(0));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const sent: Array<PromiseLike<unknown>> = [];
    const counting = { begin: ender.begin, unsafe: (query: string, params?: never[]) => (sent.push(ender.unsafe(query, params)), sent.at(-1)!) };
    // A lost statement's backend that has gone already: its ID is no backend's.
    endBackend(counting as never, Object.assign(Promise.resolve(), { state: { pid: 2_000_000_000 } }), 200);
    await sent[0];
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(sent).toHaveLength(1);
    expect(await alive(ender, pid)).toBe(true);
    release();
    await holding;
  }, 30_000);
});
