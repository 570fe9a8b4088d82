// A Next.js route handler on the edge runtime: put this file at `app/api/sync/[...path]/route.ts`,
// with DATABASE_URL set. The client then uses pullURL `/api/sync/pull`, pushURL
// `/api/sync/push`, pokes at `/api/sync/poke`. Create the tables once per deploy with
// migrate.ts (docs/runtimes.md, Edge functions).
import { Client, neonConfig } from '@neondatabase/serverless';
import { createContext, handleRequest } from 'viewsync';
import { storeNotifier } from 'viewsync/ops';
import { clientPerTransaction, postgresStorage } from 'viewsync/postgres';
import { mutators } from '../app.js';

export const runtime = 'edge';

// Local development against a plain PostgreSQL, through a WebSocket-to-TCP relay (Neon's docs).
if (process.env.NEON_LOCAL_PROXY) {
  neonConfig.wsProxy = (host, port) => `${process.env.NEON_LOCAL_PROXY}/v1?address=${host}:${port}`;
  Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
}

// The store and context are made once; a connection is not: Neon's WebSockets cannot outlive a
// request, so each transaction connects a client and ends it.
const storage = postgresStorage(clientPerTransaction(() => new Client({ connectionString: process.env.DATABASE_URL })));
// A poke stream ends after maxStreamAgeMs (and a heartbeat) and its client reconnects: keep it
// below the platform's limit on how long a response may stream.
const ctx = createContext({ storage, mutators, pokes: { notifier: storeNotifier(storage), maxStreamAgeMs: 60_000 } });

const handler = (request: Request): Promise<Response> => handleRequest(request, ctx);
export { handler as GET, handler as OPTIONS, handler as POST };
