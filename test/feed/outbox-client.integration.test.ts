/**
 * The outbox with the real `replicache` client: one mutator source, typed against the client's
 * transaction, runs on the client (where `emit` does nothing, however often a rebase replays it)
 * and on the server (where its event goes into the feed once per mutation). Two pages edit at
 * once, so the client replays pending mutations over pulled state.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WriteTransaction } from 'replicache';
import { afterEach, expect, test } from 'vitest';
import { createListener } from '../../adapters/node.js';
import { emit } from '../../src/client/index.js';
import { createContext, memoryStorage, type SyncContext } from '../../src/index.js';
import { type FeedChange, readChanges } from '../../src/backend.js';
import { Clients, pendingCount, snapshot, uniqueName, waitFor } from '../interop/client.js';

const cleanup: Array<() => unknown> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** Shared by client and server, as an app's mutators are. */
const mutators = {
  assign: async (tx: WriteTransaction, { id, to }: { id: string; to: string }) => {
    await tx.set(`todo/${id}`, { assignee: to });
    await emit(tx, 'todo.assigned', { id, to });
  },
};

async function start(): Promise<{ url: URL; ctx: SyncContext }> {
  const ctx = createContext({ storage: memoryStorage(), mutators, changes: {} });
  const server: Server = createServer(createListener(ctx));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.push(() => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`), ctx };
}

test('a mutator that emits runs on the real client and the server: one event per mutation, in the feed only', async () => {
  const { url, ctx } = await start();
  const clients = new Clients(() => url);
  cleanup.push(() => clients.closeAll());
  const pages = [clients.open({ name: uniqueName('a'), mutators }), clients.open({ name: uniqueName('b'), mutators })];
  const sent: string[] = [];
  await Promise.all(
    pages.map(async (page, p) => {
      for (let i = 0; i < 15; i++) {
        const id = `${p}-${i}`;
        sent.push(id);
        await page.mutate.assign({ id, to: `user${i % 3}` });
      }
    }),
  );
  for (const page of pages) await waitFor(async () => (await pendingCount(page)) === 0, { message: 'every mutation to be confirmed' });
  await waitFor(async () => Object.keys(await snapshot(pages[0]!, 'todo/')).length === 30, { message: 'page a to see every todo' });

  const changes: FeedChange[] = [];
  for (let after = '0', more = true; more; ) {
    const page = await readChanges(ctx, '', { after });
    changes.push(...page.changes);
    ({ cursor: after, more } = page);
  }
  const events = changes.flatMap((change) => (change.op === 'event' ? [(change.payload as { id: string }).id] : []));
  expect(events.sort()).toEqual(sent.sort());
  // Each event names the mutation that made it, and no mutation made two.
  const made = changes.flatMap((change) => (change.op === 'event' && change.by.kind === 'mutation' ? [`${change.by.clientID}/${change.by.mutationID}`] : []));
  expect(new Set(made).size).toBe(30);
});
