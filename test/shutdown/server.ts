// The server the SIGTERM tests stop, as a user deploys one: the Node adapter on a SQLite file
// (STORE=sqlite:FILE) or a PostgreSQL schema (STORE=postgres:SCHEMA, with DATABASE_URL), stopped
// gracefully on SIGTERM, then its store closed. Prints {"url": …} once it listens.
import postgres from 'postgres';
import { serve } from '../../adapters/node.js';
import type { Mutators, Storage } from '../../src/index.js';
import { postgresNotifier, postgresStorage } from '../../src/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { createContext } from '../../src/index.js';
import { openSQLite } from '../support/sqlite-driver.js';

/**
 * `add` is not idempotent: it counts the client's mutations, and records the count each one saw.
 * A mutation applied twice, or one lost, shows in the count and in the records.
 */
const mutators: Mutators = {
  add: async (tx, args) => {
    const key = `count/${tx.clientID}`;
    const count = (((await tx.get(key)) as number | undefined) ?? 0) + 1;
    await tx.set(key, count);
    await tx.set(`applied/${tx.clientID}/${tx.mutationID}`, count);
    // Slow enough that a push is nearly always in flight when the signal comes.
    await new Promise((resolve) => setTimeout(resolve, (args as { ms: number }).ms));
  },
};

const [kind, where] = process.env.STORE!.split(/:(.*)/s) as [string, string];
let storage: Storage;
let close: () => unknown;
let pokes = {};
if (kind === 'sqlite') {
  const db = openSQLite(where);
  storage = sqliteStorage(db);
  close = () => db.close();
} else {
  const sql = postgres(process.env.DATABASE_URL!, { onnotice: () => {}, max: 8, fetch_types: false });
  storage = postgresStorage(sql, { schema: where });
  pokes = { notifier: postgresNotifier(sql, { channel: where }) };
  close = () => sql.end({ timeout: 1 });
}

// A space per client (`?space=`): each client's pushes then run side by side, none queued behind another's.
const space = (request: Request) => new URL(request.url).searchParams.get('space') ?? '';
const server = await serve(createContext({ storage, mutators, pokes, space, onError: (error) => console.error(String(error)) }), {
  port: Number(process.env.PORT ?? 0),
});
process.once('SIGTERM', async () => {
  const started = Date.now();
  await server.stop();
  await close();
  console.log(JSON.stringify({ stoppedMs: Date.now() - started }));
  process.exit(0);
});
console.log(JSON.stringify({ url: server.url.href }));
