// A Netlify Edge Function (Deno): put this file at `netlify/edge-functions/sync.ts`, with
// DATABASE_URL set in the site's environment. The client then uses pullURL `/sync/pull`,
// pushURL `/sync/push`, pokes at `/sync/poke`. Create the tables once per deploy with
// migrate.ts (docs/runtimes.md, Edge functions).
import { Client, neonConfig } from '@neondatabase/serverless';
import { createContext, handleRequest } from 'viewsync';
import { storeNotifier } from 'viewsync/ops';
import { clientPerTransaction, postgresStorage } from 'viewsync/postgres';
import { mutators } from '../app.js';

declare const Netlify: { env: { get(name: string): string | undefined } };

// Local development against a plain PostgreSQL, through a WebSocket-to-TCP relay (Neon's docs).
const localProxy = Netlify.env.get('NEON_LOCAL_PROXY');
if (localProxy) {
  neonConfig.wsProxy = (host, port) => `${localProxy}/v1?address=${host}:${port}`;
  Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
}

// The store and context are made once; a connection is not: Neon asks that an edge isolate's
// WebSockets be made and ended within a request, so each transaction connects a client and ends it.
const storage = postgresStorage(clientPerTransaction(() => new Client({ connectionString: Netlify.env.get('DATABASE_URL') })));
// A poke stream ends after maxStreamAgeMs (and a heartbeat) and its client reconnects: keep it
// below the platform's limit on how long a response may stream.
const ctx = createContext({ storage, mutators, pokes: { notifier: storeNotifier(storage), maxStreamAgeMs: 60_000 } });

export default (request: Request): Promise<Response> => handleRequest(request, ctx);
export const config = { path: '/sync/*' };
