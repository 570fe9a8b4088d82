/**
 * A pg_auto_failover formation on loopback, for the tests and the benchmark of failover under an
 * HA manager: a monitor and two nodes (a primary and a synchronous secondary), each a
 * `pg_autoctl run` supervising its PostgreSQL, on free ports with everything in one temporary
 * folder. Debian's `postgresql-NN-auto-failover` (scripts/install-ha.sh). The monitor's health
 * checks and the keepers' timeouts are tuned for a failover within seconds (TUNING, shown in
 * docs/production.md). Plain functions, no test framework:
 *
 *   const formation = await startFormation();
 *   try {
 *     // formation.url: both nodes, target_session_attrs=primary, for postgres.js
 *     const old = await formation.primary();
 *     formation.kill(old);             // or pause(old) / resume(old)
 *     await formation.waitForPrimary((name) => name !== old);
 *     formation.start(old);            // it rejoins as the secondary
 *     await formation.waitForHealthy();
 *   } finally {
 *     await formation.stop();
 *   }
 *
 * pg_autoctl refuses to run as root, so as root everything runs as the `postgres` user, as in
 * scripts/start-postgres.sh. What `stop` does not stop, the process's exit does, and a watchdog
 * within a second or two of the process's end when it was killed.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { freePort } from './command.js';

/**
 * The monitor's settings (`ALTER SYSTEM` on the monitor, then a reload) that bring a dead
 * primary's failover from about 30 s down to about 8: a health check every second, failed after
 * one retry, the node unhealthy after 2 s, and the old primary taken for demoted 5 s after the
 * failover started.
 */
export const MONITOR_TUNING: Record<string, string> = {
  'pgautofailover.health_check_period': '1000',
  'pgautofailover.health_check_timeout': '1000',
  'pgautofailover.health_check_max_retries': '1',
  'pgautofailover.health_check_retry_delay': '500',
  'pgautofailover.node_considered_unhealthy_timeout': '2000',
  'pgautofailover.primary_demote_timeout': '5000',
};

/**
 * Each keeper's settings (`pg_autoctl config set`): a primary that reaches neither the monitor
 * nor its standby demotes itself after 3 s, before the monitor's 5 s `primary_demote_timeout`
 * lets the standby take writes, so two primaries never take writes at once.
 */
export const KEEPER_TUNING: Record<string, string> = {
  'timeout.network_partition_timeout': '3',
};

/** A node's name: the first is the primary at the start. */
export type NodeName = 'a' | 'b';

/** A running formation; see {@link startFormation}. */
export interface Formation {
  /** Both nodes' ports. */
  readonly ports: Record<NodeName, number>;
  /** A URL naming both nodes with `target_session_attrs=primary` (see docs/production.md): what the app connects to. */
  readonly url: string;
  /** The URL of one node alone. */
  nodeURL(name: NodeName): string;
  /** The node the monitor says is the primary (reported and assigned), once one is. */
  primary(timeoutMs?: number): Promise<NodeName>;
  /** Resolves once a node that `accept`s is primary and takes writes. */
  waitForPrimary(accept: (name: NodeName) => boolean, timeoutMs?: number): Promise<NodeName>;
  /** Resolves once the monitor has node `name` in `state`, reported and assigned. */
  waitForState(name: NodeName, state: string, timeoutMs?: number): Promise<void>;
  /** Resolves once one node is `primary` and the other `secondary`, both reported and assigned: ready to fail over again. */
  waitForHealthy(timeoutMs?: number): Promise<void>;
  /** Kills the node's keeper, PostgreSQL and its backends at once (SIGKILL to the whole process group): a machine gone. */
  kill(name: NodeName): void;
  /** Freezes the node's keeper, PostgreSQL and its backends (SIGSTOP): connections are taken by the kernel and never answered, as across a partition. */
  pause(name: NodeName): void;
  /**
   * Freezes the node's keeper and its postmaster only (SIGSTOP): new connections are taken by the
   * kernel and never answered, and the monitor's health checks fail, while the backends already
   * connected go on taking statements: a half-dead primary.
   */
  pauseHalf(name: NodeName): void;
  /** Lets a paused node go on (SIGCONT). */
  resume(name: NodeName): void;
  /** Starts a killed node's keeper again (`pg_autoctl run`) on its data: it rejoins as the monitor tells it. */
  start(name: NodeName): void;
  /** Runs `statement` on a node (one connection, closed after). */
  query(name: NodeName, statement: string): Promise<Array<Record<string, unknown>>>;
  /** `pg_autoctl show state`, for a failed test's reader. */
  state(): string;
  /** Stops everything and removes the folder. Idempotent. */
  stop(): Promise<void>;
}

/** Whether pg_auto_failover is installed with PostgreSQL's server binaries. */
export function haveAutoFailover(): boolean {
  return binDir() !== undefined && existsSync('/usr/bin/pg_autoctl');
}

const asRoot = process.getuid?.() === 0;

/** Starts a monitor, a primary and a synchronous secondary; resolves once the secondary is `secondary`. */
export async function startFormation(): Promise<Formation> {
  const bin = binDir();
  if (bin === undefined || !existsSync('/usr/bin/pg_autoctl'))
    throw new Error("No pg_autoctl (scripts/install-ha.sh installs Debian's postgresql-NN-auto-failover)");
  const dir = mkdtempSync(join(tmpdir(), 'viewsync-formation-'));
  if (asRoot) chownSync(dir, ...postgresUser());
  const env = {
    PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin`,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'share'),
    XDG_RUNTIME_DIR: join(dir, 'run'),
    PG_AUTOCTL_DEBUG: '',
  };
  const [monitorPort, portA, portB] = [await freePort(), await freePort(), await freePort()];
  const ports: Record<NodeName, number> = { a: portA, b: portB };
  const monitorURL = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
  const running = new Map<string, ChildProcess>();
  let stopped = false;

  const autoctl = (args: string[]) =>
    new Promise<string>((resolve, reject) => {
      const [file, argv] = asRoot
        ? ['runuser', ['-u', 'postgres', '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), 'pg_autoctl', ...args]]
        : ['pg_autoctl', args];
      execFile(file, argv as string[], { cwd: '/', env: asRoot ? process.env : { ...process.env, ...env }, timeout: 120_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`pg_autoctl ${args.join(' ')} failed: ${error.message}\n${stdout}${stderr}`)) : resolve(stdout),
      );
    });
  /** Runs `pg_autoctl run` on `pgdata`, its own process group, its output to `<pgdata>.log`. */
  const run = (name: string) => {
    const pgdata = join(dir, name);
    const command = `exec pg_autoctl run --pgdata '${pgdata}' >> '${pgdata}.log' 2>&1`;
    const child = asRoot
      ? spawn('runuser', ['-u', 'postgres', '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), 'sh', '-c', command], {
          cwd: '/',
          detached: true,
          stdio: 'ignore',
        })
      : spawn('sh', ['-c', command], { cwd: '/', detached: true, stdio: 'ignore', env: { ...process.env, ...env } });
    child.unref();
    running.set(name, child);
    // For the watchdog: each node's process group, led by the process started here.
    appendFileSync(join(dir, 'groups'), `${child.pid}\n`);
  };
  /**
   * Sends `sig` to every process of a node: its keeper and PostgreSQL, whose backends are not in
   * its process group (each calls setsid), so the whole tree under the process we started.
   */
  const signal = (name: string, sig: NodeJS.Signals, only?: (command: string) => boolean) => {
    const root = running.get(name)?.pid;
    if (root === undefined) return;
    for (const pid of tree(root, only)) {
      try {
        process.kill(pid, sig);
      } catch {
        // Gone already.
      }
    }
  };
  const killAll = () => {
    for (const name of running.keys()) {
      signal(name, 'SIGCONT');
      signal(name, 'SIGKILL');
    }
  };
  const onExit = () => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  watch(dir);

  const monitorSQL = () =>
    postgres(`postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover`, { max: 1, fetch_types: false, onnotice: () => {}, connect_timeout: 5 });
  /** Each node's reported and assigned state, by name. */
  const states = async (): Promise<Map<string, { reported: string; assigned: string }>> => {
    const sql = monitorSQL();
    try {
      const rows = await sql<
        Array<{ nodename: string; reportedstate: string; goalstate: string }>
      >`SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node`;
      return new Map(rows.map((row) => [row.nodename, { reported: row.reportedstate, assigned: row.goalstate }]));
    } finally {
      await sql.end({ timeout: 1 });
    }
  };
  const until = async <T>(what: string, test: () => Promise<T | undefined>, timeoutMs: number): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await test().catch(() => undefined);
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`${what} within ${timeoutMs / 1000} s; the formation:\n${formation.state()}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  const query = async (name: NodeName, statement: string) => {
    const sql = postgres(`postgres://postgres@127.0.0.1:${ports[name]}/postgres`, { max: 1, fetch_types: false, onnotice: () => {}, connect_timeout: 2 });
    try {
      return [...(await sql.unsafe(statement))] as Array<Record<string, unknown>>;
    } finally {
      await sql.end({ timeout: 0 });
    }
  };
  const createNode = async (name: NodeName) => {
    await autoctl([
      'create',
      'postgres',
      '--pgdata',
      join(dir, name),
      '--pgport',
      String(ports[name]),
      '--pgctl',
      join(bin, 'pg_ctl'),
      '--hostname',
      '127.0.0.1',
      '--name',
      name,
      '--auth',
      'trust',
      '--no-ssl',
      '--monitor',
      monitorURL,
    ]);
    for (const [key, value] of Object.entries(KEEPER_TUNING)) await autoctl(['config', 'set', '--pgdata', join(dir, name), key, value]);
    run(name);
  };

  const formation: Formation = {
    ports,
    url: `postgres://postgres@127.0.0.1:${portA},127.0.0.1:${portB}/postgres?target_session_attrs=primary`,
    nodeURL: (name) => `postgres://postgres@127.0.0.1:${ports[name]}/postgres`,
    primary: (timeoutMs = 60_000) =>
      until(
        'No node was primary',
        async () => {
          for (const [name, state] of await states()) if (state.reported === 'primary' && state.assigned === 'primary') return name as NodeName;
          return undefined;
        },
        timeoutMs,
      ),
    waitForPrimary: (accept, timeoutMs = 60_000) =>
      until(
        'No new primary took writes',
        async () => {
          for (const name of ['a', 'b'] as const) {
            if (!accept(name)) continue;
            const [row] = await query(name, "SELECT NOT pg_is_in_recovery() AND current_setting('default_transaction_read_only') = 'off' AS writable");
            if (row?.writable === true) return name;
          }
          return undefined;
        },
        timeoutMs,
      ),
    waitForHealthy: (timeoutMs = 90_000) =>
      until(
        'The formation was not back to a primary and a secondary',
        async () => {
          const all = [...(await states()).values()];
          const settled = all.length === 2 && all.every((state) => state.reported === state.assigned);
          return settled && all.some((state) => state.reported === 'primary') && all.some((state) => state.reported === 'secondary') ? true : undefined;
        },
        timeoutMs,
      ).then(() => undefined),
    waitForState: (name, state, timeoutMs = 60_000) =>
      until(
        `Node ${name} was not ${state}`,
        async () => {
          const now = (await states()).get(name);
          return now?.reported === state && now.assigned === state ? true : undefined;
        },
        timeoutMs,
      ).then(() => undefined),
    kill: (name) => signal(name, 'SIGKILL'),
    pause: (name) => signal(name, 'SIGSTOP'),
    pauseHalf: (name) => signal(name, 'SIGSTOP', (command) => !command.startsWith('postgres: ')),
    resume: (name) => signal(name, 'SIGCONT'),
    start: (name) => run(name),
    query,
    state() {
      try {
        const args = ['show', 'state', '--pgdata', join(dir, 'monitor')];
        return execFileSync(
          asRoot ? 'runuser' : 'pg_autoctl',
          asRoot ? ['-u', 'postgres', '--', 'env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), 'pg_autoctl', ...args] : args,
          { encoding: 'utf8', cwd: '/', timeout: 10_000 },
        );
      } catch (error) {
        return `(pg_autoctl show state failed: ${(error as Error).message})`;
      }
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      process.removeListener('exit', onExit);
      onExit();
    },
  };

  try {
    await autoctl([
      'create',
      'monitor',
      '--pgdata',
      join(dir, 'monitor'),
      '--pgport',
      String(monitorPort),
      '--pgctl',
      join(bin, 'pg_ctl'),
      '--hostname',
      '127.0.0.1',
      '--auth',
      'trust',
      '--no-ssl',
    ]);
    run('monitor');
    await until('The monitor did not answer', async () => ((await states()) ? true : undefined), 60_000);
    const sql = monitorSQL();
    try {
      for (const [key, value] of Object.entries(MONITOR_TUNING)) await sql.unsafe(`ALTER SYSTEM SET ${key} = ${value}`);
      await sql`SELECT pg_reload_conf()`;
    } finally {
      await sql.end({ timeout: 1 });
    }
    await createNode('a');
    await until('Node a did not become the primary', async () => ((await states()).get('a')?.reported === 'single' ? true : undefined), 60_000);
    await createNode('b');
    await formation.waitForHealthy();
    return formation;
  } catch (error) {
    await formation.stop();
    throw error;
  }
}

/**
 * A detached shell that waits for this process to end (killed, say, which runs no exit handler),
 * or for `dir` to go, then kills every node's process group and removes `dir`. A killed
 * postmaster's backends, in sessions of their own, end when they see it gone.
 */
function watch(dir: string): void {
  const script =
    'while kill -0 "$OWNER" 2>/dev/null && [ -d "$DIR" ]; do sleep 1; done; for group in $(cat "$DIR/groups" 2>/dev/null); do kill -9 -- "-$group" 2>/dev/null; done; rm -rf "$DIR"';
  spawn('sh', ['-c', script], { cwd: '/', detached: true, stdio: 'ignore', env: { PATH: process.env.PATH, OWNER: String(process.pid), DIR: dir } }).unref();
}

/** `root` and every process under it, with `only` those whose command line passes. */
function tree(root: number, only: (command: string) => boolean = () => true): number[] {
  const rows = execFileSync('ps', ['-e', '-o', 'pid=,ppid=,args='], { encoding: 'utf8' })
    .split('\n')
    .flatMap((line) => {
      const match = /^\s*(\d+)\s+(\d+)\s(.*)$/.exec(line);
      return match ? [{ pid: Number(match[1]), ppid: Number(match[2]), command: match[3]!.trim() }] : [];
    });
  const found = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const row of rows) if (found.has(row.ppid) && !found.has(row.pid)) found.add(row.pid), (grew = true);
  }
  return rows.filter((row) => found.has(row.pid) && only(row.command)).map((row) => row.pid);
}

/** The `postgres` user's uid and gid. */
function postgresUser(): [number, number] {
  return [Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))];
}

/** The newest PostgreSQL's server binaries with pg_auto_failover's extension beside them. */
function binDir(): string | undefined {
  try {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    const version = versions.find((v) => existsSync(`/usr/share/postgresql/${v}/extension/pgautofailover.control`));
    return version === undefined ? undefined : `/usr/lib/postgresql/${version}/bin`;
  } catch {
    return undefined;
  }
}
