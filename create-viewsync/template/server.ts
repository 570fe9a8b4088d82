// The app's server: viewsync's pull, push and poke endpoints under /api/, the data in SQLite
// (data/app.db, through node:sqlite), and the page with its script, which esbuild bundles from
// client.ts at each load.
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { context } from 'esbuild';
import { createContext } from 'viewsync';
import { createListener, stopServer } from 'viewsync/node';
import { sqliteStorage } from 'viewsync/sqlite';
import { mutators } from './mutators.js';

const port = Number(process.env.PORT ?? 3000);
const here = import.meta.dirname;

mkdirSync(join(here, 'data'), { recursive: true });
// node:sqlite is built into Node (22.15 and later): nothing native to build at install.
const db = new DatabaseSync(join(here, 'data', 'app.db'));
// The mutators check their arguments (mutators.ts); every visitor is anonymous and may call any
// of them: before going live, say who may (viewsync's authenticate option, and tx.userID).
const ctx = createContext({ storage: sqliteStorage(db), mutators });
const api = createListener(ctx);
const bundler = await context({ entryPoints: [join(here, 'client.ts')], bundle: true, write: false, format: 'esm', logLevel: 'warning' });

const server = createServer((req, res) => {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (path.startsWith('/api/')) return api(req, res);
  if (path === '/') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(readFileSync(join(here, 'index.html')));
  if (path !== '/client.js') return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Not found');
  bundler.rebuild().then(
    (result) => res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(result.outputFiles![0]!.contents),
    // esbuild has printed what is wrong in client.ts; the page's console says where to look.
    () => res.writeHead(500, { 'content-type': 'text/javascript; charset=utf-8' }).end('console.error("client.ts did not build: see the server\'s output")'),
  );
});

server.once('error', (error: NodeJS.ErrnoException) => {
  if (error.code !== 'EADDRINUSE') throw error;
  console.error(`Port ${port} is in use: run on another, e.g. PORT=${port + 1} npm run dev`);
  process.exit(1);
});
server.listen(port, '127.0.0.1', () => console.log(`viewsync app on http://localhost:${port}/ (data in data/app.db)`));

// Ctrl-C, or `tsx watch` restarting after an edit: poke streams end with a hint to reconnect,
// requests in flight are answered, then the database is closed. Ctrl-C reaches npm and tsx too,
// which pass it on: the repeats are ignored.
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void stopServer(server, ctx)
      .then(() => (db.close(), bundler.dispose()))
      .then(() => process.exit(0));
  });
}
