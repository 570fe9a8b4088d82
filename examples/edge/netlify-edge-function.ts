// A Netlify Edge Function (Deno): put this file at `netlify/edge-functions/sync.ts`, with
// DATABASE_URL set in the site's environment. The client then uses pullURL `/sync/pull`,
// pushURL `/sync/push`, pokes at `/sync/poke`.
import { neonConfig, Pool } from '@neondatabase/serverless';
import { createContext, handleRequest, storeNotifier } from 'viewsync';
import { postgresStorage } from 'viewsync/postgres';
import { mutators } from '../app.js';

declare const Netlify: { env: { get(name: string): string | undefined } };

// Local development against a plain PostgreSQL, through a WebSocket-to-TCP relay (Neon's docs).
const localProxy = Netlify.env.get('NEON_LOCAL_PROXY');
if (localProxy) {
  neonConfig.wsProxy = (host, port) => `${localProxy}/v1?address=${host}:${port}`;
  Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
}

const pool = new Pool({ connectionString: Netlify.env.get('DATABASE_URL') });
pool.on('error', (error: Error) => console.error(`A pooled connection failed: ${error.message}`));
const storage = postgresStorage(pool);
const ctx = createContext({ storage, mutators, pokes: { notifier: storeNotifier(storage) } });

export default (request: Request): Promise<Response> => handleRequest(request, ctx);
export const config = { path: '/sync/*' };
