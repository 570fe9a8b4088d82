/**
 * The real client against a server whose retention is seconds: an idle tab's group expires;
 * when the tab comes back, the client is told, starts a new group under the same name (what the
 * default handler's reload does) and ends with the server's full data, logging no error but the
 * client's own notice of ClientStateNotFound. And a tab back after months, whose payment the
 * server applied but never confirmed, does not have it applied again.
 */
import { afterAll, expect, it } from 'vitest';
import { serve, type SyncServer } from '../../adapters/node.js';
import { memoryStorage, type SyncContext } from '../../src/index.js';
import { collectGarbage } from '../../src/ops.js';
import { runtimeContext } from '../runtime/context.js';
import { Clients, FetchRecorder, pendingCount, serverData, snapshot, uniqueName, waitFor } from './client.js';

let server: SyncServer;
const ctx: SyncContext = runtimeContext(memoryStorage(), { retention: { clientGroupsMs: 1_000, tombstonesMs: 1_000 } });
const clients = new Clients(() => server.url);
afterAll(async () => {
  await clients.closeAll();
  await server?.stop();
});

it('an idle tab whose group expired recovers: ClientStateNotFound, a new group, all the data, no client error', async () => {
  server = await serve(ctx, { port: 0 });
  const name = uniqueName('idle-tab');
  let notFound = 0;
  // No pull interval: the tab is idle until the test says otherwise.
  const idle = clients.open({ name, pullInterval: null, onClientStateNotFound: () => notFound++ });
  await idle.mutate.put({ key: 'gc/mine', value: 1 });
  await idle.mutate.put({ key: 'gc/doomed', value: 2 });
  // Only a pull confirms them, and this tab pulls only when told.
  await waitFor(async () => (await idle.pull({ now: true }), (await pendingCount(idle)) === 0), { message: 'the idle tab’s mutations to be confirmed' });

  const other = clients.open({ name: uniqueName('busy-tab') });
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  await other.mutate.put({ key: 'gc/theirs', value: 3 });
  await other.mutate.del({ key: 'gc/doomed' });
  await waitFor(async () => (await pendingCount(other)) === 0);
  await new Promise((resolve) => setTimeout(resolve, 1_200));
  // The idle group, and the tombstone of gc/doomed (older than the idle tab's cookie knows).
  const removed = await collectGarbage(ctx);
  expect(removed.clientGroups).toBeGreaterThanOrEqual(1);
  expect(removed.tombstones).toBe(1);

  await idle.pull({ now: true }).catch(() => {});
  await waitFor(() => notFound === 1, { message: 'onClientStateNotFound on the idle tab' });
  await idle.close();
  // The reload: the same name, a new client group, forked from the old one's data and cookie.
  const back = clients.open({ name });
  await waitFor(async () => JSON.stringify(await snapshot(back, 'gc/')) === JSON.stringify({ 'gc/mine': 1, 'gc/theirs': 3 }), {
    message: async () => `the reopened tab to hold the server's data; it holds ${JSON.stringify(await snapshot(back, 'gc/'))}`,
  } as never);
  expect(await back.clientGroupID).not.toBe(await idle.clientGroupID);
  await back.mutate.put({ key: 'gc/again', value: 4 });
  await waitFor(async () => (await pendingCount(back)) === 0, { message: 'the new group to push' });
  // The client announces ClientStateNotFound itself, at error level; nothing else is an error.
  expect(idle.logs.filter((entry) => entry.level === 'error').map(({ message }) => message.replace(/: \w+$/, ''))).toEqual([
    'Client state not found on server, clientGroupID',
  ]);
  for (const rep of [other, back]) expect(rep.logs.filter((entry) => entry.level === 'error')).toEqual([]);
});

it('a tab reopened months later never applies a mutation twice: mutation recovery after the group expired is refused', async () => {
  // The scenario of a payment: pushed (200), the tab closed before a pull confirmed it, the app
  // updated meanwhile (a new schemaVersion, so a new client group whose mutation recovery sends
  // the old group's pending mutations), with a weekly collection over 100 days.
  let offset = 0;
  const later: SyncContext = runtimeContext(memoryStorage(), { clock: () => Date.now() + offset });
  const laterServer = await serve(later, { port: 0 });
  const recorder = new FetchRecorder();
  const tabs = new Clients(() => laterServer.url);
  try {
    const name = uniqueName('payment');
    const closed = tabs.open({ name, schemaVersion: '1', pullInterval: null });
    await closed.pull({ now: true });
    // The tab closes before any pull confirms the payment: its pulls from here on never arrive
    // (without this, a pull the client makes on its own could confirm it first, under load).
    const recorded = globalThis.fetch;
    const ownID = `${await closed.clientID}-`;
    globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
      const request = input instanceof Request ? input : new Request(input, init);
      const ours = request.url.endsWith('/pull') && (request.headers.get('x-replicache-requestid') ?? '').startsWith(ownID);
      return ours ? Promise.reject(new TypeError('the tab is closing')) : recorded(input, init);
    };
    await closed.mutate.increment({ key: 'pay/balance', delta: 100 });
    await waitFor(async () => (await serverData(laterServer.url, 'pay/'))['pay/balance'] === 100, { message: 'the payment to reach the server' });
    expect(await pendingCount(closed)).toBe(1);
    // The client writes its state to IndexedDB a second after a change; a tab open that long.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const group = await closed.clientGroupID;
    await closed.close();
    globalThis.fetch = recorded;

    for (let week = 0; week < 15; week++) {
      offset += 7 * 24 * 60 * 60 * 1000;
      await collectGarbage(later);
    }
    const sent = recorder.requests.length;
    const reopened = tabs.open({ name, schemaVersion: '2', pullInterval: null });
    const recovery = () =>
      recorder.requests.slice(sent).filter((request) => request.url.endsWith('/push') && (request.body as { clientGroupID?: string })?.clientGroupID === group);
    await waitFor(() => recovery().some((request) => request.status !== 'network-error' && request.responseText !== ''), {
      message: 'the new tab to recover the old group’s mutation',
    });
    expect(await reopened.clientGroupID).not.toBe(group);
    expect(
      recovery().map((request) => [(request.body as { mutations: Array<{ id: number }> }).mutations.map(({ id }) => id), request.status, request.responseText]),
    ).toEqual([[[1], 200, '{"error":"ClientStateNotFound"}']]);
    expect(await serverData(laterServer.url, 'pay/')).toEqual({ 'pay/balance': 100 });
  } finally {
    recorder.restore();
    await tabs.closeAll();
    await laterServer.stop();
  }
});
