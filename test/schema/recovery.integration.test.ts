/**
 * A deploy from schema version 1 to 2 with the real `replicache` client (in Node, over
 * fake-indexeddb): an app at version 1 goes offline with pending mutations; the server deploys
 * version 2 (a mutator's args and a key layout changed) and migrates the data; the app reopens as
 * version 2 and its version 1 work lands, through the client's mutation recovery, upgraded. A
 * device still on version 1 keeps syncing in its own shape until the window closes; then its
 * `onUpdateNeeded` runs once, what it did just before lands, and its reopening as version 2
 * recovers nothing twice and asks for no update again.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createListener } from '../../adapters/node.js';
import { createContext, memoryStorage, type Mutators, type SchemaOptions, type SyncContext } from '../../src/index.js';
import { transact } from '../../src/backend.js';
import { Clients, pendingCount, snapshot, uniqueName, waitFor } from '../interop/client.js';
import { migrateV1Entries, mutatorsV1, mutatorsV2, schemaV2 } from './app.js';

describe('a deploy from schema version 1 to 2, with the real client', () => {
  const storage = memoryStorage();
  const errors: unknown[] = [];
  const serving = (mutators: object, schema: SchemaOptions): SyncContext =>
    createContext({ storage, mutators: mutators as Mutators, schema, onError: (error) => errors.push(error) });
  /** What answers requests now: a version of the server, or nothing (the network is down). */
  let listener: ((req: IncomingMessage, res: ServerResponse) => void) | 'offline' = createListener(serving(mutatorsV1, { current: '1' }));
  let server: Server;
  let url: URL;
  const clients = new Clients(() => url);

  beforeAll(async () => {
    server = createServer((req, res) => (listener === 'offline' ? req.socket.destroy() : listener(req, res)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  });
  afterEach(() => clients.closeAll());
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  it('version 1’s offline work lands after the deploy, and a version 1 device syncs in its shape until its window closes, then updates once', async () => {
    const app = uniqueName('app');
    const device = uniqueName('device');
    const a = clients.open({ name: app, schemaVersion: '1', mutators: mutatorsV1 });
    const b = clients.open({ name: device, schemaVersion: '1', mutators: mutatorsV1 });
    await a.mutate.addTodo({ id: 'milk', text: 'Milk' });
    await waitFor(async () => (await pendingCount(a)) === 0, { message: 'the first to-do to be pushed and confirmed' });

    // Offline: the app works on, and what it did waits in IndexedDB.
    listener = 'offline';
    await a.mutate.addTodo({ id: 'eggs', text: 'Eggs' });
    await a.mutate.bump({ id: 'milk' });
    expect(await pendingCount(a)).toBe(2);
    // The client writes its pending mutations to IndexedDB about once a second.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    await a.close();

    // The deploy: version 2, serving version 1 through its upgrades and reads, over the migrated data.
    const v2 = serving(mutatorsV2, schemaV2);
    await transact(v2, '', migrateV1Entries);
    listener = createListener(v2);

    // The app comes back as version 2: a new client group, which recovers the old one's mutations.
    const a2 = clients.open({ name: app, schemaVersion: '2', mutators: mutatorsV2 });
    const expected = { 'task/eggs': { title: 'Eggs', done: false, count: 0 }, 'task/milk': { title: 'Milk', done: false, count: 1 } };
    let held = {};
    await waitFor(async () => JSON.stringify((held = await snapshot(a2))) === JSON.stringify(expected), {
      message: () => `the v1 work to land; the app holds ${JSON.stringify(held)}`,
      timeout: 15_000,
    });
    // The device still on version 1 holds the same to-dos, in its own shape.
    const inV1 = { 'todo/eggs': { text: 'Eggs', done: false, count: 0 }, 'todo/milk': { text: 'Milk', done: false, count: 1 } };
    await waitFor(async () => JSON.stringify(await snapshot(b)) === JSON.stringify(inV1), { message: 'the v1 device to read the v1 shape' });
    // What version 2 writes reaches it, in its shape; what it writes lands, upgraded.
    await a2.mutate.addTodo({ id: 'tea', title: 'Tea' });
    await waitFor(async () => JSON.stringify((await snapshot(b))['todo/tea']) === JSON.stringify({ text: 'Tea', done: false, count: 0 }), {
      message: 'a v2 to-do to reach the v1 device',
    });
    await b.mutate.bump({ id: 'tea' });
    await waitFor(async () => JSON.stringify((await snapshot(a2))['task/tea']) === JSON.stringify({ title: 'Tea', done: false, count: 1 }), {
      message: 'the v1 device’s bump to reach v2',
    });

    // The window closes while the device has a mutation pending: its push still lands.
    listener = 'offline';
    await b.mutate.bump({ id: 'tea' });
    let updates = 0;
    let b2: typeof a2 | undefined;
    const reopen = () => {
      updates++;
      // What an app's onUpdateNeeded does: load the new version (here, reopen as version 2).
      void b.close().then(() => (b2 = clients.open({ name: device, schemaVersion: '2', mutators: mutatorsV2 })));
    };
    b.onUpdateNeeded = reopen;
    listener = createListener(serving(mutatorsV2, { ...schemaV2, minimum: '2' }));
    await waitFor(() => b2 !== undefined, { message: 'onUpdateNeeded on the v1 device' });
    await waitFor(async () => JSON.stringify((await snapshot(b2!))['task/tea']) === JSON.stringify({ title: 'Tea', done: false, count: 2 }), {
      message: 'the device, reopened as v2, to hold its last bump, applied once',
    });
    // Its recovery of the old group and its own pulls for a while: no second update, nothing applied twice.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(updates).toBe(1);
    expect(b2!.updatesNeeded).toEqual([]);
    expect(a2.updatesNeeded).toEqual([]);
    expect((await snapshot(a2))['task/tea']).toEqual({ title: 'Tea', done: false, count: 2 });
    expect(errors).toEqual([]);
  }, 60_000);
});
