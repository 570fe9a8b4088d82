/**
 * The edge handler the Vercel Edge Runtime tests run: bundled for the edge (no Node built-ins),
 * on Neon's serverless Pool (PostgreSQL over WebSocket), as a Vercel Edge Function or Next.js
 * route with `runtime: 'edge'` would be. Its settings come from `EDGE_CONFIG`, which the test
 * defines before this code.
 */
import { neonConfig, Pool } from '@neondatabase/serverless';
import { handleRequest, type SyncContext, createContext } from 'viewsync';
import { storeNotifier } from 'viewsync/ops';
import { postgresStorage } from 'viewsync/postgres';
import { RUNTIME_INSPECTOR_SECRET, runtimeMutators } from '../runtime/app.js';

declare const EDGE_CONFIG: { databaseURL: string; relay: string; schema: string; requireAuth?: string };

// Neon's driver reaches PostgreSQL through a WebSocket relay: in production Neon's own, here a
// local one (test/support/ws-relay.ts), as Neon documents for local development.
neonConfig.wsProxy = (host, port) => `${EDGE_CONFIG.relay}/v1?address=${host}:${port}`;
neonConfig.useSecureWebSocket = false;
neonConfig.pipelineTLS = false;
neonConfig.pipelineConnect = false;

const pool = new Pool({ connectionString: EDGE_CONFIG.databaseURL, max: 4 });
// As pg asks: a connection that dies while idle in the pool is an 'error' on the pool.
pool.on('error', () => {});
const storage = postgresStorage(pool, { schema: EDGE_CONFIG.schema });
const ctx: SyncContext = createContext({
  storage,
  mutators: runtimeMutators,
  pokes: { notifier: storeNotifier(storage, { intervalMs: 100 }) },
  inspector: { secret: RUNTIME_INSPECTOR_SECRET, onAction: () => {} },
  ...(EDGE_CONFIG.requireAuth !== undefined && {
    authenticate: (request: Request) => (request.headers.get('authorization') === EDGE_CONFIG.requireAuth ? 'interop-user' : null),
  }),
});

(
  globalThis as unknown as {
    addEventListener(type: 'fetch', listener: (event: { request: Request; respondWith(response: Promise<Response>): void }) => void): void;
  }
).addEventListener('fetch', (event) => event.respondWith(handleRequest(event.request, ctx)));
