/**
 * A shared to-do list as a page, for the history browser test: the stock `replicache` client as
 * the user the URL names (`?user=ann`), sent as its auth, live through the poke stream, driven by
 * the test through `window.app`.
 */
import { Replicache, TEST_LICENSE_KEY, type WriteTransaction } from 'replicache';
import { connectPokes } from '../../src/client/index.js';

const user = new URLSearchParams(location.search).get('user') ?? 'nobody';
const rep = new Replicache({
  name: `list-${user}`,
  licenseKey: TEST_LICENSE_KEY,
  auth: user,
  mutators: {
    setTodo: async (tx: WriteTransaction, { id, text }: { id: string; text: string }) => void (await tx.set(`todo/${id}`, { text })),
    removeTodo: async (tx: WriteTransaction, { id }: { id: string }) => void (await tx.del(`todo/${id}`)),
  },
  pushURL: '/api/push',
  pullURL: '/api/pull',
  pushDelay: 0,
  requestOptions: { maxDelayMs: 500 },
});
connectPokes(rep, '/api/poke', { minDelayMs: 100, maxDelayMs: 500 });

const app = {
  user,
  /** The to-dos' texts, by id. */
  todos: () =>
    rep.query(async (tx) =>
      Object.fromEntries((await tx.scan({ prefix: 'todo/' }).entries().toArray()).map(([key, value]) => [key.slice(5), (value as { text: string }).text])),
    ),
  set: (id: string, text: string) => rep.mutate.setTodo({ id, text }),
  remove: (id: string) => rep.mutate.removeTodo({ id }),
  pending: async () => (await rep.experimentalPendingMutations()).length,
};
Object.assign(globalThis, { app });
export type App = typeof app;
