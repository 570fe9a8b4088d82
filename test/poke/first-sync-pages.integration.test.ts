/**
 * A first sync in pages with the real `replicache` client and `connectPokes`, nothing else: the
 * client takes each page, is poked, pulls the next, and ends holding the space as the server
 * does, its own writes made meanwhile included. No periodic pulls (`pullInterval: null`), so each
 * page after the first comes from a poke.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { createListener } from '../../adapters/node.js';
import { connectPokes } from '../../src/client/index.js';
import { createContext, type JSONValue, memoryStorage, type Mutators } from '../../src/index.js';
import { Clients, FetchRecorder, pendingCount, uniqueName, waitFor } from '../interop/client.js';
import { mutation, push, serverView, testMutators } from '../support/helpers.js';

const ENTRIES = 30_000;
const PAGE_BYTES = 2 ** 20;
const keyOf = (i: number) => `todo/${String(i).padStart(6, '0')}`;

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const mutators: Mutators = {
  ...testMutators,
  fill: async (tx, { from, count }: { from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.set(keyOf(i), { title: `Todo ${i} `.padEnd(240, '.'), done: false });
  },
};

test('the stock client syncs a big space page by page, poked for each, and ends with the server’s data and its own writes', async () => {
  const ctx = createContext({ storage: memoryStorage(), mutators, firstSync: { pageBytes: PAGE_BYTES } });
  const fills = [];
  for (let from = 0, id = 1; from < ENTRIES; from += 5_000, id++) fills.push(mutation('filler', id, 'fill', { from, count: 5_000 }));
  await push(ctx, 'filler-group', fills);
  const listener = createListener(ctx);
  const server: Server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
  const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
  // The stream's own fetch: the recorder reads each answer whole before handing it on.
  const streamFetch = globalThis.fetch;
  const recorder = new FetchRecorder();
  cleanup.push(() => recorder.restore());
  const clients = new Clients(() => url);
  cleanup.push(() => clients.closeAll());

  const rep = clients.open({ name: uniqueName('pages'), pullInterval: null });
  const connection = connectPokes(rep, new URL('poke', url), { fetch: streamFetch });
  cleanup.push(() => connection.close());
  // What the app sees as the space fills: the count its subscription is told each time.
  const seen: number[] = [];
  cleanup.push(
    rep.subscribe(
      (tx) =>
        tx
          .scan({ prefix: 'todo/' })
          .keys()
          .toArray()
          .then((keys) => keys.length),
      (count) => void seen.push(count),
    ),
  );
  // The app writes while the pages come.
  await rep.mutate.put({ key: 'todo/999999', value: { title: 'mine', done: true } });
  await waitFor(async () => seen.at(-1) === ENTRIES + 1 && (await pendingCount(rep)) === 0, {
    timeout: 60_000,
    message: 'the client to hold every entry and its own',
  });

  const pulls = recorder.requests.filter((request) => request.url.endsWith('/pull') && request.status === 200);
  const pages = pulls.filter((request) => JSON.parse(request.responseText).cookie?.page !== undefined);
  const largest = Math.max(...pulls.map((request) => request.responseText.length));
  console.log(`first sync in pages: ${pulls.length} pulls (${pages.length} pages), largest answer ${largest} bytes; the app saw ${seen.join(', ')} entries`);
  expect(pages.length).toBeGreaterThanOrEqual(6);
  expect(largest).toBeLessThan(PAGE_BYTES + 8_192);
  // The app saw the space fill a page at a time, never shrink.
  expect(seen.length).toBeGreaterThanOrEqual(pages.length);
  expect(seen.every((count, i) => i === 0 || count >= seen[i - 1]!)).toBe(true);
  // Each page's cookie was the next pull's: no page skipped or taken twice.
  for (let i = 1; i < pulls.length; i++) expect((pulls[i]!.body as { cookie: unknown }).cookie).toEqual(JSON.parse(pulls[i - 1]!.responseText).cookie);
  // What the server holds, read whole (by a context on the same store that does not page).
  const whole = await serverView(createContext({ ...ctx.options, firstSync: undefined }));
  const held = await rep.query(async (tx) => new Map((await tx.scan().entries().toArray()) as Array<[string, JSONValue]>));
  expect(held).toEqual(whole);
  expect(held.get('todo/999999')).toEqual({ title: 'mine', done: true });
}, 120_000);
