/**
 * A PostgreSQL primary and a streaming standby on loopback, for failover tests and the
 * fault-injection suite: each server on a free port with its own temporary folder, the standby
 * made with `pg_basebackup -R` and streaming from the primary through a fault proxy, so that
 * replication can be stalled. The primary can be crashed (`pg_ctl stop -m immediate`) and
 * started again, the standby promoted (`pg_ctl promote`), and the old primary made the promoted
 * one's standby, for the next failover. Plain functions, no test framework:
 *
 *   const pair = await startStandbyPair({ synchronous: true });
 *   try {
 *     // pair.primary.url, pair.standby.url; pair.hosts() names both, for postgres.js
 *     await pair.crashPrimary();
 *     await pair.promote();
 *     await pair.rejoin(); // the old primary streams from the new one: ready to fail over again
 *   } finally {
 *     await pair.stop();
 *   }
 *
 * `stop` removes everything the pair started; so does the process's exit if `stop` was never
 * called, and so does the next `startStandbyPair` for pairs left by a process that died killed.
 * As root, the servers run as the `postgres` user (initdb refuses root), as in
 * scripts/start-postgres.sh.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { freePort, isAlive } from './command.js';
import { type FaultProxy, startFaultProxy } from './fault-proxy.js';

/** One of the pair's servers. */
export interface PostgresServer {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** Its `postgres://` URL (user `postgres`, trusted, database `postgres`). */
  readonly url: string;
  /** Its data folder; its log is beside it, in `<dataDir>.log`. */
  readonly dataDir: string;
}

/** A primary and its streaming standby; see {@link startStandbyPair}. */
export interface StandbyPair {
  /** The server that takes writes: the promoted standby once {@link rejoin} has swapped the two. */
  readonly primary: PostgresServer;
  /** The server that streams from it. */
  readonly standby: PostgresServer;
  /** Whether a commit waits for the standby to have flushed it (`synchronous_standby_names`). */
  readonly synchronous: boolean;
  /** The folder holding both data folders, the logs and the sockets. */
  readonly dir: string;
  /**
   * A URL naming both servers, as postgres.js (and libpq) take a host list: `first` first
   * (default: the primary), with `query` (`target_session_attrs=primary`, say) appended. Both
   * servers keep their ports for the pair's life, so the URL stays good through a {@link rejoin}.
   */
  hosts(first?: 'primary' | 'standby', query?: string): string;
  /** Stops the primary at once, as a crash: its connections drop mid-statement, nothing is flushed or handed over. */
  crashPrimary(): Promise<void>;
  /** Starts the primary again on its data (after {@link crashPrimary}; not once the standby was promoted, which would make two primaries). */
  restartPrimary(): Promise<void>;
  /** Stops the standby at once, as a crash: its readers' connections drop. */
  crashStandby(): Promise<void>;
  /** Starts the standby again on its data (after {@link crashStandby}): it replays from its last restartpoint, then streams again. */
  restartStandby(): Promise<void>;
  /** Promotes the standby (`pg_ctl promote`); resolves once it takes writes. The pair then has two primaries until {@link rejoin}, one of them stopped, one hopes. */
  promote(): Promise<void>;
  /**
   * After {@link promote}: makes the old primary, stopped at once if it is running, a standby of
   * the promoted one, from a new base backup (its commits the standby never had are gone, as
   * after `pg_rewind`), and swaps the two: `primary` is the promoted server, `standby` the old
   * primary. Resolves once it streams and has caught up; the pair can then fail over again.
   */
  rejoin(): Promise<void>;
  /**
   * Holds every byte of the replication stream, both ways, until {@link resumeReplication}: the
   * standby receives nothing more, and a synchronous primary's commits wait. Whatever is held
   * when the primary dies never reaches the standby.
   */
  stallReplication(): void;
  resumeReplication(): void;
  /** Resolves once the standby has replayed everything the primary had written when called; rejects after `timeoutMs` (default 30 s). */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** Runs `statement` on `server` (one connection, closed after) and resolves to its rows. */
  query(server: PostgresServer, statement: string): Promise<Array<Record<string, unknown>>>;
  /** Stops both servers (as a crash: nothing here needs to survive) and removes their folder. Idempotent. */
  stop(): Promise<void>;
}

/** Options for {@link startStandbyPair}. */
export interface StandbyPairOptions {
  /**
   * Synchronous replication: a commit returns once the standby has flushed it
   * (`synchronous_standby_names`, with `synchronous_commit` at its default, `on`; set it to
   * `remote_apply` in `settings` for reads on the standby to see it too). Default: false,
   * asynchronous streaming.
   */
  synchronous?: boolean;
  /** `-c name=value` settings for both servers, on top of the pair's own. */
  settings?: Record<string, string>;
}

/** Whether PostgreSQL's server binaries are installed (Debian's `postgresql` package, as `.ci/run` installs it). */
export function haveServerBinaries(): boolean {
  return binDir() !== undefined;
}

/**
 * Starts a primary and a standby streaming from it, each on a free port of 127.0.0.1 with its
 * own data folder under one temporary folder; resolves once the standby has replayed the
 * primary's WAL. The standby is `application_name=standby`; with `synchronous`, the primary
 * waits for it on every commit.
 */
export async function startStandbyPair(options: StandbyPairOptions = {}): Promise<StandbyPair> {
  const bin = binDir();
  if (bin === undefined) throw new Error('No PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)');
  removeOrphans();
  const synchronous = options.synchronous ?? false;
  const dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-`));
  if (asRoot) chownSync(dir, ...postgresUser());
  let stopped = false;
  let proxy: FaultProxy | undefined;
  // Whatever happens from here on, the process's end stops the servers and removes the folder.
  const release = guard(dir);
  try {
    const servers = [server(await freePort(), dir, 'a'), server(await freePort(), dir, 'b')] as const;
    // Which of the two is the primary now (rejoin swaps them).
    let current = 0;
    const primary = () => servers[current]!;
    const standby = () => servers[1 - current]!;
    const common = {
      listen_addresses: '127.0.0.1',
      unix_socket_directories: dir,
      fsync: 'off',
      max_connections: '100',
      wal_receiver_status_interval: '1',
      ...options.settings,
    };
    // A promoted standby is a primary with no standby: it must not wait for one, so only the
    // server started as the primary is told to (and the promoted one once it has one, by rejoin).
    const primarySettings = { ...common, ...(synchronous && { synchronous_standby_names: 'standby' }) };
    const start = (target: PostgresServer, settings: Record<string, string>) =>
      run(bin, 'pg_ctl', ['-D', target.dataDir, '-l', `${target.dataDir}.log`, '-w', 'start', '-o', flags(target.port, settings)]);
    const stopNow = (target: PostgresServer) => run(bin, 'pg_ctl', ['-D', target.dataDir, '-m', 'immediate', '-w', 'stop']);
    await copy(await initialized(bin), primary().dataDir);
    await start(primary(), primarySettings);
    // The standby streams through the proxy, which can hold its bytes (stallReplication).
    const replication = (proxy = await startFaultProxy(primary().port));
    /** Waits until the standby streams, and counts as synchronous if `sync`. */
    const streaming = async (sync: boolean) => {
      for (const deadline = Date.now() + 30_000; ; ) {
        const [row] = await pair.query(primary(), "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = 'standby'");
        if (row?.state === 'streaming' && (!sync || row.sync_state === 'sync')) return;
        if (Date.now() > deadline)
          throw new Error(
            `The standby was not streaming${sync ? ' as a synchronous standby' : ''} after 30 s (${JSON.stringify(row)}; see ${standby().dataDir}.log)`,
          );
        await sleep(50);
      }
    };
    const makeStandby = async () => {
      await run(bin, 'pg_basebackup', [
        '--no-sync',
        '-D',
        standby().dataDir,
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
        '-d',
        `host=127.0.0.1 port=${replication.port} user=postgres application_name=standby`,
      ]);
      await start(standby(), common);
      await streaming(false);
    };
    const pair: StandbyPair = {
      get primary() {
        return primary();
      },
      get standby() {
        return standby();
      },
      synchronous,
      dir,
      hosts(first = 'primary', query) {
        const listed = first === 'primary' ? [primary(), standby()] : [standby(), primary()];
        return `postgres://postgres@${listed.map((s) => `127.0.0.1:${s.port}`).join(',')}/postgres${query === undefined ? '' : `?${query}`}`;
      },
      crashPrimary: () => stopNow(primary()),
      restartPrimary: () => start(primary(), primarySettings),
      crashStandby: () => stopNow(standby()),
      restartStandby: () => start(standby(), common),
      promote: () => run(bin, 'pg_ctl', ['-D', standby().dataDir, '-w', 'promote']),
      async rejoin() {
        const [{ recovering }] = (await pair.query(standby(), 'SELECT pg_is_in_recovery() AS recovering')) as [{ recovering: boolean }];
        if (recovering) throw new Error('rejoin: the standby was not promoted');
        if (existsSync(join(primary().dataDir, 'postmaster.pid'))) await stopNow(primary()).catch(() => {});
        rmSync(primary().dataDir, { recursive: true, force: true });
        current = 1 - current;
        replication.retarget(primary().port);
        replication.resume();
        replication.cut();
        await makeStandby();
        if (synchronous) {
          // Only now: commits would wait for the standby while it was being made.
          await pair.query(primary(), "ALTER SYSTEM SET synchronous_standby_names = 'standby'");
          await pair.query(primary(), 'SELECT pg_reload_conf()');
          await streaming(true);
        }
        await pair.caughtUp();
      },
      stallReplication: () => replication.stall(),
      resumeReplication: () => replication.resume(),
      async caughtUp(timeoutMs = 30_000) {
        const [{ lsn }] = (await pair.query(primary(), 'SELECT pg_current_wal_lsn()::text AS lsn')) as [{ lsn: string }];
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const [{ done }] = (await pair.query(standby(), `SELECT coalesce(pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn, false) AS done`)) as [
            { done: boolean },
          ];
          if (done) return;
          if (Date.now() > deadline)
            throw new Error(`The standby had not replayed the primary's WAL up to ${lsn} after ${timeoutMs / 1000} s (see ${standby().dataDir}.log)`);
          await sleep(50);
        }
      },
      async query(target, statement) {
        const sql = postgres(target.url, { max: 1, fetch_types: false, onnotice: () => {}, connect_timeout: 10 });
        try {
          return [...(await sql.unsafe(statement))] as Array<Record<string, unknown>>;
        } finally {
          await sql.end({ timeout: 1 });
        }
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        await replication.close();
        for (const target of servers) if (existsSync(join(target.dataDir, 'postmaster.pid'))) await stopNow(target).catch(() => {});
        rmSync(dir, { recursive: true, force: true });
        release();
      },
    };
    await makeStandby();
    await streaming(synchronous);
    await pair.caughtUp();
    return pair;
  } catch (error) {
    await proxy?.close();
    removeSync(dir);
    release();
    throw error;
  }
}

/**
 * A new cluster's data folder, made once per process (initdb takes seconds) and copied for each
 * primary; removed when the process ends (see `guard`).
 */
let template: Promise<string> | undefined;

function initialized(bin: string): Promise<string> {
  template ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-template-`));
    guard(dir);
    if (asRoot) chownSync(dir, ...postgresUser());
    await run(bin, 'initdb', ['--no-sync', '-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C']);
    return join(dir, 'data');
  })();
  template.catch(() => (template = undefined));
  return template;
}

/** Copies a data folder, owner and modes kept. */
function copy(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => execFile('cp', ['-a', from, to], (error) => (error ? reject(error) : resolve())));
}

/** The folders to remove, their servers stopped, when the process ends before their pairs were stopped. */
const live = new Set<string>();

/**
 * Has `dir` removed (servers and all) when the process exits, or ends on SIGINT, SIGTERM or
 * SIGHUP (a test runner stops its workers with SIGTERM, which runs no exit handler), until the
 * returned function is called. The signal then ends the process as it would have, unless
 * something else listens for it.
 */
function guard(dir: string): () => void {
  if (!guarding) {
    guarding = true;
    process.on('exit', removeLive);
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      const onSignal = () => {
        removeLive();
        process.removeListener(signal, onSignal);
        if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
      };
      process.on(signal, onSignal);
    }
  }
  live.add(dir);
  return () => void live.delete(dir);
}

let guarding = false;

function removeLive(): void {
  for (const dir of live) removeSync(dir);
  live.clear();
}

/** What every temporary folder of a pair is named: then the process ID of its owner. */
const PREFIX = 'viewsync-standby-';

const asRoot = process.getuid?.() === 0;

function server(port: number, dir: string, name: string): PostgresServer {
  return { port, url: `postgres://postgres@127.0.0.1:${port}/postgres`, dataDir: join(dir, name) };
}

/** `pg_ctl -o`'s value: the port and each setting as `-c name=value` (values here have no spaces). */
function flags(port: number, settings: Record<string, string>): string {
  return [`-p ${port}`, ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`)].join(' ');
}

/** Runs a server binary, as `postgres` when we are root; rejects with its output when it fails. */
function run(bin: string, command: string, args: string[]): Promise<void> {
  const [file, argv] = invocation(bin, command, args);
  return new Promise((resolve, reject) => {
    execFile(file, argv, { cwd: '/', timeout: 120_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`));
      else resolve();
    });
  });
}

function invocation(bin: string, command: string, args: string[]): [string, string[]] {
  const path = join(bin, command);
  return asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
}

/** Stops whatever server runs on a data folder in `dir`, at once, and removes `dir`; never throws. */
function removeSync(dir: string): void {
  const bin = binDir();
  for (const name of ['a', 'b']) {
    const data = join(dir, name);
    if (bin === undefined || !existsSync(join(data, 'postmaster.pid'))) continue;
    try {
      const [file, argv] = invocation(bin, 'pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
      execFileSync(file, argv, { cwd: '/', stdio: 'ignore', timeout: 60_000 });
    } catch {
      // Not running after all (a crashed primary leaves its postmaster.pid).
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Removes the pairs of processes that are gone (killed before their exit handler could run). */
function removeOrphans(): void {
  for (const entry of readdirSync(tmpdir())) {
    const owner = Number(/^viewsync-standby-(\d+)-/.exec(entry)?.[1]);
    if (!Number.isInteger(owner) || owner === process.pid || isAlive(owner)) continue;
    const dir = join(tmpdir(), entry);
    if (statSync(dir, { throwIfNoEntry: false })?.isDirectory()) removeSync(dir);
  }
}

/** The `postgres` user's uid and gid, from /etc/passwd. */
function postgresUser(): [number, number] {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (line === undefined) throw new Error('Running as root needs a `postgres` user to run the servers (the postgresql package makes one)');
  const [, , uid, gid] = line.split(':');
  return [Number(uid), Number(gid)];
}

/** The newest PostgreSQL's server binaries under /usr/lib/postgresql. */
function binDir(): string | undefined {
  try {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    return versions
      .map((version) => `/usr/lib/postgresql/${version}/bin`)
      .find((dir) => existsSync(join(dir, 'pg_ctl')) && existsSync(join(dir, 'pg_basebackup')));
  } catch {
    return undefined;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
