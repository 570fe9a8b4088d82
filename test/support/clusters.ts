/**
 * Separate PostgreSQL servers (one `pg_ctl` cluster each), for the tests of spaces spread over
 * several databases: each started by scripts/start-postgres.sh on its own port and folder, and
 * stopped (as a crash: `-m immediate`) and started again by a test.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../package/packed.js';

export interface Cluster {
  readonly url: string;
  /** Stops the server at once, as a crash or a kill would: connections drop mid-statement. */
  stop(): void;
  /** Starts it again, on the same data; resolves once it takes connections. */
  start(): void;
}

/** Whether PostgreSQL's server binaries are here (CI installs them; scripts/start-postgres.sh can too). */
export function haveServers(): boolean {
  return binDir() !== undefined;
}

/** Starts (or finds running) the cluster on `port`, its data under /tmp/viewsync-route-`name`. */
export function startCluster(name: string, port: number): Cluster {
  const base = `/tmp/viewsync-route-${name}`;
  const env = { ...process.env, PGPORT_TEST: String(port), PGBASE_TEST: base };
  const url = execFileSync(join(ROOT, 'scripts/start-postgres.sh'), { env, encoding: 'utf8' }).trim();
  const ctl = (...args: string[]) => {
    const command = [join(binDir()!, 'pg_ctl'), '-D', `${base}/data`, ...args];
    execFileSync(process.getuid?.() === 0 ? 'runuser' : command[0]!, process.getuid?.() === 0 ? ['-u', 'postgres', '--', ...command] : command.slice(1), { stdio: 'ignore' });
  };
  return {
    url,
    stop: () => ctl('stop', '-m', 'immediate', '-w'),
    start: () => ctl('start', '-w', '-l', `${base}/log`, '-o', `-c listen_addresses=127.0.0.1 -p ${port} -k ${base} -c fsync=off -c max_connections=200`),
  };
}

function binDir(): string | undefined {
  try {
    const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a));
    return versions.map((version) => `/usr/lib/postgresql/${version}/bin`).find((dir) => readdirSync(dir).includes('pg_ctl'));
  } catch {
    return undefined;
  }
}
