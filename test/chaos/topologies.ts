/**
 * The deployments a chaos run can put under faults, each with the faults that fit it. Every one
 * runs real server processes (test/chaos/server.ts) over a real store; the PostgreSQL ones on
 * servers of their own (never the one `DATABASE_URL` names, which other suites share), reached
 * through a fault proxy that can cut and stall the network between servers and database.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { type Cluster, startCluster } from '../support/clusters.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { startPgBouncer } from '../support/pgbouncer.js';
import { type RedisServer, startRedisServer } from '../support/redis-server.js';
import { startStandbyPair, type StandbyPair } from '../support/standby.js';
import { bundled, ROOT, Watched } from './processes.js';
import type { Random } from './rng.js';
import type { StoreSpec } from './server.js';

/** One kind of fault: what it does, and how often it is drawn against the others. */
export interface FaultKind {
  name: string;
  weight: number;
  /** Injects the fault and, for a passing one, waits it out and heals it; resolves with a detail for the record. */
  inject(rng: Random): Promise<string>;
  /** It may lose acknowledged commits (asynchronous replication failed over): the checker then admits a push it lost, if the client is shown. */
  losesCommits?: boolean;
}

/** A running deployment. */
export interface Deployment {
  /** Base URLs of the servers up now. */
  servers(): string[];
  /** Moves every server's clock to `offsetMs` ahead of the real one (a server started again gets it too). */
  setClock(offsetMs: number): Promise<void>;
  faults: FaultKind[];
  /** Faults injected once a run, at a random moment in its middle (a failover). */
  once?: FaultKind[];
  /**
   * Background work of the deployment's own (moves between stores), run beside the clients until
   * `stopping`; `complain` records an operator's command that should have been refused and was not.
   */
  background?(
    rng: Random,
    stopping: () => boolean,
    record: (kind: string, detail: string) => void,
    complain: (detail: string) => void,
    pauseMs?: [number, number],
  ): Promise<void>;
  /** Ends every fault in place: networks resumed, databases and servers up. */
  heal(): Promise<void>;
  stop(): Promise<void>;
  /**
   * How the CLI reaches the store, as the servers name it, for an operator's commands (an
   * import). `exclusive`: a SQLite file, which one process holds: the operator stops the servers
   * around the command ({@link Deployment.withServersStopped}).
   */
  cli?: { args: string[]; exclusive?: boolean };
  /**
   * What an operator's process (server.ts with OPERATE: a restore or revert) needs to reach the
   * store as the servers do: their environment. `exclusive`: as for {@link Deployment.cli}.
   */
  operator?: { env: Record<string, string>; exclusive?: boolean };
  /** Stops every server (SIGTERM), runs `work`, and starts them again: an operator's maintenance window. No fault kills a server meanwhile. */
  withServersStopped<T>(work: () => Promise<T>): Promise<T>;
}

export interface Topology {
  name: string;
  description: string;
  /** Acknowledged commits may be lost (asynchronous replication failed over): the checker then asks that their groups be told. */
  lossAllowed?: boolean;
  start(crashes: string[], log: (line: string) => void): Promise<Deployment>;
}

/** Server processes of one deployment: started, killed -9 and started again on the same port, their clock set. */
class Fleet {
  readonly servers: Watched[];
  #offsetMs = 0;

  private constructor(servers: Watched[]) {
    this.servers = servers;
  }

  static async of(count: number, env: (i: number) => Record<string, string>, crashes: string[]): Promise<Fleet> {
    const script = await bundled('test/chaos/server.ts');
    return new Fleet(Array.from({ length: count }, (_, i) => new Watched(`server ${i}`, script, { NAME: `s${i}`, ...env(i) }, crashes)));
  }

  async start(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.start()));
  }

  urls(): string[] {
    return this.servers.filter((server) => server.up && server.url !== undefined).map((server) => server.url!);
  }

  async setClock(offsetMs: number): Promise<void> {
    this.#offsetMs = offsetMs;
    await Promise.all(this.servers.filter((server) => server.up).map((server) => this.#sendClock(server)));
  }

  /** kill -9 one server, and start it again after a moment. */
  readonly kill: FaultKind = {
    name: 'kill -9 a server',
    weight: 3,
    inject: (rng) =>
      this.#alone(async () => {
        const up = this.servers.filter((server) => server.up);
        if (up.length === 0) return 'none up';
        const victim = rng.pick(up);
        await victim.kill();
        await sleep(rng.int(100, 1_500));
        await this.#restart(victim);
        return victim.label;
      }),
  };

  /** Stops every server (SIGTERM), runs `work`, and starts them again. */
  withServersStopped<T>(work: () => Promise<T>): Promise<T> {
    return this.#alone(async () => {
      await Promise.all(this.servers.map((server) => server.stop()));
      try {
        return await work();
      } finally {
        await Promise.all(this.servers.map((server) => this.#restart(server)));
      }
    });
  }

  /** Kills and stops one at a time: a server started again mid-window would find its store held. */
  #queue: Promise<unknown> = Promise.resolve();
  #alone<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work);
    this.#queue = run.catch(() => {});
    return run;
  }

  async heal(): Promise<void> {
    await Promise.all(this.servers.filter((server) => !server.up).map((server) => this.#restart(server)));
  }

  async stop(): Promise<void> {
    await Promise.all(this.servers.map((server) => server.stop()));
  }

  async #restart(server: Watched): Promise<void> {
    await server.start();
    await this.#sendClock(server);
  }

  async #sendClock(server: Watched): Promise<void> {
    for (let tries = 0; ; tries++) {
      try {
        const response = await fetch(`${server.url}chaos/clock`, { method: 'POST', body: JSON.stringify({ offsetMs: this.#offsetMs }) });
        if (response.ok) return;
      } catch (error) {
        if (tries >= 20 || !server.up) throw error;
      }
      await sleep(100);
    }
  }
}

/** A PostgreSQL server of the run's own behind a fault proxy, with the faults of both. */
class Database {
  readonly cluster: Cluster;
  readonly proxy: FaultProxy;
  readonly #name: string;
  #driver: 'postgres.js' | 'pg' = 'postgres.js';
  #down = false;

  private constructor(name: string, cluster: Cluster, proxy: FaultProxy) {
    this.#name = name;
    this.cluster = cluster;
    this.proxy = proxy;
  }

  /** `driver`: what the servers reach it with; postgres.js's own faults come with it. */
  static async start(name: string, driver: 'postgres.js' | 'pg' = 'postgres.js'): Promise<Database> {
    const cluster = startCluster(`chaos-${name}`);
    const database = new Database(name, cluster, await startFaultProxy(cluster.port));
    database.#driver = driver;
    return database;
  }

  /** The URL the servers use: through the proxy. */
  get url(): string {
    return this.proxy.url(this.cluster.url);
  }

  faults(): FaultKind[] {
    return [
      { name: `kill ${this.#name}'s backends`, weight: 3, inject: async () => `${await this.#killBackends()} killed` },
      {
        name: `stop and start ${this.#name}`,
        weight: 1,
        inject: async (rng) => {
          this.#down = true;
          this.cluster.stop();
          await sleep(rng.int(300, 2_000));
          this.cluster.start();
          this.#down = false;
          return '';
        },
      },
      { name: `cut the network to ${this.#name}`, weight: 2, inject: async () => (this.proxy.cut(), '') },
      {
        name: `stall the network to ${this.#name}`,
        weight: 2,
        inject: async (rng) => {
          this.proxy.stall();
          const ms = rng.int(200, 2_500);
          await sleep(ms);
          this.proxy.resume();
          return `${ms} ms`;
        },
      },
      {
        name: `refuse connections to ${this.#name}`,
        weight: 1,
        inject: async (rng) => {
          this.proxy.cut();
          this.proxy.refuse();
          await sleep(rng.int(200, 1_500));
          this.proxy.accept();
          return '';
        },
      },
      {
        name: `kill ${this.#name}'s new connections as they are handed out`,
        weight: 2,
        inject: async (rng) => {
          this.proxy.cut();
          const count = rng.int(1, 6);
          this.proxy.fatalAtReady(count);
          return `${count}`;
        },
      },
      // postgres.js 3.4 can lose a statement on a connection it reconnected after a cut (the
      // server then waits for its rest for ever, mid-transaction, holding the space's lock): the
      // next connection to send anything loses what it sends after its first 0-2 writes.
      ...(this.#driver === 'postgres.js'
        ? [{ name: `lose a statement to ${this.#name}`, weight: 1, inject: async (rng: Random) => (this.proxy.swallowNext(rng.int(0, 2)), '') }]
        : []),
    ];
  }

  async heal(): Promise<void> {
    this.proxy.swallowNone();
    this.proxy.resume();
    this.proxy.accept();
    this.proxy.fatalAtReady(-Infinity);
    if (this.#down) {
      this.cluster.start();
      this.#down = false;
    }
  }

  async stop(): Promise<void> {
    await this.proxy.close();
    this.cluster.remove();
  }

  async #killBackends(): Promise<number> {
    const sql = postgres(this.cluster.url, { max: 1, fetch_types: false, onnotice: () => {}, connect_timeout: 5 });
    try {
      const rows = await sql`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name LIKE 'chaos-%'`;
      return rows.filter((row) => row.ok).length;
    } catch {
      return 0;
    } finally {
      await sql.end({ timeout: 1 });
    }
  }
}

/** A deployment of `count` servers over `store`, with the faults of the servers, the databases and `extra`. */
async function deploy(
  count: number,
  store: StoreSpec,
  env: Record<string, string>,
  crashes: string[],
  databases: Database[],
  cleanups: Array<() => Promise<void>>,
  extra: Partial<Deployment> = {},
): Promise<Deployment> {
  const fleet = await Fleet.of(count, () => ({ STORE: JSON.stringify(store), ...env }), crashes);
  try {
    await fleet.start();
  } catch (error) {
    await fleet.stop();
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    throw error;
  }
  return {
    servers: () => fleet.urls(),
    setClock: (offsetMs) => fleet.setClock(offsetMs),
    faults: [fleet.kill, ...databases.flatMap((database) => database.faults()), ...(extra.faults ?? [])],
    once: extra.once,
    background: extra.background,
    cli: extra.cli,
    operator: { env: { STORE: JSON.stringify(store), ...env }, exclusive: store.kind === 'sqlite' },
    withServersStopped: (work) => fleet.withServersStopped(work),
    async heal() {
      for (const database of databases) await database.heal();
      await extra.heal?.();
      await fleet.heal();
    },
    async stop() {
      await fleet.stop();
      for (const cleanup of cleanups) await cleanup().catch(() => {});
    },
  };
}

function postgresTopology(name: string, driver: 'postgres.js' | 'pg', description: string): Topology {
  return {
    name,
    description,
    async start(crashes) {
      const database = await Database.start('db', driver);
      return deploy(
        2,
        { kind: 'postgres', driver, url: database.url },
        { NOTIFIER: 'postgres', NOTIFY_URL: database.url },
        crashes,
        [database],
        [() => database.stop()],
        { cli: { args: ['--postgres', database.url] } },
      );
    },
  };
}

export const TOPOLOGIES: Record<string, Topology> = {
  sqlite: {
    name: 'sqlite',
    description: 'one server process on a SQLite file, killed -9 and started again on it',
    async start(crashes) {
      const dir = mkdtempSync(join(tmpdir(), 'viewsync-chaos-'));
      const file = join(dir, 'chaos.db');
      return deploy(1, { kind: 'sqlite', file }, {}, crashes, [], [async () => rmSync(dir, { recursive: true, force: true })], {
        cli: { args: ['--sqlite', file], exclusive: true },
      });
    },
  },
  'postgres-js': postgresTopology('postgres-js', 'postgres.js', 'two server processes on one PostgreSQL server through postgres.js, pokes by LISTEN'),
  'pg-pool': postgresTopology('pg-pool', 'pg', "two server processes on one PostgreSQL server through pg's Pool, pokes by LISTEN"),
  notifiers: {
    name: 'notifiers',
    description: 'three server processes on one PostgreSQL server, pokes by LISTEN, by Redis and by polling the store, one each',
    async start(crashes) {
      const database = await Database.start('db');
      let redis: RedisServer | undefined;
      try {
        redis = await startRedisServer();
      } catch {
        redis = undefined;
      }
      const store: StoreSpec = { kind: 'postgres', driver: 'postgres.js', url: database.url };
      const kinds = ['postgres', redis === undefined ? 'store' : 'redis', 'store'];
      const fleet = await Fleet.of(
        3,
        (i) => ({ STORE: JSON.stringify(store), NOTIFIER: kinds[i]!, NOTIFY_URL: database.url, REDIS_URL: redis?.url ?? '' }),
        crashes,
      );
      await fleet.start();
      const faults = [fleet.kill, ...database.faults()];
      if (redis !== undefined) {
        const server = redis;
        faults.push({
          name: 'stop and start Redis',
          weight: 1,
          inject: async (rng) => (await server.stop(), await sleep(rng.int(200, 1_500)), await server.start(), ''),
        });
      }
      return {
        servers: () => fleet.urls(),
        setClock: (offsetMs) => fleet.setClock(offsetMs),
        faults,
        cli: { args: ['--postgres', database.url] },
        operator: { env: { STORE: JSON.stringify(store), NOTIFIER: 'postgres', NOTIFY_URL: database.url } },
        withServersStopped: (work) => fleet.withServersStopped(work),
        async heal() {
          await database.heal();
          await fleet.heal();
        },
        async stop() {
          await fleet.stop();
          await redis?.stop().catch(() => {});
          await database.stop();
        },
      };
    },
  },
  routed: {
    name: 'routed',
    description:
      'two server processes over routedStorage on three PostgreSQL servers with a directory, spaces moved by the CLI, movers killed -9 at every phase',
    async start(crashes, log) {
      const databases = await Promise.all(['a', 'b', 'c'].map((name) => Database.start(name)));
      const stores = Object.fromEntries(databases.map((database, i) => [['a', 'b', 'c'][i]!, database.url]));
      const cli = { args: [...Object.entries(stores).flatMap(([name, url]) => ['--store', `${name}=${url}`]), '--directory', 'a'] };
      const deployment = await deploy(
        2,
        { kind: 'routed', driver: 'postgres.js', stores, directory: 'a' },
        { NOTIFIER: 'postgres', NOTIFY_URL: databases[0]!.url },
        crashes,
        databases,
        databases.map((database) => () => database.stop()),
        { cli },
      );
      deployment.background = (rng, stopping, record, complain, pauseMs) => moves(stores, rng, stopping, record, complain, log, pauseMs);
      return deployment;
    },
  },
  pgbouncer: {
    name: 'pgbouncer',
    description:
      'two server processes over routedStorage on two PostgreSQL servers reached only through PgBouncer in transaction mode (postgres.js, prepare=false in the URLs), pokes by polling the store, spaces moved by the CLI through it',
    async start(crashes, log) {
      const databases = await Promise.all(['a', 'b'].map((name) => Database.start(name)));
      const bouncer = await startPgBouncer({ a: databases[0]!.url, b: databases[1]!.url });
      // The database faults act between PgBouncer and the servers; the servers, the CLI and the movers reach the stores only through PgBouncer.
      const stores = { a: `${bouncer.url('a')}?prepare=false`, b: `${bouncer.url('b')}?prepare=false` };
      const cli = { args: [...Object.entries(stores).flatMap(([name, url]) => ['--store', `${name}=${url}`]), '--directory', 'a'] };
      const deployment = await deploy(
        2,
        { kind: 'routed', driver: 'postgres.js', stores, directory: 'a' },
        { NOTIFIER: 'store' },
        crashes,
        databases,
        [() => bouncer.stop(), ...databases.map((database) => () => database.stop())],
        { cli },
      );
      deployment.background = (rng, stopping, record, complain, pauseMs) => moves(stores, rng, stopping, record, complain, log, pauseMs);
      return deployment;
    },
  },
  standby: {
    name: 'standby',
    description: 'two server processes through postgres.js on a primary and its synchronous streaming standby, the primary crashed and the standby promoted',
    async start(crashes, log) {
      return standbyDeployment(crashes, log, true);
    },
  },
  'standby-async': {
    name: 'standby-async',
    lossAllowed: true,
    description: 'as standby, with asynchronous replication stalled before the primary dies: commits are lost, and their groups must be told',
    async start(crashes, log) {
      return standbyDeployment(crashes, log, false);
    },
  },
  'standby-reads': {
    name: 'standby-reads',
    description: 'two server processes through postgres.js, pulls served by an asynchronous streaming standby that lags, stalls, pauses its replay and crashes',
    async start(crashes, log) {
      return standbyReadsDeployment(crashes, log);
    },
  },
};

/** The spaces moves pick from (the clients' spaces are named space-0, space-1…). */
export const MOVED_SPACES = ['space-0', 'space-1', 'space-2', 'space-3'];

/**
 * Moves spaces between the stores with the CLI, as an operator does, while clients use them;
 * about one mover in three is killed -9 at a random moment (in any phase) and the move is run
 * again, which must finish it. Now and then the operator gets it wrong: leaves out
 * `--directory` (the CLI then places spaces by hash, unlike the servers), or moves a space that
 * does not exist; such a move must be refused, and never touch a space's data.
 */
async function moves(
  stores: Record<string, string>,
  rng: Random,
  stopping: () => boolean,
  record: (kind: string, detail: string) => void,
  complain: (detail: string) => void,
  log: (line: string) => void,
  [least, most]: [number, number] = [500, 3_000],
): Promise<void> {
  const storeArgs = Object.entries(stores).flatMap(([name, url]) => ['--store', `${name}=${url}`]);
  const script = await bundled('src/cli/bin.ts');
  for (let n = 1; !stopping(); n++) {
    await sleep(rng.int(least, most));
    if (stopping()) return;
    const mistake = rng.chance(0.25) ? rng.pick(['no --directory', 'a space that does not exist'] as const) : undefined;
    const space = mistake === 'a space that does not exist' ? `never-written-${n}` : rng.pick(MOVED_SPACES);
    // Without the directory, half the time to the store that holds the space: where a CLI that
    // places by hash would clear the data it takes for a stale copy.
    const to =
      mistake === 'no --directory' && rng.chance(0.5) ? ((await listedIn(stores.a!, space)) ?? rng.pick(Object.keys(stores))) : rng.pick(Object.keys(stores));
    // A third of the movers are killed as they enter a phase drawn from all of them (the CLI says
    // each on stderr), or a moment after they start.
    const kill = mistake === undefined && rng.chance(0.35) ? rng.pick([...MOVE_PHASES, 'at once'] as const) : undefined;
    const mover = moverProcess(script, [
      'move',
      space,
      '--to',
      to,
      ...(mistake === 'no --directory' ? [] : ['--directory', 'a']),
      '--switch-timeout',
      '2s',
      ...storeArgs,
    ]);
    if (kill === 'at once') {
      await sleep(rng.int(20, 1_500));
      mover.kill();
    } else if (kill !== undefined) {
      await Promise.race([mover.reached(`move: ${kill} `), mover.exited]);
      mover.kill();
    }
    const code = await mover.exited;
    const last = mover.output().trim().split('\n').at(-1) ?? '';
    const kind =
      kill !== undefined
        ? `kill -9 a mover ${kill === 'at once' ? 'at once' : `as it enters ${kill}`}`
        : mistake === undefined
          ? 'move'
          : `move with ${mistake}`;
    record(kind, `${space} to ${to}: ${kill !== undefined ? `killed after "${last}"` : `exit ${code}: ${last.slice(0, 200)}`}`);
    // Even "nothing to move" is a wrong answer there: the CLI cannot know where the space is.
    if (mistake !== undefined && code === 0) complain(`viewsync move ${space} --to ${to} with ${mistake} exited 0: ${last}`);
    // A move may be refused while another runs or a store is down; anything else is worth a look.
    if (
      !kill &&
      mistake === undefined &&
      code !== 0 &&
      !/already|nothing to move|another move|did not finish within|unavailable|Cannot reach|ECONNRE|CONNECTION/i.test(mover.output())
    )
      log(`mover ${n}: exit ${code}: ${mover.output().slice(-500)}`);
  }
}

/** The store the directory (kept in the store at `url`) names for `space`, if it can say. */
async function listedIn(url: string, space: string): Promise<string | undefined> {
  const sql = postgres(url, { max: 1, fetch_types: false, onnotice: () => {}, connect_timeout: 2 });
  try {
    const [row] = await sql`SELECT value FROM viewsync_kv WHERE key = ${`d/${space}/`}`;
    return row === undefined ? undefined : (JSON.parse(row.value as string) as string);
  } catch {
    return undefined;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** The phases a move goes through, as `viewsync move` tells them on stderr (MoveProgress). */
const MOVE_PHASES = ['copying', 'catching-up', 'switching', 'committed', 'switched', 'cleaning'] as const;

/** A CLI mover (`viewsync move`): its output and exit, a wait for a line of it, and kill -9. */
function moverProcess(
  script: string,
  args: string[],
): { output(): string; reached(text: string): Promise<void>; kill(): void; exited: Promise<number | null> } {
  const child = spawn(process.execPath, [script, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const waiting: Array<{ text: string; resolve: () => void }> = [];
  const take = (text: string) => {
    output += text;
    for (const wait of waiting.filter(({ text }) => output.includes(text))) wait.resolve();
  };
  child.stdout.setEncoding('utf8').on('data', take);
  child.stderr.setEncoding('utf8').on('data', take);
  return {
    output: () => output,
    reached: (text) => (output.includes(text) ? Promise.resolve() : new Promise((resolve) => waiting.push({ text, resolve }))),
    kill: () => child.kill('SIGKILL'),
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
  };
}

/**
 * A primary and its streaming standby, postgres.js given both hosts (`target_session_attrs=primary`):
 * the fault crashes the primary, promotes the standby a second later (as a failover manager
 * would), and makes the old primary the new standby, so that the pair can fail over again.
 * Asynchronous, replication is stalled first: what the standby had not received is lost.
 */
async function standbyDeployment(crashes: string[], log: (line: string) => void, synchronous: boolean): Promise<Deployment> {
  const pair: StandbyPair = await startStandbyPair({ synchronous });
  const url = pair.hosts('primary', 'target_session_attrs=primary');
  const store: StoreSpec = { kind: 'postgres', driver: 'postgres.js', url };
  const failover: FaultKind = {
    name: 'crash the primary, promote the standby',
    weight: 1,
    losesCommits: !synchronous,
    inject: async (rng) => {
      if (!synchronous) {
        pair.stallReplication();
        await sleep(rng.int(300, 1_500));
      }
      await pair.crashPrimary();
      await sleep(1_000);
      await pair.promote();
      pair.resumeReplication();
      log(`failed over${synchronous ? '' : ' (replication stalled first)'}`);
      await pair.rejoin();
      return synchronous ? '' : 'replication stalled first';
    },
  };
  return deploy(2, store, {}, crashes, [], [() => pair.stop()], { once: [failover], faults: [failover], cli: { args: ['--postgres', url] } });
}

/**
 * A primary whose asynchronous standby serves pulls (`postgresStorage`'s `standbys`), made to lag
 * behind it in every way it can: its stream held, its replay paused, the standby crashed and
 * started again. Pushes and pokes go to the primary; the checker sees whether any answer went
 * backwards.
 */
async function standbyReadsDeployment(crashes: string[], log: (line: string) => void): Promise<Deployment> {
  const pair: StandbyPair = await startStandbyPair();
  const store: StoreSpec = { kind: 'postgres', driver: 'postgres.js', url: pair.primary.url, standbys: [pair.standby.url] };
  const replay = (what: 'pause' | 'resume') => pair.query(pair.standby, `SELECT pg_wal_replay_${what}()`);
  let down = false;
  const faults: FaultKind[] = [
    {
      name: 'stall replication to the standby',
      weight: 2,
      inject: async (rng) => {
        pair.stallReplication();
        await sleep(rng.int(200, 2_000));
        pair.resumeReplication();
        return '';
      },
    },
    {
      name: "pause the standby's replay",
      weight: 2,
      inject: async (rng) => {
        await replay('pause');
        await sleep(rng.int(200, 2_000));
        await replay('resume');
        return '';
      },
    },
    {
      name: 'crash the standby',
      weight: 1,
      inject: async (rng) => {
        down = true;
        await pair.crashStandby();
        log('standby crashed');
        await sleep(rng.int(300, 2_000));
        await pair.restartStandby();
        down = false;
        return '';
      },
    },
  ];
  const heal = async () => {
    pair.resumeReplication();
    if (down) await pair.restartStandby();
    down = false;
    await replay('resume');
  };
  const deployment = await deploy(2, store, { NOTIFIER: 'postgres', NOTIFY_URL: pair.primary.url }, crashes, [], [() => pair.stop()], {
    faults,
    heal,
    cli: { args: ['--postgres', pair.primary.url] },
  });
  // Healed once the faults are over: the record says how many reads the standby served meanwhile.
  const healAll = deployment.heal.bind(deployment);
  deployment.heal = async () => {
    await healAll();
    const stats = await Promise.all(
      deployment.servers().map(async (url) => (await fetch(`${url}chaos/standby-stats`)).json() as Promise<{ standby: number; primary: number } | null>),
    );
    const [standby, primary] = [stats.reduce((sum, s) => sum + (s?.standby ?? 0), 0), stats.reduce((sum, s) => sum + (s?.primary ?? 0), 0)];
    log(`reads so far on servers up: ${standby} from the standby, ${primary} from the primary`);
  };
  return deployment;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
