/**
 * Failover to a PostgreSQL standby, as users run it: PostgreSQL's own streaming replication, the
 * primary crashed under load and the standby promoted a second later (test/support/standby.ts).
 * postgres.js is given both hosts; pg's and Neon's pools, which take one host, an address that
 * moves to the promoted standby (a fault proxy, as a virtual IP, a DNS name or a proxy in front
 * would; Neon's over a WebSocket relay). Raw protocol clients push and pull throughout
 * (load.ts): four writer groups and three observer groups. Then a client away through an
 * asynchronous failover, and a connection that meets a standby (25006) on each driver.
 */
import { neonConfig, Pool as NeonPool } from '@neondatabase/serverless';
import pg from 'pg';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { handlePush, type JSONValue, type SyncContext, createContext } from '../../src/index.js';
import { type PostgresStorage, postgresStorage } from '../../src/storage/postgres.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type StandbyPair, haveServerBinaries, startStandbyPair } from '../support/standby.js';
import { fastLoop } from '../support/stores.js';
import { startRelay } from '../support/ws-relay.js';
import { countingMutators, type Generation, type Load, type PullAnswer, pullOnce, sleep, startLoad, take } from './load.js';

type Driver = 'postgres.js' | 'pg' | 'neon';
const DRIVERS: Driver[] = ['postgres.js', 'pg', 'neon'];

/** The reconnect backoff docs/production.md recommends for postgres.js (seconds, by failures). */
const backoff = (retries: number) => Math.min(0.05 * 2 ** retries, 1);

/** A store on `pair` through `driver`, as docs/production.md sets each up; `promoted` moves a moving address. */
interface Deployment {
  storage: PostgresStorage;
  /** Called once the standby was promoted: the address, for the drivers that take one, moves to it. */
  promoted(): void;
  close(): Promise<void>;
}

async function deploy(driver: Driver, pair: StandbyPair, max = 8): Promise<Deployment> {
  if (driver === 'postgres.js') {
    // Both hosts; `primary` refuses a standby (in_hot_standby), which `read-write` takes.
    const sql = postgres(pair.hosts('primary', 'target_session_attrs=primary'), { max, fetch_types: false, onnotice: () => {}, connect_timeout: 2, backoff });
    return { storage: postgresStorage(sql), promoted: () => {}, close: () => sql.end({ timeout: 1 }) };
  }
  const address = await startFaultProxy(pair.primary.port);
  const { pool, close } = await pgPool(driver, address, pair.primary.url, max);
  return {
    storage: postgresStorage(pool),
    promoted: () => address.retarget(pair.standby.port),
    close: async () => {
      await close();
      await address.close();
    },
  };
}

/** A pg or Neon Pool whose connections go through `address` (Neon's over a WebSocket relay to it). */
async function pgPool(driver: 'pg' | 'neon', address: FaultProxy, url: string, max: number, applicationName = 'viewsync') {
  const options = { connectionString: address.url(url), max, connectionTimeoutMillis: 2_000, application_name: applicationName };
  if (driver === 'pg') {
    const pool = new pg.Pool(options);
    // As pg asks: errors of idle connections land here (the failover ends them all).
    pool.on('error', () => {});
    return { pool, close: () => pool.end() };
  }
  const relay = await startRelay({ host: '127.0.0.1', port: address.port });
  neonConfig.webSocketConstructor = WebSocket;
  // The relay goes to the address whatever the URL names.
  neonConfig.wsProxy = () => `${relay.address}/v1`;
  Object.assign(neonConfig, { useSecureWebSocket: false, pipelineTLS: false, pipelineConnect: false });
  const pool = new NeonPool(options);
  pool.on('error', () => {});
  return {
    pool,
    close: async () => {
      await pool.end();
      await relay.close();
    },
  };
}

const figures: string[] = [];

if (!haveServerBinaries() || fastLoop) {
  it.skip('failover to a PostgreSQL standby: needs PostgreSQL server binaries (scripts/start-postgres.sh installs them)', () => {});
} else {
  afterAll(() => {
    if (figures.length > 0) console.log(`failover figures:\n${figures.join('\n')}`);
  });

  for (const synchronous of [true, false]) {
    describe(synchronous ? 'synchronous replication' : 'asynchronous replication, stalled 1.5 s before the primary died', () => {
      for (const driver of DRIVERS) {
        const how = driver === 'postgres.js' ? 'postgres.js with both hosts' : `${driver === 'pg' ? "pg's" : "Neon's"} Pool through an address that moves`;
        const promise = synchronous
          ? 'every acknowledged mutation applied once, nothing went backwards, every client converges, only 200 and 503'
          : 'acknowledged mutations lost, but every group that lost one was told ClientStateNotFound; nothing else went backwards, every client converges, only 200 and 503';
        it(`${how}: ${promise}`, async () => {
          const pair = await startStandbyPair({ synchronous });
          try {
            const deployment = await deploy(driver, pair);
            try {
              await failover(driver, pair, deployment);
            } finally {
              await deployment.close();
            }
          } finally {
            await pair.stop();
          }
        }, 120_000);
      }
    });
  }

  // After an asynchronous failover the promoted server's next versions would repeat numbers the
  // lost commits gave clients: a group that pulls only once new commits have passed its cookie
  // would be answered a patch from a state it never had. The promoted server is a new
  // incarnation, so its first write skips ahead in versions instead, and such a cookie is lost.
  it("asynchronous: a group away while the promoted server made more commits than were lost gets the server's data, not a patch from the lost ones; the client that lost mutations is told ClientStateNotFound on push and pull", async () => {
    const pair = await startStandbyPair();
    const sql = postgres(pair.hosts('primary', 'target_session_attrs=primary'), { max: 2, fetch_types: false, onnotice: () => {}, backoff });
    try {
      const ctx = context(postgresStorage(sql));
      const pushed = async (name: string, id: number) => {
        for (let tries = 0; ; tries++) {
          const { status } = await push(ctx, name, id);
          if (status === 200) return;
          if (tries > 100) throw new Error(`push ${name} ${id}: ${status}`);
          await sleep(50);
        }
      };
      const life = (groupID: string, clientID?: string): Generation => ({
        groupID,
        clientID,
        next: 1,
        acknowledged: 0,
        cookie: null,
        lastMutationID: 0,
        view: new Map(),
        backwards: [],
      });
      for (let id = 1; id <= 5; id++) await pushed('a', id);
      await pair.caughtUp();
      pair.stallReplication();
      for (let id = 6; id <= 15; id++) await pushed('a', id);
      const [away, writer] = [life('away'), life('a-g', 'a-c')];
      for (const group of [away, writer]) take(group, (await pullOnce(ctx, group)) as PullAnswer);
      expect([away.view.get('count/a-c'), writer.lastMutationID]).toEqual([15, 15]);
      await pair.crashPrimary();
      await pair.promote();
      // Mutations 6-15 are lost; another client's 20 commits would take the version past the cookies.
      for (let id = 1; id <= 20; id++) await pushed('b', id);
      const fresh = life('fresh');
      take(fresh, (await pullOnce(ctx, fresh)) as PullAnswer);
      expect(fresh.view.get('count/a-c')).toBe(5);
      const answer = await pullOnce(ctx, away);
      if (!('error' in answer)) {
        take(away, answer);
        expect(away.view).toEqual(fresh.view);
        expect(away.cookie).toEqual(fresh.cookie);
      } else expect(answer).toEqual({ error: 'ClientStateNotFound' });
      expect(away.backwards).toEqual([]);
      // The client that lost 6-15 sends 16, then pulls with what it held: told, both times.
      expect(await push(ctx, 'a', 16)).toEqual({ status: 200, cause: undefined, error: 'ClientStateNotFound' });
      expect(await pullOnce(ctx, writer)).toEqual({ error: 'ClientStateNotFound' });
    } finally {
      await sql.end({ timeout: 1 });
      await pair.stop();
    }
  }, 60_000);

  describe('a connection found on a read-only server (25006) is closed, not given back to the pool', () => {
    let pair: StandbyPair;
    beforeAll(async () => {
      pair = await startStandbyPair();
      const sql = postgres(pair.primary.url, { max: 1, fetch_types: false, onnotice: () => {} });
      await postgresStorage(sql).migrate();
      await sql.end();
      await pair.caughtUp();
    }, 60_000);
    afterAll(() => pair?.stop());

    for (const driver of DRIVERS) {
      it(`${driver}, one connection, behind an address moved to the standby too early: its push answers 503, and once the address is back on the primary the next is answered 200`, async () => {
        const address = await startFaultProxy(pair.primary.port);
        const client =
          driver === 'postgres.js' ? singlePostgresJs(address.url(pair.primary.url)) : await pgPool(driver, address, pair.primary.url, 1, 'read-only-probe');
        try {
          const storage = postgresStorage(client.pool);
          await storage.migrate();
          const ctx = context(storage);
          expect(await push(ctx, `${driver}-early`, 1)).toEqual({ status: 200, cause: undefined });
          // The address moves to the standby before it is promoted; the connection to the primary
          // is lost, which a request or two may find (503 too) before the pool drops it.
          address.retarget(pair.standby.port);
          address.cut();
          let onStandby = await push(ctx, `${driver}-early`, 2);
          for (let tries = 0; tries < 10 && onStandby.status === 503 && onStandby.cause !== '25006'; tries++) onStandby = await push(ctx, `${driver}-early`, 2);
          expect(onStandby).toEqual({ status: 503, cause: '25006' });
          address.retarget(pair.primary.port);
          // A connection kept in the pool would still be on the standby, and fail again.
          expect(await push(ctx, `${driver}-early`, 2)).toEqual({ status: 200, cause: undefined });
          const [row] = await pair.query(pair.standby, "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'read-only-probe'");
          expect(row?.n).toBe(0);
        } finally {
          await client.close();
          await address.close();
        }
      }, 60_000);
    }

    it("postgres.js with both hosts, the standby first: target_session_attrs 'read-write' takes the standby (its default_transaction_read_only is off), whose connection is closed at its first 25006, and the next goes to the primary; 'primary' never takes it", async () => {
      for (const attrs of ['read-write', 'primary'] as const) {
        const sql = postgres(pair.hosts('standby', `target_session_attrs=${attrs}`), { max: 1, fetch_types: false, onnotice: () => {}, backoff });
        try {
          const ctx = context(postgresStorage(sql));
          const first = await push(ctx, `hosts-${attrs}`, 1);
          expect(first).toEqual(attrs === 'read-write' ? { status: 503, cause: '25006' } : { status: 200, cause: undefined });
          if (attrs === 'read-write') expect(await push(ctx, `hosts-${attrs}`, 1)).toEqual({ status: 200, cause: undefined });
          const [{ port }] = (await sql`SELECT current_setting('port')::int AS port`) as unknown as [{ port: number }];
          expect(port).toBe(pair.primary.port);
        } finally {
          await sql.end({ timeout: 1 });
        }
      }
    }, 60_000);
  });
}

/** A postgres.js client of one connection, as {@link pgPool} returns a pool. */
function singlePostgresJs(url: string) {
  const sql = postgres(url, { max: 1, fetch_types: false, onnotice: () => {}, backoff, connection: { application_name: 'read-only-probe' } });
  return { pool: sql, close: () => sql.end({ timeout: 1 }) };
}

function context(storage: PostgresStorage): SyncContext & { errors: unknown[] } {
  const errors: unknown[] = [];
  return Object.assign(createContext({ storage, mutators: countingMutators, onError: (error) => errors.push(error) }), { errors });
}

/** Pushes mutation `id` of client `name`; its status, the code of the store's error behind a 503, and a protocol error answered 200. */
async function push(ctx: SyncContext & { errors: unknown[] }, name: string, id: number): Promise<{ status: number; cause: unknown; error?: string }> {
  ctx.errors.length = 0;
  const body = {
    pushVersion: 1,
    clientGroupID: `${name}-g`,
    mutations: [{ clientID: `${name}-c`, id, name: 'add', args: null, timestamp: id }],
    profileID: 'p',
    schemaVersion: '',
  };
  const response = await handlePush(
    new Request('http://localhost/push', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    ctx,
  );
  const text = await response.text();
  if (response.status !== 200 && response.status !== 503) throw new Error(`push: ${response.status} ${text}: ${String(ctx.errors[0])}`);
  const error = response.status === 200 ? (JSON.parse(text) as { error?: string }).error : undefined;
  return { status: response.status, cause: (ctx.errors[0] as { cause?: { code?: unknown } } | undefined)?.cause?.code, ...(error !== undefined && { error }) };
}

/**
 * The failover under load: the primary crashed (after replication was stalled 1.5 s, if
 * asynchronous), the standby promoted one second after the crash, the load run until every
 * group was answered a few times after it; then every group pulls once more and is checked.
 */
async function failover(driver: Driver, pair: StandbyPair, deployment: Deployment): Promise<void> {
  const { storage } = deployment;
  await storage.migrate();
  const ctx: SyncContext = createContext({ storage, mutators: countingMutators, onError: () => {} });
  const load = startLoad(ctx);
  let diedAt = 0;
  let promotedAt = 0;
  try {
    await sleep(1_500);
    if (!pair.synchronous) {
      await pair.caughtUp();
      pair.stallReplication();
      await sleep(1_500);
    }
    diedAt = performance.now();
    await pair.crashPrimary();
    // Only what is sent once the primary is gone counts as answered after it.
    load.mark();
    await sleep(diedAt + 1_000 - performance.now());
    await pair.promote();
    promotedAt = performance.now();
    deployment.promoted();
    await until(load, () => load.groups.every((group) => group.answeredAfterMark >= 5), 60_000);
  } finally {
    await load.stop();
  }
  await check(driver, pair, ctx, load, { diedAt, promotedAt });
}

/** Waits for `done`; fails after `timeoutMs` (a hang: the load answers within seconds) saying what the load saw. */
async function until(load: Load, done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > deadline) {
      throw new Error(
        `The load was not answered after the failover within ${timeoutMs / 1000} s: ${JSON.stringify({ push: [...load.stats.push], pull: [...load.stats.pull], unavailable: [...load.stats.unavailable], failures: load.stats.failures.slice(0, 5), groups: load.groups.map((group) => [group.name, group.answeredAfterMark]) })}`,
      );
    }
    await sleep(50);
  }
}

async function check(driver: Driver, pair: StandbyPair, ctx: SyncContext, load: Load, times: { diedAt: number; promotedAt: number }): Promise<void> {
  const { stats, groups } = load;
  const mode = pair.synchronous ? 'synchronous' : 'asynchronous';
  const first = stats.firstPushAfterMark === undefined ? undefined : Math.round(stats.firstPushAfterMark - times.diedAt);
  const lives = groups.flatMap((group) => group.generations.map((life) => ({ group, life })));
  const csnf = { push: lives.filter(({ life }) => life.ended === 'push').length, pull: lives.filter(({ life }) => life.ended === 'pull').length };
  const resets = lives.filter(({ life }) => (life.resets ?? 0) > 0).map(({ life }) => life.groupID);

  // The server's state now: the whole view, and each client's lastMutationID.
  const final = (await pullOnce(ctx, { groupID: 'final-reader', cookie: null })) as PullAnswer;
  const view = new Map<string, JSONValue>();
  for (const op of final.patch) if (op.op === 'put') view.set(op.key, op.value);
  let lost = 0;
  let lostGroups = 0;
  for (const { group, life } of lives) {
    if (!group.writes) continue;
    const c = life.clientID!;
    const answer = (await pullOnce(ctx, { groupID: life.groupID, cookie: null })) as PullAnswer;
    const lastMutationID = answer.lastMutationIDChanges[c] ?? 0;
    // Exactly once: the counter, the entries and the lastMutationID agree, with no gap.
    const ids = [...view.keys()]
      .filter((key) => key.startsWith(`m/${c}/`))
      .map((key) => Number(key.slice(`m/${c}/`.length)))
      .sort((a, b) => a - b);
    expect(ids, c).toEqual(Array.from({ length: lastMutationID }, (_, i) => i + 1));
    expect(view.get(`count/${c}`) ?? 0, c).toBe(lastMutationID);
    if (life.acknowledged > lastMutationID) {
      lost += life.acknowledged - lastMutationID;
      lostGroups++;
      // Lost acknowledged commits: only allowed asynchronously, and never without being told.
      expect(pair.synchronous, `${c} lost ${life.acknowledged - lastMutationID} acknowledged mutations`).toBe(false);
      expect(life.ended, `${c} lost ${life.acknowledged - lastMutationID} acknowledged mutations and was not told ClientStateNotFound`).toBeDefined();
    }
  }
  for (const { life } of lives) expect(life.backwards, life.groupID).toEqual([]);
  // Every group's latest life converges on the server's state with one more pull.
  for (const group of groups) {
    const life: Generation = group.generations.at(-1)!;
    const answer = await pullOnce(ctx, life);
    expect('error' in answer ? answer.error : undefined, life.groupID).toBeUndefined();
    take(life, answer as PullAnswer);
    expect(life.backwards, life.groupID).toEqual([]);
    expect(life.cookie, life.groupID).toEqual(final.cookie);
    expect(life.view, life.groupID).toEqual(view);
    if (life.clientID !== undefined) expect(life.lastMutationID, life.groupID).toBe(await lastMutationIDOf(ctx, life));
  }

  const line = `${mode}, ${driver}: first push ${first} ms after the primary died (promoted at ${Math.round(times.promotedAt - times.diedAt)} ms); pushes ${JSON.stringify(Object.fromEntries(stats.push))}, pulls ${JSON.stringify(Object.fromEntries(stats.pull))}; 503 for ${JSON.stringify(Object.fromEntries(stats.unavailable))}; acknowledged mutations lost: ${lost} in ${lostGroups} groups; ClientStateNotFound: ${csnf.push} on push, ${csnf.pull} on pull; sent everything again: ${resets.length === 0 ? 'none' : resets.join(' ')}; ${view.size} entries`;
  figures.push(line);
  expect(stats.failures, 'answers other than 200 and 503').toEqual([]);
  expect(first, 'a push answered after the failover').toBeDefined();
  if (pair.synchronous) expect(csnf).toEqual({ push: 0, pull: 0 });
  else expect(lost, 'replication was stalled: some acknowledged mutations were lost').toBeGreaterThan(0);
}

/** The lastMutationID the server holds for the client of `life`. */
async function lastMutationIDOf(ctx: SyncContext, life: Generation): Promise<number> {
  const answer = (await pullOnce(ctx, { groupID: life.groupID, cookie: null })) as PullAnswer;
  return answer.lastMutationIDChanges[life.clientID!] ?? 0;
}
