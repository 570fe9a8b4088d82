/**
 * Separate PostgreSQL servers (one `pg_ctl` cluster each), for the tests of spaces spread over
 * several databases and any test that stops and starts a server of its own: each started by
 * scripts/start-postgres.sh on a free port of 127.0.0.1, with its data in a new temporary folder.
 *
 *   let cluster: Cluster;
 *   beforeAll(() => void (cluster = startCluster('a')));
 *   afterAll(() => cluster?.remove());
 *   // cluster.url; cluster.stop() and cluster.start() crash it and bring it back on the same port
 *
 * A cluster never outlives the process that started it: `remove()` stops it and deletes its
 * folder; the process's exit does the same for those not removed; and a watchdog started with
 * each one does it within a second or two of the process's end when the process was killed
 * (Ctrl-C, a vitest timeout, kill -9), which runs no exit handler. Folders of dead processes are
 * also removed by the next `startCluster`. As root, the servers run as the `postgres` user
 * (initdb refuses root), as in scripts/start-postgres.sh.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from '../package/packed.js';
import { isAlive } from './command.js';

/** A PostgreSQL server of the test's own; see {@link startCluster}. */
export interface Cluster {
  /** `postgres://postgres@127.0.0.1:PORT/postgres`: user `postgres`, trusted, database `postgres`. */
  readonly url: string;
  /** The port it listens on, on 127.0.0.1, for its whole life: {@link start} takes it again. */
  readonly port: number;
  /** Its folder: the data folder `data`, the server's `log`, and its socket. */
  readonly dir: string;
  /** Stops the server at once, as a crash or a kill would: connections drop mid-statement. */
  stop(): void;
  /** Starts it again, on the same data and port; returns once it takes connections. */
  start(): void;
  /** Stops it at once if it runs and deletes its folder. Idempotent; it cannot start again after. */
  remove(): void;
}

/** Whether PostgreSQL's server binaries are here (CI installs them; scripts/start-postgres.sh can too). */
export function haveServers(): boolean {
  return binDir() !== undefined;
}

/**
 * Starts a new, empty cluster and returns once it takes connections: on `port`, or on a free
 * port the OS picks (another if PostgreSQL then finds it taken), with its data in a new folder
 * named after `name` and this process. Call {@link Cluster.remove} when done (in `afterAll`);
 * what is not removed goes when the process ends, however it ends.
 *
 * @example
 * const cluster = startCluster('a');
 * try {
 *   const sql = postgres(cluster.url);
 *   // ...
 * } finally {
 *   cluster.remove();
 * }
 */
export function startCluster(name: string, port?: number): Cluster {
  const bin = binDir();
  if (bin === undefined) throw new Error('startCluster: no PostgreSQL server binaries under /usr/lib/postgresql (scripts/start-postgres.sh installs them)');
  removeOrphans();
  const dir = mkdtempSync(join(tmpdir(), `${PREFIX}${process.pid}-${name.replace(/[^\w-]/g, '_')}-`));
  live.add(dir);
  let url: string;
  let chosen: number;
  for (let attempt = 1; ; attempt++) {
    chosen = port ?? freePort();
    try {
      url = execFileSync(join(ROOT, 'scripts/start-postgres.sh'), {
        env: { ...process.env, PGPORT_TEST: String(chosen), PGBASE_TEST: dir },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }).trim();
      break;
    } catch (error) {
      // Another process took the port between the OS's pick and PostgreSQL's bind: pick again.
      if (port === undefined && attempt < 5 && portTaken(dir)) continue;
      const log = existsSync(join(dir, 'log')) ? readFileSync(join(dir, 'log'), 'utf8') : '';
      remove(dir);
      throw new Error(`startCluster(${JSON.stringify(name)}): scripts/start-postgres.sh failed on port ${chosen}: ${(error as Error).message}\n${log}`);
    }
  }
  watch(dir, bin);
  const flags = `-c listen_addresses=127.0.0.1 -p ${chosen} -k ${dir} -c fsync=off -c max_connections=200`;
  return {
    url,
    port: chosen,
    dir,
    stop: () => pgCtl(bin, ['-D', join(dir, 'data'), 'stop', '-m', 'immediate', '-w']),
    start: () => {
      if (!live.has(dir)) throw new Error(`startCluster(${JSON.stringify(name)}): start() after remove()`);
      pgCtl(bin, ['-D', join(dir, 'data'), 'start', '-w', '-l', join(dir, 'log'), '-o', flags]);
    },
    remove: () => remove(dir),
  };
}

/** What every cluster's folder is named: then the process ID of its owner. */
const PREFIX = 'viewsync-cluster-';

/** The folders of this process's clusters not yet removed. */
const live = new Set<string>();

process.once('exit', () => {
  for (const dir of live) remove(dir);
});

const asRoot = process.getuid?.() === 0;

function pgCtl(bin: string, args: string[]): void {
  const command = join(bin, 'pg_ctl');
  execFileSync(asRoot ? 'runuser' : command, asRoot ? ['-u', 'postgres', '--', command, ...args] : args, { cwd: '/', stdio: 'ignore', timeout: 120_000 });
}

/** Stops the server of the cluster in `dir` at once, if one runs, and deletes `dir`; never throws. */
function remove(dir: string): void {
  live.delete(dir);
  const bin = binDir();
  if (bin !== undefined && existsSync(join(dir, 'data', 'postmaster.pid'))) {
    try {
      pgCtl(bin, ['-D', join(dir, 'data'), 'stop', '-m', 'immediate', '-w']);
    } catch {
      // Not running after all: a crash leaves its postmaster.pid.
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/**
 * A detached shell that waits for this process to end, or for `dir` to go, then stops the
 * cluster and deletes `dir`: the clean-up of a process killed before its exit handler ran.
 */
function watch(dir: string, bin: string): void {
  const stop = `${asRoot ? 'runuser -u postgres -- ' : ''}"$PG_CTL" -D "$DIR/data" stop -m immediate -w`;
  const script = `while kill -0 "$OWNER" 2>/dev/null && [ -d "$DIR" ]; do sleep 1; done; [ -f "$DIR/data/postmaster.pid" ] && ${stop} >/dev/null 2>&1; rm -rf "$DIR"`;
  const child = spawn('sh', ['-c', script], {
    cwd: '/',
    detached: true,
    stdio: 'ignore',
    env: { PATH: process.env.PATH, OWNER: String(process.pid), DIR: dir, PG_CTL: join(bin, 'pg_ctl') },
  });
  child.unref();
}

/** Removes the clusters of processes that are gone (the watchdog's work, should it have died too). */
function removeOrphans(): void {
  for (const entry of readdirSync(tmpdir())) {
    const owner = Number(new RegExp(`^${PREFIX}(\\d+)-`).exec(entry)?.[1]);
    if (Number.isInteger(owner) && owner !== process.pid && !isAlive(owner)) remove(join(tmpdir(), entry));
  }
}

/** Whether the server in `dir` failed to start because its port was taken. */
function portTaken(dir: string): boolean {
  return existsSync(join(dir, 'log')) && /Address already in use/.test(readFileSync(join(dir, 'log'), 'utf8'));
}

/** A port free on 127.0.0.1 now: the OS's pick, asked in a child process (this function is synchronous). */
function freePort(): number {
  const script = "const s = require('node:net').createServer().listen(0, '127.0.0.1', () => { process.stdout.write(String(s.address().port)); s.close(); });";
  return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }));
}

function binDir(): string | undefined {
  try {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    return versions.map((version) => `/usr/lib/postgresql/${version}/bin`).find((dir) => readdirSync(dir).includes('pg_ctl'));
  } catch {
    return undefined;
  }
}
