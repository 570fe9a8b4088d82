// A process on a pg-style pool (pg's, or Neon's over WebSocket) whose new connections are killed
// just as the pool hands them out: a FATAL in the same read as the server's first ReadyForQuery,
// sent by a fault proxy between the pool and PostgreSQL, as a failover or `pg_terminate_backend`
// can. It pushes and pulls through every such kill, and must outlive them all: an uncaught error
// ends it with a non-zero code. Prints one JSON line of what it saw. Run by handed-out.test.ts
// with DATABASE_URL, SCHEMA, POOL (pg or neon) and KILLS set.
import { neonConfig, Pool as NeonPool } from '@neondatabase/serverless';
import pg from 'pg';
import { WebSocket } from 'ws';
import { handlePull, handlePush, type SyncContext, createContext } from '../../src/index.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import type { PgPool } from '../../src/storage/pg-pool.js';
import { startFaultProxy } from '../support/fault-proxy.js';
import { mutation, post, pullBody, pushBody } from '../support/helpers.js';
import { startRelay } from '../support/ws-relay.js';

const url = process.env.DATABASE_URL!;
const kills = Number(process.env.KILLS ?? 20);
const proxy = await startFaultProxy(Number(new URL(url).port || 5432));
const through = proxy.url(url);

let pool: PgPool & { on(event: 'error', listener: (error: Error) => void): unknown; end(): Promise<void> };
let relay: { address: string; close(): Promise<void> } | undefined;
if (process.env.POOL === 'neon') {
  relay = await startRelay({ host: '127.0.0.1', port: proxy.port });
  const address = relay.address;
  neonConfig.webSocketConstructor = WebSocket;
  neonConfig.wsProxy = (host, port) => `${address}/v1?address=${host}:${port}`;
  Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
  pool = new NeonPool({ connectionString: through, max: 1 }) as unknown as typeof pool;
} else {
  pool = new pg.Pool({ connectionString: through, max: 1 });
}
// As pg's documentation asks: errors of idle connections go here.
pool.on('error', () => {});

const ctx: SyncContext = createContext({
  storage: postgresStorage(pool, { schema: process.env.SCHEMA! }),
  mutators: { add: async (tx) => void (await tx.set('count', (((await tx.get('count')) as number | undefined) ?? 0) + 1)) },
  onError: () => {},
});

const statuses: Record<number, number> = {};
const count = (status: number) => (statuses[status] = (statuses[status] ?? 0) + 1);
let acknowledged = 0;
// One connection at most: each kill ends it, so the next request takes a new one, and is killed
// as it is handed out, until the kills are spent.
for (let round = 0; round < kills; round++) {
  proxy.fatalAtReady(1);
  const pushed = await handlePush(post('/push', pushBody('g', [mutation('c', acknowledged + 1, 'add')])), ctx);
  count(pushed.status);
  await pushed.text();
  if (pushed.status === 200) acknowledged++;
  proxy.fatalAtReady(1);
  const pulled = await handlePull(post('/pull', pullBody('g', null)), ctx);
  count(pulled.status);
  await pulled.text();
}
// Then without kills, until every mutation is in.
for (let tries = 0; tries < 50 && acknowledged < kills; tries++) {
  const pushed = await handlePush(post('/push', pushBody('g', [mutation('c', acknowledged + 1, 'add')])), ctx);
  if (pushed.status === 200) acknowledged++;
  await pushed.text();
}
const final = (await (await handlePull(post('/pull', pullBody('g', null)), ctx)).json()) as {
  lastMutationIDChanges: Record<string, number>;
  patch: Array<{ key?: string; value?: unknown }>;
};
console.log(
  JSON.stringify({
    accepted: proxy.accepted,
    statuses,
    acknowledged,
    count: final.patch.find((op) => op.key === 'count')?.value ?? 0,
    lastMutationID: final.lastMutationIDChanges.c ?? 0,
  }),
);
await pool.end();
await relay?.close();
await proxy.close();
