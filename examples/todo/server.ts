// TodoMVC on viewsync: `npm start` keeps the todos in SQLite (data/todo.db, through Node's own
// node:sqlite: no native build), `npm start -- --memory` in memory. PORT, HOST and DATA_DIR (the
// folder for todo.db) are optional.
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { memoryStorage, type SyncContext, createContext } from 'viewsync';
import { createListener, nodeServerOptions, stopServer } from 'viewsync/node';
import { sqliteStorage } from 'viewsync/sqlite';
import { mutators } from './server-mutators.js';

const port = Number(process.env.PORT ?? 8787);
const hostname = process.env.HOST ?? '127.0.0.1';
const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

let db: SQLiteFile | undefined;
let store = 'memory store: the todos go when the server stops';
if (!process.argv.includes('--memory')) {
  const folder = process.env.DATA_DIR ?? 'data';
  mkdirSync(folder, { recursive: true });
  const file = join(folder, 'todo.db');
  db = await openSQLite(file);
  const shown = relative(process.cwd(), file);
  store = `SQLite store: ${shown.startsWith('..') ? file : shown}`;
}
let storage: SyncContext['storage'];
try {
  storage = db ? sqliteStorage(db) : memoryStorage();
} catch (error) {
  // Another server has the file (sqliteStorage claims it): say so in one line.
  console.error((error as Error).message);
  process.exit(1);
}
// The inspector at /api/_inspect/: its secret from INSPECTOR_SECRET, or one made for this run and printed.
const inspectorSecret = process.env.INSPECTOR_SECRET ?? randomBytes(24).toString('base64url');
const ctx: SyncContext = createContext({ storage, mutators, inspector: { secret: inspectorSecret } });
const api = createListener(ctx);

// Bundled once, in memory: the page is a demo, not something to deploy.
// esbuild finds the nearest tsconfig.json itself: in this repository, the one that maps `viewsync`
// to its source; in a copy of this folder, none, and `viewsync` is the installed package.
const bundle = await build({ entryPoints: [here('client.ts')], bundle: true, write: false, format: 'esm', platform: 'browser', logLevel: 'warning' });
const assets = new Map<string, [type: string, body: Uint8Array]>([
  ['/', ['text/html; charset=utf-8', readFileSync(here('index.html'))]],
  ['/client.js', ['text/javascript; charset=utf-8', bundle.outputFiles[0]!.contents]],
  ['/todomvc.css', ['text/css; charset=utf-8', readFileSync(createRequire(import.meta.url).resolve('todomvc-app-css/index.css'))]],
]);

const { timeout, ...serverOptions } = nodeServerOptions({});
const server = createServer(serverOptions, (req, res) => {
  const path = (req.url ?? '/').split('?')[0]!;
  if (path.startsWith('/api/')) return api(req, res);
  if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { allow: 'GET, HEAD' }).end();
  const asset = assets.get(path);
  if (asset === undefined) return void res.writeHead(404, { 'content-type': 'text/plain' }).end(`Nothing at ${path}; the app is at /`);
  res.writeHead(200, { 'content-type': asset[0], 'content-length': asset[1].byteLength, 'cache-control': 'no-cache' });
  res.end(req.method === 'HEAD' ? undefined : asset[1]);
});
server.setTimeout(timeout, (socket) => socket.destroy());

server.once('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EADDRINUSE' && error.code !== 'EACCES') throw error;
  const why = error.code === 'EADDRINUSE' ? 'is in use' : 'needs privileges';
  console.error(`Port ${port} ${why}: pick another with PORT, e.g. \`PORT=${port + 1} npm start\`.`);
  process.exit(1);
});
server.listen(port, hostname, () => {
  const { port, address } = server.address() as AddressInfo;
  const origin = `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
  console.log(`TodoMVC on viewsync: ${origin}/ (${store})`);
  const login = process.env.INSPECTOR_SECRET === undefined ? `the secret ${inspectorSecret}, made for this run` : 'the secret in INSPECTOR_SECRET';
  console.log(`The inspector: ${origin}/api/_inspect/ (log in with ${login})`);
});

// A deploy or Ctrl-C: poke streams end with a reconnect hint, requests in flight are answered
// (10 s at most), then the database is closed. Repeats are ignored: Ctrl-C signals every process
// of `npm start` (npm, tsx, this one), and tsx passes its own on.
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  console.log('Stopping: answering the requests in flight…');
  void stopServer(server, ctx).then(() => (db?.close(), process.exit(0)));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);

/** A synchronous SQLite handle: node:sqlite's `DatabaseSync` or better-sqlite3's `Database`. */
type SQLiteFile = Parameters<typeof sqliteStorage>[0] & { close(): unknown };

/**
 * Opens the todos' file with node:sqlite, which every supported Node (22.15 and later) has built
 * in, so that `npm start` needs no native build. better-sqlite3 only where someone chose it: on
 * an older Node, if it is installed.
 */
async function openSQLite(file: string): Promise<SQLiteFile> {
  quietSQLiteWarning();
  try {
    // Typed as a string: the repository's @types/node (20) has no node:sqlite.
    const { DatabaseSync } = (await import('node:sqlite' as string)) as { DatabaseSync: new (path: string) => SQLiteFile };
    return new DatabaseSync(file);
  } catch (error) {
    if (!/node:sqlite/.test(String(error))) throw error;
  }
  try {
    const { default: Database } = (await import('better-sqlite3' as string)) as { default: new (path: string) => SQLiteFile };
    return new Database(file);
  } catch {
    console.error(
      `Node ${process.versions.node} has no node:sqlite: run the demo on Node 22.15 or later, or \`npm start -- --memory\` to keep the todos in memory.`,
    );
    process.exit(1);
  }
}

/**
 * Node 22 warns once that node:sqlite is experimental (24 does not): a line a newcomer would take
 * for an error. Every other warning is printed as Node prints it.
 */
function quietSQLiteWarning(): void {
  const printers = process.listeners('warning');
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'ExperimentalWarning' && /SQLite/.test(warning.message)) return;
    for (const print of printers) print.call(process, warning);
  });
}
