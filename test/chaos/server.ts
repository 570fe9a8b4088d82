// One server process of a chaos run, as a user deploys one: the Node adapter over the store that
// STORE names (JSON, see StoreSpec), pokes through NOTIFIER, housekeeping on RETENTION, spaces
// named by ?space=. Besides /pull, /push and /poke it takes the run's controls under /chaos/:
// its clock (moved on to age client groups), a housekeeping pass, a write from the backend door,
// an export and an import, the editors' writes and restores and reverts (restore-check.ts), and
// reads of history. Prints {"url"} once listening on PORT.
//
// With OPERATE (JSON: a restore or a revert, see restore-check.ts) it is an operator's process
// instead: it opens the store as a server would, runs that one operation, prints its result as a
// line {"result": …} (or {"gone": …} when the version is not kept) and exits, listening nowhere.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createListener } from '../../adapters/node.js';
import { type Storage, type SyncContext, TemporaryError, createContext, type SyncOptions } from '../../src/index.js';
import { at, HistoryGoneError, mutate, readHistory, restoreSpace, revertChanges, startWebhooks, transact } from '../../src/backend.js';
import { collectGarbage, exportSpace, importSpace, runMigration, routedStorage, StagingLostError, storeNotifier } from '../../src/ops.js';
import { isTemporary } from '../../src/storage/unreachable.js';
import { postgresNotifier, type PostgresStorage, postgresStorage } from '../../src/postgres.js';
import { redisNotifier } from '../../src/redis.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { chaosMutators, DAY, RETENTION } from './app.js';
import { CHANGES_SECRET, WEBHOOK_SECRET } from './webhook-check.js';
import { type HistoryOperation, type LogRow, logRowsOf } from './restore-check.js';
// @ts-expect-error: plain JavaScript, shared with the CLI's --module.
import { migrations } from './migrations.mjs';

/** Where a server keeps its data. */
export type StoreSpec =
  | { kind: 'sqlite'; file: string }
  | { kind: 'postgres'; driver: 'postgres.js' | 'pg'; url: string; standbys?: string[] }
  | { kind: 'routed'; driver: 'postgres.js' | 'pg'; stores: Record<string, string>; directory?: string };

const spec = JSON.parse(process.env.STORE!) as StoreSpec;
const name = process.env.NAME ?? 'server';
const closers: Array<() => Promise<unknown>> = [];

// Only the drivers this server uses are loaded: a server killed -9 starts again sooner.
const { default: pg } = spec.kind === 'sqlite' ? { default: undefined } : await import('pg');
const { default: postgres } = spec.kind === 'sqlite' && process.env.NOTIFIER !== 'postgres' ? { default: undefined } : await import('postgres');

/** A store on one PostgreSQL server; reconnects within a second of its return (postgres.js backs off up to 20 s by default). */
function postgresStore(driver: 'postgres.js' | 'pg', url: string, standbys: readonly string[] = []): Storage {
  return postgresStorage(postgresClient(driver, url), { standbys: standbys.map((standby) => postgresClient(driver, standby)) });
}

function postgresClient(driver: 'postgres.js' | 'pg', url: string) {
  if (driver === 'pg') {
    const pool = new pg!.Pool({ connectionString: url, max: 6, application_name: `chaos-${name}`, connectionTimeoutMillis: 5_000 });
    pool.on('error', () => {});
    closers.push(() => pool.end());
    return pool;
  }
  const sql = postgres!(url, {
    max: 6,
    fetch_types: false,
    connect_timeout: 5,
    onnotice: () => {},
    connection: { application_name: `chaos-${name}` },
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
  });
  closers.push(() => sql.end({ timeout: 1 }));
  return sql;
}

const storage: Storage =
  spec.kind === 'sqlite'
    ? sqliteStorage((await import('../support/sqlite-driver.js')).openSQLite(spec.file))
    : spec.kind === 'postgres'
      ? postgresStore(spec.driver, spec.url, spec.standbys)
      : routedStorage({
          stores: Object.fromEntries(Object.entries(spec.stores).map(([store, url]) => [store, postgresStore(spec.driver, url)])),
          directory: spec.directory,
        });

// An operator's process is told the servers' clock (OFFSET_MS); a server is sent it once started.
let offsetMs = Number(process.env.OFFSET_MS ?? 0);
const ctx: SyncContext = createContext({
  storage,
  mutators: chaosMutators,
  space: (request) => new URL(request.url).searchParams.get('space') ?? '',
  // With webhooks (webhook-check.ts), the log is kept whole and retried for as long as the run, whose clock jumps by days.
  // Every version kept for as long as the run (restore-check.ts reads the whole log at its end),
  // housekeeping writing checkpoints often, so that reads as of a version go through them.
  retention: { ...RETENTION, historyMs: false, ...(process.env.CHAOS_WEBHOOK_URL && { changesMs: false }) },
  history: { checkpointEvery: 50 },
  ...(process.env.CHAOS_WEBHOOK_URL && {
    changes: {
      secret: CHANGES_SECRET,
      webhooks: {
        chaos: {
          url: process.env.CHAOS_WEBHOOK_URL,
          secret: WEBHOOK_SECRET,
          allowPrivateAddresses: true,
          timeoutMs: 5_000,
          retryForMs: 100 * 365 * DAY,
          ...(process.env.CHAOS_WEBHOOK_BATCH && { maxBatch: Number(process.env.CHAOS_WEBHOOK_BATCH) }),
          ...(process.env.CHAOS_WEBHOOK_SPACES && { spacesPerDelivery: Number(process.env.CHAOS_WEBHOOK_SPACES) }),
        },
      },
    },
  }),
  clock: () => Date.now() + offsetMs,
  pokes: await pokes(),
  onError: (error) => {
    // Expected under faults (503s); printed for whoever reads a failed run's output.
    if (process.env.CHAOS_VERBOSE) console.error(`[${name}] ${error instanceof Error ? error.message : String(error)}`);
  },
});

async function pokes(): Promise<SyncOptions['pokes']> {
  const kind = process.env.NOTIFIER ?? 'none';
  if (kind === 'none') return undefined;
  if (kind === 'store') return { notifier: storeNotifier(storage, { intervalMs: 100 }) };
  if (kind === 'postgres') {
    const sql = postgres!(process.env.NOTIFY_URL!, {
      max: 2,
      fetch_types: false,
      onnotice: () => {},
      backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1),
    });
    closers.push(() => sql.end({ timeout: 1 }));
    return { notifier: postgresNotifier(sql) };
  }
  const { createClient } = await import('redis');
  const redis = await createClient({ url: process.env.REDIS_URL, socket: { reconnectStrategy: (retries) => Math.min(50 * 2 ** retries, 1_000) } })
    .on('error', () => {})
    .connect();
  return { notifier: redisNotifier(redis as never) };
}

const sync = createListener(ctx);
const server = createServer((req, res) => {
  if (req.url?.startsWith('/chaos/')) return void control(req, res).catch((error: unknown) => reply(res, 500, { error: String(error) }));
  sync(req, res);
});

/** The run's controls. A failure that is the store's (a fault) answers 503. */
async function control(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url!, 'http://localhost');
  const space = url.searchParams.get('space') ?? '';
  const body = await new Promise<string>((resolve, reject) => {
    let text = '';
    req
      .setEncoding('utf8')
      .on('data', (chunk: string) => (text += chunk))
      .on('end', () => resolve(text))
      .on('error', reject);
  });
  try {
    switch (url.pathname) {
      case '/chaos/clock':
        offsetMs = Number(JSON.parse(body).offsetMs);
        return reply(res, 200, { offsetMs });
      case '/chaos/standby-stats':
        // Where this server's reads went (the standby-reads topology).
        return reply(res, 200, (storage as Partial<PostgresStorage>).standbyStats?.() ?? null);
      case '/chaos/housekeep':
        return reply(res, 200, await collectGarbage(ctx));
      case '/chaos/backend': {
        const n = Number(url.searchParams.get('n'));
        await transact(ctx, space, async (tx) => {
          await tx.set(`backend/${n}`, n);
          await tx.set('backend/count', (((await tx.get('backend/count')) as number | undefined) ?? 0) + 1);
        });
        return reply(res, 200, { n });
      }
      case '/chaos/burst': {
        // The feed soak (feed-soak.ts): `count` commits, one after another, each writing `n` to
        // `soak/<n % 1000>` and telling it on its own line once committed; a failure ends the
        // answer with a line that says it (those after it were not tried).
        const from = Number(url.searchParams.get('from'));
        const count = Number(url.searchParams.get('count'));
        const stride = Number(url.searchParams.get('stride') ?? 1);
        res.writeHead(200, { 'content-type': 'text/plain' });
        for (let i = 0, n = from; i < count && !res.destroyed; i++, n += stride) {
          try {
            await transact(ctx, space, (tx) => tx.set(`soak/${n % 1000}`, n));
          } catch (error) {
            return void res.end(`! ${error instanceof Error ? error.message : String(error)}\n`);
          }
          res.write(`${n}\n`);
        }
        return void res.end();
      }
      case '/chaos/seed-items': {
        // The entries the migrations work on (run.ts): `item/<n>`, written where missing.
        const count = Number(url.searchParams.get('count'));
        await transact(ctx, space, async (tx) => {
          for (let n = 0; n < count; n++) {
            const key = `item/${String(n).padStart(4, '0')}`;
            if (!(await tx.has(key))) await tx.set(key, { n });
          }
        });
        return reply(res, 200, { count });
      }
      case '/chaos/migrate': {
        const name = url.searchParams.get('name');
        const migration = (migrations as Array<{ name: string }>).find((each) => each.name === name);
        if (migration === undefined) return reply(res, 404, { error: `no migration ${name}` });
        const result = await runMigration(ctx, migration as never, { spaces: [space], batch: Number(url.searchParams.get('batch') ?? 10) });
        return reply(res, 200, result);
      }
      case '/chaos/edit': {
        // An editor's write (restore-check.ts): `doc/<key>` set to `{user, n}`, or deleted, made for the user.
        const user = url.searchParams.get('user')!;
        const n = Number(url.searchParams.get('n'));
        const value = url.searchParams.get('del') === '1' ? null : { user, n };
        await mutate(ctx, space, 'edit', { key: url.searchParams.get('key'), value }, { userID: user });
        return reply(res, 200, { n });
      }
      case '/chaos/version':
        // The space's version now: the newest its history keeps.
        return reply(res, 200, { version: (await readHistory(ctx, space, { limit: 1 })).kept.to });
      case '/chaos/history-op':
        return reply(res, 200, await operate(JSON.parse(body) as HistoryOperation));
      case '/chaos/at': {
        const { entries } = await at(ctx, space, Number(url.searchParams.get('version')), { prefix: url.searchParams.get('prefix') ?? '' });
        return reply(res, 200, { entries });
      }
      case '/chaos/log': {
        // The space's whole log, of the keys `doc/` and of every restore and revert (restore-check.ts).
        const rows: LogRow[] = [];
        let after: number | undefined;
        for (;;) {
          const page = await readHistory(ctx, space, { limit: 10_000, ...(after !== undefined && { after }) });
          rows.push(...logRowsOf(page.changes));
          if (!page.more) {
            after = page.kept.from;
            break;
          }
          after = page.version;
        }
        return reply(res, 200, { from: after, rows });
      }
      case '/chaos/export': {
        const text = await new Response(exportSpace(ctx, space)).text();
        return reply(res, 200, { dump: text });
      }
      case '/chaos/import': {
        try {
          const result = await importSpace(ctx, space, body, { mode: 'replace', from: url.searchParams.get('from') ?? undefined, clients: false });
          return reply(res, 200, { imported: result.entries });
        } catch (error) {
          if ((error as Error).name === 'DumpError') return reply(res, 422, { refused: (error as Error).message });
          // Housekeeping on a server whose clock is days ahead took its staging area: nothing applied.
          if (error instanceof StagingLostError) return reply(res, 409, { abandoned: error.message });
          throw error;
        }
      }
      default:
        return reply(res, 404, { error: `no control ${url.pathname}` });
    }
  } catch (error) {
    if (error instanceof HistoryGoneError) return reply(res, 410, { gone: error.message });
    // The store unreachable or mid-failover: as the endpoints answer, temporary.
    if (isTemporary(error) || error instanceof TemporaryError) return reply(res, 503, { error: (error as Error).message });
    throw error;
  }
}

/** A restore or a revert, as an operator or the runner asks for it. */
async function operate(operation: HistoryOperation): Promise<unknown> {
  if (operation.kind === 'restore') return restoreSpace(ctx, operation.space, { to: operation.to, prefix: operation.prefix });
  return revertChanges(ctx, operation.space, operation.cause, { onConflict: operation.onConflict });
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

if (process.env.OPERATE) {
  let line: unknown;
  // The runner may kill us a moment after this, while the operation runs.
  console.log(JSON.stringify({ operating: true }));
  try {
    line = { result: await operate(JSON.parse(process.env.OPERATE) as HistoryOperation) };
  } catch (error) {
    if (!(error instanceof HistoryGoneError)) throw error;
    line = { gone: error.message };
  }
  console.log(JSON.stringify(line));
  await Promise.allSettled(closers.map((close) => close()));
  process.exit(0);
}

if (process.env.CHAOS_WEBHOOK_URL) {
  const webhooks = startWebhooks(ctx, { sweepMs: 300 });
  closers.push(() => webhooks.stop());
}

server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  console.log(JSON.stringify({ url: `http://127.0.0.1:${port}/`, pid: process.pid }));
});
// The suite holds our stdin open: at its end the suite is gone (killed, or ended without
// stopping us), so we go too.
process.stdin.on('end', () => process.exit(0)).resume();
process.on('SIGTERM', () => {
  server.close();
  void Promise.allSettled(closers.map((close) => close())).then(() => process.exit(0));
});
