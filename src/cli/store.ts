import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { quoteIdentifier } from '../storage/sql.js';
import type { Storage } from '../storage/types.js';
import { duration, formatDuration } from './duration.js';
import { UsageError } from './usage.js';
import { within } from '../base/within.js';

/** Where the CLI's store is: the options every command takes. */
export interface StoreOptions {
  /** `NAME=URL` (a postgres:// URL, or a SQLite file), once per store of a routed storage. */
  store?: string[] | undefined;
  /** With `store`: the store that keeps the directory of spaces. */
  directory?: string | undefined;
  sqlite?: string | undefined;
  postgres?: string | undefined;
  schema?: string | undefined;
  'table-prefix'?: string | undefined;
  'connect-timeout'?: string | undefined;
}

/** An open store, and how to let go of it so the process can exit. */
export interface OpenStore {
  storage: Storage;
  /** What the store is, for messages: a file or a database, never a password. */
  label: string;
  close(): Promise<void>;
}

/** A failure a user can act on: printed as is, exit code 1. */
export class CLIError extends Error {
  override name = 'CLIError';
}

/**
 * Opens the store the options name: `--sqlite FILE` (which must exist unless `create`), or
 * `--postgres URL`, or else the `DATABASE_URL` environment variable. Reaches the database and
 * creates or checks its tables before returning, so a wrong path, a bad name or an unreachable
 * server fails here, plainly, and PostgreSQL within `--connect-timeout`.
 */
export async function openStore(options: StoreOptions, { create = false, readOnly = false } = {}): Promise<OpenStore> {
  if (options.store !== undefined && options.store.length > 0) return openRouted(options, options.store, { create, readOnly });
  if (options.directory !== undefined) throw new UsageError('--directory names one of the --store NAME=URL stores: give them');
  const tablePrefix = options['table-prefix'];
  if (options.sqlite !== undefined && options.postgres !== undefined) throw new UsageError('Give one store: --sqlite FILE or --postgres URL, not both');
  checkNames(options);
  if (options.sqlite !== undefined) {
    if (options.schema !== undefined) throw new UsageError('--schema is for PostgreSQL: a SQLite file has no schemas (--table-prefix names its tables)');
    if (options['connect-timeout'] !== undefined) throw new UsageError('--connect-timeout is for PostgreSQL: a SQLite file is opened, not connected to');
    return openSQLite(options.sqlite, create, readOnly, tablePrefix);
  }
  const url = options.postgres ?? process.env.DATABASE_URL;
  if (url === undefined || url === '') throw new UsageError('No store: give --sqlite FILE or --postgres URL, or set DATABASE_URL');
  checkPostgresURL(url, options.postgres !== undefined ? '--postgres' : 'DATABASE_URL');
  return openPostgres(url, options.schema, tablePrefix, duration(options['connect-timeout'], '--connect-timeout', CONNECT_TIMEOUT_MS));
}

/**
 * Opens each `NAME=URL` store (a postgres:// URL, or a SQLite file), each with the other options
 * (schema, table prefix, timeout), as the stores of one routed storage, placed by hash or by the
 * `--directory` store, as the servers are: the CLI must find each space where they do.
 */
async function openRouted(options: StoreOptions, specs: readonly string[], how: { create: boolean; readOnly: boolean }): Promise<OpenStore> {
  if (options.sqlite !== undefined || options.postgres !== undefined)
    throw new UsageError('Give the stores as --store NAME=URL, or one store as --sqlite or --postgres, not both');
  const opened: Array<[string, OpenStore]> = [];
  try {
    for (const spec of specs) {
      const equals = spec.indexOf('=');
      const [name, where] = [spec.slice(0, equals), spec.slice(equals + 1)];
      if (equals <= 0 || where === '')
        throw new UsageError(`--store ${JSON.stringify(spec)} is not NAME=URL: --store a=postgres://host/db, or --store b=./file.db`);
      if (opened.some(([known]) => known === name)) throw new UsageError(`--store names ${JSON.stringify(name)} twice`);
      // Any other URL would be taken for a file name, and refused as a SQLite file that is not there.
      const scheme = schemeOf(where);
      if (scheme !== undefined && !POSTGRES_SCHEME.test(scheme))
        throw new UsageError(`--store ${name}=… is a ${scheme}: URL: a store is a postgres:// URL or a SQLite file`);
      const one = /^postgres(ql)?:\/\//.test(where) ? { ...options, store: undefined, postgres: where } : { ...options, store: undefined, sqlite: where };
      opened.push([name, await openStore({ ...one, directory: undefined }, how)]);
    }
    const { routedStorage } = await import('../route/routed-storage.js');
    if (options.directory !== undefined && !opened.some(([name]) => name === options.directory))
      throw new UsageError(`--directory ${JSON.stringify(options.directory)} is not one of the --store names (${opened.map(([name]) => name).join(', ')})`);
    const stores = Object.fromEntries(opened.map(([name, store]) => [name, store.storage]));
    await checkDirectoryOption(stores, options.directory);
    const storage = routedStorage({ stores, directory: options.directory });
    return {
      storage,
      label: opened.map(([name, store]) => `${name}=${store.label}`).join(', '),
      close: async () => void (await Promise.all(opened.map(([, store]) => store.close()))),
    };
  } catch (error) {
    await Promise.all(opened.map(([, store]) => store.close().catch(() => {})));
    throw error;
  }
}

/**
 * Checks `--directory` against what the stores hold: a store holding directory rows (`d/…`)
 * keeps the servers' directory, and the CLI must find spaces by it as they do.
 *
 * It refuses, rather than take that store as the directory unasked: the command line is meant to
 * say the deployment as the servers' options do, and when it does not, something else may be
 * wrong with it too (a store left out of --store, an old database listed by mistake), which a
 * guess would act on. A silent guess would also make the same command line mean one thing before
 * a store held its first directory row and another after. The refusal costs one flag, which it
 * names.
 */
async function checkDirectoryOption(stores: Readonly<Record<string, Storage>>, directory: string | undefined): Promise<void> {
  const { directoryStores } = await import('../route/directory.js');
  const keeping = await directoryStores(stores);
  const others = keeping.filter((name) => name !== directory);
  if (others.length === 0) return;
  if (keeping.length > 1) {
    throw new CLIError(
      `stores ${keeping.map((name) => JSON.stringify(name)).join(' and ')} each keep directory rows (rows d/…), and servers keep one directory: find out which is theirs (their directory option), remove the other's d/ rows, and pass --directory NAME naming theirs`,
    );
  }
  const [other] = others as [string];
  if (directory === undefined) {
    throw new CLIError(
      `store ${JSON.stringify(other)} keeps a directory of spaces (rows d/…), so the servers find spaces by it: pass --directory ${other}, as they do. Without it the CLI would look for each space where the hash puts it, and a move would leave the directory naming the store the space left`,
    );
  }
  throw new CLIError(
    `--directory ${JSON.stringify(directory)} names a store that is not the servers' directory: store ${JSON.stringify(other)} keeps the directory rows (rows d/…). Pass --directory ${other}, as the servers do`,
  );
}

/**
 * Refuses a URL that is not PostgreSQL's before connecting: postgres.js would take an http:// URL
 * for a host and port, and wait out --connect-timeout against a server that never answers as
 * PostgreSQL. Only the scheme is quoted: the rest may hold a password.
 */
function checkPostgresURL(url: string, source: string): void {
  const scheme = schemeOf(url);
  if (scheme !== undefined && POSTGRES_SCHEME.test(scheme)) return;
  const got = scheme === undefined ? 'no scheme' : `a ${scheme}: URL`;
  throw new UsageError(`${source} takes a PostgreSQL URL, postgres://user:password@host:port/database (or postgresql://), got ${got}`);
}

const POSTGRES_SCHEME = /^postgres(?:ql)?$/;

/** The scheme `text` starts with (`http` of `http://…`), if it is a URL's; at most 20 characters are looked at. */
function schemeOf(text: string): string | undefined {
  return /^([A-Za-z][A-Za-z0-9+.-]{0,19}):\/\//.exec(text)?.[1];
}

/** How long PostgreSQL has to answer and its tables to be ready, unless `--connect-timeout` says otherwise. */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * A bad `--schema` or `--table-prefix` is a usage error, said before anything is opened (a file
 * created, a server reached), by the stores' own rule for names (src/storage/sql.ts).
 */
function checkNames(options: StoreOptions): void {
  const named = (name: string) => {
    try {
      quoteIdentifier(name);
      return true;
    } catch {
      return false;
    }
  };
  const { schema, 'table-prefix': prefix } = options;
  if (schema !== undefined && !named(schema)) {
    throw new UsageError(`--schema ${JSON.stringify(schema)} is not a name viewsync takes: 1 to 63 letters, digits and _, not starting with a digit`);
  }
  // The stores' tables are PREFIX + "kv" and PREFIX + "schema", the longer.
  if (prefix !== undefined && !named(`${prefix}schema`)) {
    throw new UsageError(`--table-prefix ${JSON.stringify(prefix)} cannot begin a table name: up to 57 letters, digits and _, not starting with a digit`);
  }
}

async function openSQLite(file: string, create: boolean, readOnly: boolean, tablePrefix: string | undefined): Promise<OpenStore> {
  if (!create && !existsSync(file)) throw new CLIError(`No such SQLite file: ${file}`);
  const { sqliteStorage } = await import('../storage/sqlite.js');
  const db = await openDatabase(file);
  try {
    // Reading needs no claim: inspect and export work beside a running server.
    return { storage: sqliteStorage(db, { tablePrefix, claim: !readOnly }), label: file, close: async () => void db.close() };
  } catch (error) {
    db.close();
    if (/is in use by another viewsync store/.test((error as Error).message))
      throw new CLIError(`${(error as Error).message} (inspect and export can read it meanwhile)`);
    throw new CLIError(`${file} is not a viewsync SQLite database: ${(error as Error).message}`);
  }
}

/** A synchronous SQLite handle from whichever driver this runtime has. */
// biome-ignore lint/suspicious/noExplicitAny: three drivers loaded at run time, with no types to import; their statements are used alike.
async function openDatabase(file: string): Promise<{ prepare(sql: string): any; exec(sql: string): unknown; close(): unknown }> {
  if ('Bun' in globalThis) {
    const { Database } = await import(/* @vite-ignore */ 'bun:sqlite' as string);
    return new Database(file);
  }
  if ('Deno' in globalThis) {
    const { DatabaseSync } = await import(/* @vite-ignore */ 'node:sqlite' as string);
    return new DatabaseSync(file);
  }
  try {
    // Node's require, not import: Vite (which runs the tests) turns a missing optional peer into
    // a module that throws an error of its own, with no code.
    const Database = createRequire(import.meta.url)('better-sqlite3');
    return new Database(file);
  } catch (error) {
    // Not installed, or built for another Node (a native addon loads only in the Node it was
    // built for: ERR_DLOPEN_FAILED): node:sqlite, where this Node has it, does as well.
    const code = (error as { code?: string }).code;
    if (code !== 'MODULE_NOT_FOUND' && code !== 'ERR_DLOPEN_FAILED') throw new CLIError(`Cannot open ${file}: ${(error as Error).message}`);
  }
  try {
    quietSQLiteWarning();
    const { DatabaseSync } = await import(/* @vite-ignore */ 'node:sqlite' as string);
    return new DatabaseSync(file);
  } catch {
    throw new CLIError('No SQLite driver: install better-sqlite3 (npm i better-sqlite3), or run on Node 22 or later (node:sqlite) or Bun');
  }
}

// Once per process: a CLI run may open several SQLite files (a routed store's).
let sqliteWarningQuiet = false;
/**
 * Node 22 warns once that node:sqlite is experimental (24 does not): a line on stderr an operator
 * would take for a failure, and scripts that read stderr for one. Other warnings print as before.
 */
function quietSQLiteWarning(): void {
  if (sqliteWarningQuiet) return;
  sqliteWarningQuiet = true;
  const printers = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'ExperimentalWarning' && /SQLite/.test(warning.message)) return;
    for (const print of printers) print.call(process, warning);
  });
}

async function openPostgres(url: string, schema: string | undefined, tablePrefix: string | undefined, timeoutMs: number): Promise<OpenStore> {
  const label = describeURL(url);
  // biome-ignore lint/suspicious/noExplicitAny: postgres.js is an optional peer, loaded at run time; postgresStorage checks what it is handed.
  let postgres: (url: string, options: object) => any;
  try {
    ({ default: postgres } = await import(/* @vite-ignore */ 'postgres' as string));
  } catch {
    throw new CLIError('The PostgreSQL client is not installed: npm i postgres');
  }
  const sql = postgres(url, { max: 4, onnotice: () => {}, connect_timeout: Math.ceil(timeoutMs / 1000), fetch_types: false });
  const { postgresStorage } = await import('../storage/postgres.js');
  const storage = postgresStorage(sql, { schema, tablePrefix });
  // One deadline for reaching the server and readying the tables. postgres.js's own
  // connect_timeout is not enough: a server that hangs up during the handshake (an HTTP server,
  // a proxy with nothing behind it) makes it reconnect for ever, and the tables wait on a lock.
  let stage = 'connect';
  try {
    await deadline(
      timeoutMs,
      (async () => {
        await sql`SELECT 1`;
        stage = 'migrate';
        await storage.migrate();
      })(),
    );
  } catch (error) {
    // No timeout: the connections go now, retries and all, so the process can exit.
    await sql.end({ timeout: 0 }).catch(() => {});
    if (error !== TIMED_OUT)
      throw new CLIError(`${stage === 'connect' ? 'Cannot reach' : 'Cannot set up the tables in'} PostgreSQL at ${label}: ${(error as Error).message}`);
    throw new CLIError(
      stage === 'connect'
        ? `Cannot reach PostgreSQL at ${label}: nothing answered as PostgreSQL within ${formatDuration(timeoutMs)} (--connect-timeout): check the host and port, and that PostgreSQL listens there`
        : `PostgreSQL at ${label} answered, but its tables were not ready within ${formatDuration(timeoutMs)} (--connect-timeout): is another process holding viewsync's migration lock?`,
    );
  }
  return { storage, label, close: () => sql.end({ timeout: 5 }) };
}

const TIMED_OUT = Symbol('timed out');

/** `work`, or a rejection with {@link TIMED_OUT} once `ms` have passed. */
function deadline<T>(ms: number, work: Promise<T>): Promise<T> {
  return within(work, ms, () => TIMED_OUT);
}

/** A database URL with its password left out. */
function describeURL(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`;
  } catch {
    // Several hosts (a primary and its standbys, for postgres.js to find the primary) are no WHATWG URL.
    const hosts = /^postgres(?:ql)?:\/\/(?:[^@/]*@)?([^/?#@]+,[^/?#@]+)(\/[^?#]*)?/.exec(url);
    if (hosts) return `${hosts[1]}${hosts[2] ?? ''}`;
    throw new UsageError('--postgres (or DATABASE_URL) is not a URL: postgres://user:password@host:port/database');
  }
}
