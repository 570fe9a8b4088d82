/**
 * The two-version to-do app (app.ts) as a page, bundled for Chromium by browser-server.ts: the
 * stock `replicache` client at the schema version the URL names (`?v=1` or `?v=2`), live through
 * the poke stream, driven by the test through `window.app`.
 */
import { Replicache, TEST_LICENSE_KEY, type MutatorDefs } from 'replicache';
import { connectPokes } from '../../src/client/index.js';
import { mutatorsV1, mutatorsV2 } from './app.js';

const version = new URLSearchParams(location.search).get('v') === '2' ? '2' : '1';
const rep = new Replicache({
  name: 'todos',
  licenseKey: TEST_LICENSE_KEY,
  schemaVersion: version,
  // app.ts types its mutators against viewsync's transaction, which the client's matches.
  mutators: (version === '1' ? mutatorsV1 : mutatorsV2) as unknown as MutatorDefs,
  pushURL: '/api/push',
  pullURL: '/api/pull',
  pushDelay: 0,
  // A server that restarts is back within a second: do not let the back-off outgrow the test.
  requestOptions: { maxDelayMs: 500 },
});
connectPokes(rep, '/api/poke', { minDelayMs: 100, maxDelayMs: 500 });

// What an app does when the server no longer serves its version: load the new one. Every call
// is counted in the tab's sessionStorage, which outlives the reload, so the test sees a loop.
rep.onUpdateNeeded = (reason) => {
  const calls = JSON.parse(sessionStorage.getItem('updateNeeded') ?? '[]') as unknown[];
  sessionStorage.setItem('updateNeeded', JSON.stringify([...calls, { from: version, reason }]));
  location.replace('/?v=2');
};

const app = {
  version,
  clientGroupID: () => rep.clientGroupID,
  /** The entries under the version's own prefix, by key. */
  entries: () =>
    rep.query(async (tx) =>
      Object.fromEntries(
        await tx
          .scan({ prefix: version === '1' ? 'todo/' : 'task/' })
          .entries()
          .toArray(),
      ),
    ),
  add: (id: string, text: string) => (version === '1' ? rep.mutate.addTodo!({ id, text }) : rep.mutate.addTodo!({ id, title: text })),
  bump: (id: string) => (version === '1' ? rep.mutate.bump!({ id }) : rep.mutate.bump!({ id, by: 1 })),
  pending: async () => (await rep.experimentalPendingMutations()).map(({ name, args }) => ({ name, args })),
  updateNeeded: () => JSON.parse(sessionStorage.getItem('updateNeeded') ?? '[]') as unknown[],
  persisted,
};
Object.assign(globalThis, { app });
export type App = typeof app;

/**
 * Whether a Replicache database of this origin (either version's) holds a chunk that mentions
 * `text`: the client writes its pending mutations there about a second after they are made, and
 * the next version's client reads them there to recover them.
 */
async function persisted(text: string): Promise<boolean> {
  for (const { name } of await indexedDB.databases()) {
    if (name?.startsWith(`rep:${rep.name}:`) && (await values(name)).some((value) => JSON.stringify(value)?.includes(text))) return true;
  }
  return false;
}

async function values(name: string): Promise<unknown[]> {
  const db = await request(indexedDB.open(name));
  try {
    return (await Promise.all([...db.objectStoreNames].map((store) => request(db.transaction(store, 'readonly').objectStore(store).getAll())))).flat();
  } finally {
    db.close();
  }
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}
