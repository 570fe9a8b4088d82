// A Vercel Edge Function: put this file at `api/[...path].ts` of a Vercel project, with
// DATABASE_URL set to a Neon (or any PostgreSQL reached by Neon's WebSocket proxy) database.
// The client then uses pullURL `/api/pull`, pushURL `/api/push`, pokes at `/api/poke`.
import { neonConfig, Pool } from '@neondatabase/serverless';
import { handleRequest, storeNotifier, createContext } from 'viewsync';
import { postgresStorage } from 'viewsync/postgres';
import { mutators } from '../app.js';

export const config = { runtime: 'edge' };

// Local development against a plain PostgreSQL, through a WebSocket-to-TCP relay (Neon's docs).
if (process.env.NEON_LOCAL_PROXY) {
  neonConfig.wsProxy = (host, port) => `${process.env.NEON_LOCAL_PROXY}/v1?address=${host}:${port}`;
  Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
}

const pool = new Pool({ connectionString: process.env.DATABASE_URL });
pool.on('error', (error: Error) => console.error(`A pooled connection failed: ${error.message}`));
const storage = postgresStorage(pool);
// No LISTEN at the edge: instances learn of each other's writes from the store.
const ctx = createContext({ storage, mutators, pokes: { notifier: storeNotifier(storage) } });

export default (request: Request): Promise<Response> => handleRequest(request, ctx);
