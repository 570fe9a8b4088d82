/**
 * Pulls per edit with the real `replicache` client and `connectPokes`, as an app with a view of
 * lists runs: one page per user, no periodic pulls, so every pull after the first is a poke's.
 * `connectPokes` names the client's group on its stream; the same pages with a stream that names
 * none (what every stream was before) pull once per edit each, their data or not.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, test } from 'vitest';
import { createListener } from '../../adapters/node.js';
import { connectPokes, type PokeTarget } from '../../src/client/index.js';
import { createContext, memoryStorage, type View } from '../../src/index.js';
import { Clients, pendingCount, snapshot, uniqueName, waitFor } from '../interop/client.js';
import { testMutators } from '../support/helpers.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const view: View = async (tx, { userID }) => [`list/${userID}`, ...(((await tx.get(`share/${userID}`)) ?? []) as string[]).map((id) => `list/${id}`)];

/** A server of lists that counts each user's pulls. */
async function start(): Promise<{ url: URL; pulls: Map<string, number> }> {
  const ctx = createContext({
    storage: memoryStorage(),
    mutators: testMutators,
    view,
    authenticate: (request) => request.headers.get('authorization') || null,
  });
  const listener = createListener(ctx);
  const pulls = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    if (req.url?.startsWith('/pull')) pulls.set(req.headers.authorization ?? '', (pulls.get(req.headers.authorization ?? '') ?? 0) + 1);
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`), pulls };
}

/** Pulls by each page for 20 edits by alice in her own list; `named`: streams name their group. */
async function pullsPerEdit(named: boolean): Promise<number[]> {
  const { url, pulls } = await start();
  const clients = new Clients(() => url);
  cleanup.push(() => clients.closeAll());
  const users = ['alice', 'bob', 'carol'];
  const reps = users.map((user) => clients.open({ name: uniqueName(user), auth: user, pullInterval: null }));
  for (const rep of reps) {
    // Without a group, the stream is as an EventSource an app opens itself.
    const target: PokeTarget = named ? rep : { pull: () => rep.pull(), auth: rep.auth };
    const connection = connectPokes(target, new URL('poke', url), { headers: () => ({ authorization: rep.auth }) });
    cleanup.push(() => connection.close());
  }
  const [alice, bob, carol] = reps;
  await waitFor(() => users.every((user) => (pulls.get(user) ?? 0) >= 1), { message: 'each page to pull once its stream opens' });
  // Pulls once opened are counted from here.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const before = users.map((user) => pulls.get(user) ?? 0);
  for (let i = 0; i < 20; i++) {
    await alice!.mutate.put({ key: `list/alice/todo/${i}`, value: i });
    await waitFor(async () => (await pendingCount(alice!)) === 0, { message: `edit ${i} to be confirmed` });
    // Each poke's pull done before the next edit, so that coalescing hides none.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  // A share makes alice's list bob's too: bob is poked, pulls, and sees it.
  await alice!.mutate.put({ key: 'share/bob', value: ['alice'] });
  await waitFor(async () => Object.keys(await snapshot(bob!, 'list/alice/')).length === 20, { message: 'bob to see alice’s shared list' });
  expect(Object.keys(await snapshot(carol!))).toEqual([]);
  return users.map((user, i) => (pulls.get(user) ?? 0) - before[i]!);
}

test('pulls per edit with the real client: with connectPokes naming the group, only the page whose data changed pulls', async () => {
  const named = await pullsPerEdit(true);
  const unnamed = await pullsPerEdit(false);
  console.log(`pulls for 20 edits by alice and a share with bob (alice, bob, carol): groups named ${named.join(', ')}; unnamed ${unnamed.join(', ')}`);
  // Alice pulls for each edit (her push pokes her: she learns its lastMutationID so), bob only
  // for the share, carol never.
  expect(named[0]).toBeGreaterThanOrEqual(20);
  expect(named[0]).toBeLessThanOrEqual(22);
  expect(named[1]).toBeLessThanOrEqual(2);
  expect(named[2]).toBe(0);
  // Before: every page pulls for every edit (fewer on a busy machine, where the client folds a
  // poke into a pull under way).
  expect(unnamed[1]).toBeGreaterThanOrEqual(10);
  expect(unnamed[2]).toBeGreaterThanOrEqual(10);
}, 120_000);
