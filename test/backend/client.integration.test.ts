/**
 * A backend write reaches the real `replicache` client (in Node, over fake-indexeddb, through the
 * Node adapter) on every store a Node server runs: the client polls never (`pullInterval: null`),
 * so what it shows came through the poke the write sent, and the pull that followed. And a client
 * whose space is exported and imported into another store, with writes pending, goes on there.
 */
import { PGlite } from '@electric-sql/pglite';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ReadonlyJSONValue } from 'replicache';
import { serve, type SyncServer } from '../../adapters/node.js';
import { connectPokes } from '../../src/client/index.js';
import { memoryStorage, type Storage, createContext } from '../../src/index.js';
import { mutate, transact } from '../../src/backend.js';
import { exportSpace, importSpace } from '../../src/ops.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { Clients, uniqueName, waitFor } from '../interop/client.js';
import { runtimeMutators } from '../runtime/app.js';
import { testDatabase } from '../support/stores.js';

const database = testDatabase('backend_client');
/** On the real server, a schema per store made: a test that moves a space needs two stores, not one twice. */
const schemas: string[] = [];
afterAll(async () => {
  for (const schema of schemas) await database?.sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
});

const stores: Array<[string, () => Storage]> = [
  ['memoryStorage', () => memoryStorage()],
  ['sqliteStorage', () => sqliteStorage(openSQLite())],
  [
    database === undefined ? 'postgresStorage (PGlite)' : 'postgresStorage (a real server)',
    () => {
      if (database === undefined) return postgresStorage(new PGlite());
      const schema = `${database.schema}_${schemas.length + 1}`;
      schemas.push(schema);
      return postgresStorage(database.sql, { schema });
    },
  ],
];

describe.each(stores)('a backend write reaches the real client: %s', (_, create) => {
  let server: SyncServer;
  const clients = new Clients(() => server.url);
  const closing: Array<() => void> = [];
  afterEach(async () => {
    for (const close of closing.splice(0)) close();
    await clients.closeAll();
    await server?.stop();
  });

  it('transact, mutate and importSpace each show on a subscribed screen, with no polling', async () => {
    const ctx = createContext({ storage: create(), mutators: runtimeMutators, onError: (error: unknown) => console.error(error) });
    server = await serve(ctx, { port: 0 });
    const rep = clients.open({ name: uniqueName('backend'), pullInterval: null });
    closing.push(connectPokes(rep, new URL('poke', server.url)).close);
    const shown = { invoices: {} as Record<string, ReadonlyJSONValue> };
    rep.subscribe((tx) => tx.scan({ prefix: 'invoice/' }).entries().toArray(), { onData: (entries) => (shown.invoices = Object.fromEntries(entries)) });
    const showing = (expected: Record<string, ReadonlyJSONValue>) =>
      waitFor(() => JSON.stringify(shown.invoices) === JSON.stringify(expected), {
        message: () => `the screen to show ${JSON.stringify(expected)}; it shows ${JSON.stringify(shown.invoices)}`,
      });

    await rep.mutate.put({ key: 'invoice/1', value: { paid: false } });
    await showing({ 'invoice/1': { paid: false } });
    await waitFor(async () => (await rep.experimentalPendingMutations()).length === 0, { message: 'the client’s write to be confirmed' });

    // A payment webhook marks it paid.
    await transact(ctx, '', async (tx) => tx.set('invoice/1', { ...((await tx.get('invoice/1')) as object), paid: true }));
    await showing({ 'invoice/1': { paid: true } });
    await mutate(ctx, '', 'put', { key: 'invoice/2', value: { paid: false } });
    await showing({ 'invoice/1': { paid: true }, 'invoice/2': { paid: false } });
    await importSpace(ctx, '', ['{"viewsync":"space","format":2}\n{"key":"invoice/3","value":{"paid":true}}\n{"viewsync":"end","entries":1}\n'], {
      mode: 'replace',
    });
    await showing({ 'invoice/3': { paid: true } });
    // The client's own mutations still go through: its lastMutationID was left alone.
    await rep.mutate.put({ key: 'invoice/4', value: { paid: false } });
    await waitFor(async () => (await rep.experimentalPendingMutations()).length === 0, { message: 'the client’s second write to be confirmed' });
    await showing({ 'invoice/3': { paid: true }, 'invoice/4': { paid: false } });
    await waitFor(() => rep.logs.filter((entry) => entry.level === 'error').length === 0, { message: () => JSON.stringify(rep.logs) });
  });

  it('a client whose space moves to another store (export, import) with mutations pending goes on there: each applies once, none is lost', async () => {
    const onError = (error: unknown) => console.error(error);
    const source = createContext({ storage: create(), mutators: runtimeMutators, onError });
    server = await serve(source, { port: 0 });
    const port = Number(server.url.port);
    const rep = clients.open({ name: uniqueName('moved'), pullInterval: null });
    // Pushed at once; confirmed by the pull that reports its lastMutationID.
    const confirmed = async () => (await rep.pull(), (await rep.experimentalPendingMutations()).length === 0);
    await rep.mutate.put({ key: 'todo/1', value: 'before' });
    await waitFor(confirmed, { message: 'the first write to be confirmed' });
    // The old server goes down; the client's next writes wait, pending, while the space moves.
    await server.stop();
    await rep.mutate.put({ key: 'todo/2', value: 'during' });
    await rep.mutate.put({ key: 'todo/3', value: 'during' });
    expect(await rep.experimentalPendingMutations()).toHaveLength(2);
    const dump = await new Response(exportSpace(source, '')).text();
    const target = createContext({ storage: create(), mutators: runtimeMutators, onError });
    expect(await importSpace(target, '', [dump], { mode: 'replace' })).toMatchObject({ groups: 1, clients: 1, skipped: [] });
    server = await serve(target, { port });
    await waitFor(confirmed, { timeout: 20_000, message: 'the pending writes to be confirmed by the new store' });
    await waitFor(async () => (await rep.query((tx) => tx.scan({ prefix: 'todo/' }).entries().toArray())).length === 3, {
      message: 'the client to show its three writes',
    });
    const dumped = await new Response(exportSpace(target, '')).text();
    expect(dumped.split('\n').slice(1, 4)).toEqual([
      '{"key":"todo/1","value":"before"}',
      '{"key":"todo/2","value":"during"}',
      '{"key":"todo/3","value":"during"}',
    ]);
    expect(dumped).toMatch(/"clients":\{"[^"]+":3\}\}\n/);
    // Pushes to the stopped server failed meanwhile; what must not happen is a reset.
    expect(rep.logs.filter((entry) => /ClientStateNotFound/.test(entry.message))).toEqual([]);
  });
});
