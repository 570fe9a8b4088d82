// A Next.js route handler on the edge runtime: put this file at `app/api/sync/[...path]/route.ts`,
// with DATABASE_URL set. The client then uses pullURL `/api/sync/pull`, pushURL
// `/api/sync/push`, pokes at `/api/sync/poke`.
import { neonConfig, Pool } from '@neondatabase/serverless';
import { handleRequest, storeNotifier, createContext } from 'viewsync';
import { postgresStorage } from 'viewsync/postgres';
import { mutators } from '../app.js';

export const runtime = 'edge';

// Local development against a plain PostgreSQL, through a WebSocket-to-TCP relay (Neon's docs).
if (process.env.NEON_LOCAL_PROXY) {
  neonConfig.wsProxy = (host, port) => `${process.env.NEON_LOCAL_PROXY}/v1?address=${host}:${port}`;
  Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
}

const pool = new Pool({ connectionString: process.env.DATABASE_URL });
pool.on('error', (error: Error) => console.error(`A pooled connection failed: ${error.message}`));
const storage = postgresStorage(pool);
const ctx = createContext({ storage, mutators, pokes: { notifier: storeNotifier(storage) } });

const handler = (request: Request): Promise<Response> => handleRequest(request, ctx);
export { handler as GET, handler as OPTIONS, handler as POST };
