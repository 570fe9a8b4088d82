// A Supabase Edge Function (Deno): put this file at `supabase/functions/sync/index.ts`. It
// reaches the project's database over TCP with postgres.js, through the transaction pooler
// (port 6543), which needs `prepare: false` and carries no LISTEN: pokes come from the store.
// The client then uses pullURL `<functions URL>/sync/pull`, pushURL `<functions URL>/sync/push`.
import postgres from 'postgres';
import { createContext, handleRequest } from 'viewsync';
import { storeNotifier } from 'viewsync/ops';
import { postgresStorage } from 'viewsync/postgres';
import { mutators } from '../app.js';

const sql = postgres(Deno.env.get('SUPABASE_DB_URL')!, { prepare: false, fetch_types: false, max: 4 });
const storage = postgresStorage(sql, { prepare: false });
const ctx = createContext({ storage, mutators, pokes: { notifier: storeNotifier(storage) } });

const server = Deno.serve(
  { port: Number(Deno.env.get('PORT') ?? 8000), hostname: '127.0.0.1', onListen: ({ port }) => console.log(`sync on http://127.0.0.1:${port}/`) },
  (request) => handleRequest(request, ctx),
);
await server.finished;
