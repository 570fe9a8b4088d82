/**
 * PgBouncer in transaction pool mode in front of PostgreSQL servers, for the tests that run the
 * store behind a pooler: Debian's `pgbouncer` (scripts/install-ha.sh installs it), on a free port
 * of 127.0.0.1 with its config, log and pid file in a temporary folder, one pooled database per
 * server it fronts. Plain functions, no test framework:
 *
 *   const bouncer = await startPgBouncer({ a: cluster.url });
 *   try {
 *     const sql = postgres(bouncer.url('a'), { prepare: false });
 *   } finally {
 *     await bouncer.stop();
 *   }
 *
 * PgBouncer refuses to run as root, so as root it runs as the `postgres` user, as the servers do.
 * The process is stopped when the test process exits, if `stop` was never called.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import { freePort } from './command.js';

/** A running PgBouncer; see {@link startPgBouncer}. */
export interface PgBouncer {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** The URL of pooled database `name` (user `postgres`, no password): what the app connects to. */
  url(name: string): string;
  /** The config file it runs with, for the docs' and a failed test's reader. */
  readonly config: string;
  /** Its log so far. */
  log(): string;
  /** Stops it (SIGTERM, then SIGKILL) and removes its folder. Idempotent. */
  stop(): Promise<void>;
}

/** Where Debian's package puts the binary. */
const BINARY = '/usr/sbin/pgbouncer';

/** Whether PgBouncer is installed (scripts/install-ha.sh). */
export function havePgBouncer(): boolean {
  return existsSync(BINARY);
}

/**
 * The config of a PgBouncer in transaction pool mode with one pooled database per entry of
 * `servers` (name to a `postgres://user@host:port/database` URL), listening on `port`. This is
 * the set-up docs/production.md shows.
 */
export function pgBouncerConfig(servers: Record<string, string>, port: number, dir: string): string {
  const databases = Object.entries(servers).map(([name, url]) => {
    const { hostname, port: serverPort, pathname, username } = new URL(url);
    return `${name} = host=${hostname} port=${serverPort || 5432} dbname=${decodeURIComponent(pathname.slice(1)) || 'postgres'} user=${decodeURIComponent(username) || 'postgres'}`;
  });
  return [
    '[databases]',
    ...databases,
    '',
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    // No socket: the tests and the app reach it over TCP only.
    "unix_socket_dir = ''",
    'pool_mode = transaction',
    // The throwaway servers trust loopback; a real one uses scram-sha-256 and an auth_file.
    'auth_type = trust',
    `auth_file = ${join(dir, 'userlist.txt')}`,
    'max_client_conn = 500',
    'default_pool_size = 20',
    // Drivers send these at start-up; PgBouncer refuses a connection with a parameter it does not know.
    'ignore_startup_parameters = extra_float_digits,options',
    // A server connection whose server went away is dropped at once rather than handed out.
    'server_check_delay = 0',
    `logfile = ${join(dir, 'pgbouncer.log')}`,
    `pidfile = ${join(dir, 'pgbouncer.pid')}`,
    '',
  ].join('\n');
}

/** Starts PgBouncer in front of `servers` (pooled database name to server URL); resolves once it takes connections. */
export async function startPgBouncer(servers: Record<string, string>): Promise<PgBouncer> {
  if (!havePgBouncer()) throw new Error(`No PgBouncer at ${BINARY} (scripts/install-ha.sh installs Debian's pgbouncer)`);
  const dir = mkdtempSync(join(tmpdir(), 'viewsync-pgbouncer-'));
  const port = await freePort();
  const config = join(dir, 'pgbouncer.ini');
  writeFileSync(config, pgBouncerConfig(servers, port, dir));
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const [uid, gid] = postgresUser();
    for (const file of [dir, config, join(dir, 'userlist.txt')]) chownSync(file, uid, gid);
  }
  const child: ChildProcess = asRoot
    ? spawn('runuser', ['-u', 'postgres', '--', BINARY, config], { stdio: 'ignore' })
    : spawn(BINARY, [config], { stdio: 'ignore' });
  const logFile = join(dir, 'pgbouncer.log');
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  let stopped = false;
  const kill = () => {
    // runuser's child is PgBouncer: its pid file names it.
    try {
      const pid = Number(readFileSync(join(dir, 'pgbouncer.pid'), 'utf8'));
      if (pid > 0) process.kill(pid, 'SIGKILL');
    } catch {
      // Not running.
    }
    child.kill('SIGKILL');
  };
  const onExit = () => {
    kill();
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  const bouncer: PgBouncer = {
    port,
    config: readFileSync(config, 'utf8'),
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    log,
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', onExit);
      const exited = new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));
      child.kill('SIGTERM');
      const timer = setTimeout(kill, 3_000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  for (const deadline = Date.now() + 15_000; !(await listening(port)); ) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const why = `PgBouncer did not listen on port ${port}${child.exitCode !== null ? ` (exited with ${child.exitCode})` : ' within 15 s'}; its log:\n${log()}`;
      await bouncer.stop();
      throw new Error(why);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return bouncer;
}

/** Whether something takes TCP connections on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

/** The `postgres` user's uid and gid. */
function postgresUser(): [number, number] {
  return [Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))];
}
