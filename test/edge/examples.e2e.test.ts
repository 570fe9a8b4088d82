/**
 * The edge examples users copy (examples/edge/), each run where it can run here, against the real
 * PostgreSQL server, with the real `replicache` client syncing through it:
 * - the Vercel Edge Function and the Next.js route handler (`runtime: 'edge'`), bundled for the
 *   edge and run in Vercel's Edge Runtime, on Neon's serverless driver through a local relay;
 * - the Netlify Edge Function, in Deno, on Neon's driver through the same relay;
 * - the Supabase Edge Function, in Deno, on postgres.js over TCP with `prepare: false`.
 * Each gets a database of its own: the examples use the default schema, as a user's would. The
 * three on Neon's driver connect a client per transaction (Neon's WebSockets must not outlive a
 * request): the connections to their database are counted on the server, during and after.
 */
import { join } from 'node:path';
import { EdgeRuntime } from 'edge-runtime';
import { build } from 'esbuild';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Clients, pendingCount, serverData, snapshot, uniqueName, waitFor } from '../interop/client.js';
import { ROOT } from '../package/packed.js';
import { freePort, runCommand, type Started, startCommand } from '../support/command.js';
import { startRelay } from '../support/ws-relay.js';
import { builtPackage } from './built-package.js';
import { serveEdgeRuntime } from './edge-server.js';

const url = process.env.DATABASE_URL;

/** Two groups converge, and concurrent increments from three end exact on the server. */
async function syncThrough(base: URL): Promise<void> {
  const clients = new Clients(() => base);
  try {
    const [a, b] = [clients.open({ name: uniqueName('edge-a'), pullInterval: 100 }), clients.open({ name: uniqueName('edge-b'), pullInterval: 100 })];
    await a.mutate.put({ key: 'greeting', value: 'hello from a' });
    await waitFor(async () => (await snapshot(b)).greeting === 'hello from a', { timeout: 15_000, message: 'b to see a’s write' });
    const tabs = [a, b, clients.open({ name: uniqueName('edge-c'), pullInterval: 100 })];
    await Promise.all(
      tabs.map(async (tab) => {
        for (let i = 0; i < 5; i++) await tab.mutate.increment({ key: 'count', delta: 1 });
      }),
    );
    await waitFor(async () => (await Promise.all(tabs.map(pendingCount))).every((n) => n === 0), { timeout: 30_000, message: 'every push to be confirmed' });
    expect(await serverData(base)).toMatchObject({ count: 15, greeting: 'hello from a' });
  } finally {
    await clients.closeAll();
  }
}

/** Reads `body` until `pattern` shows, or throws once it ends without it. */
async function readUntil(body: ReadableStreamDefaultReader<Uint8Array>, pattern: RegExp): Promise<void> {
  const decoder = new TextDecoder();
  let text = '';
  while (!pattern.test(text)) {
    const { done, value } = await body.read();
    if (done) throw new Error(`the stream ended without ${String(pattern)}: ${text}`);
    text += decoder.decode(value, { stream: true });
  }
}

describe.skipIf(url === undefined)('the edge examples, on the real PostgreSQL server', () => {
  const admin = url === undefined ? undefined : postgres(url, { onnotice: () => {}, max: 1 });
  const databases: string[] = [];
  let relay: Awaited<ReturnType<typeof startRelay>>;
  const running: Started[] = [];

  /** A new database's URL. */
  async function freshDatabase(): Promise<string> {
    const name = `edge_example_${process.pid}_${databases.length}`;
    databases.push(name);
    await admin!.unsafe(`DROP DATABASE IF EXISTS ${name}`);
    await admin!.unsafe(`CREATE DATABASE ${name}`);
    const database = new URL(url!);
    database.pathname = `/${name}`;
    return database.href;
  }

  /** Connections to `database` (a URL) open on the server now. */
  async function connections(database: string): Promise<number> {
    const [row] = await admin!`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ${new URL(database).pathname.slice(1)}`;
    return row!.n as number;
  }

  /**
   * {@link syncThrough}, counting the connections to `database` meanwhile (the most seen at once is
   * logged), and that none is left once the requests are answered. A Pool made once for all
   * requests fails this: it keeps its idle connections for 10 s (idleTimeoutMillis).
   */
  async function syncCountingConnections(base: URL, database: string): Promise<void> {
    let peak = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peak = Math.max(peak, await connections(database));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    try {
      await syncThrough(base);
    } finally {
      sampling = false;
      await sampler;
    }
    await waitFor(async () => (await connections(database)) === 0, { timeout: 5_000, message: () => 'every connection to be ended after the last request' });
    console.log(`${base.pathname}: at most ${peak} connections at once while syncing, 0 after`);
    expect(peak).toBeGreaterThan(0);
  }

  beforeAll(async () => {
    const target = new URL(url!);
    relay = await startRelay({ host: target.hostname, port: Number(target.port || 5432) });
  });
  afterAll(async () => {
    await Promise.all(running.map((started) => started.stop()));
    await relay?.close();
    for (const name of databases) await admin!.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin?.end();
  }, 60_000);

  async function inEdgeRuntime(entry: string, databaseURL: string): Promise<{ url: URL; close(): Promise<void> }> {
    const result = await build({
      stdin: { contents: entry, resolveDir: ROOT, loader: 'ts' },
      bundle: true,
      platform: 'browser',
      format: 'iife',
      target: 'es2022',
      write: false,
      plugins: [builtPackage],
      logLevel: 'silent',
    });
    // Vercel gives edge code the project's environment as process.env; the Edge Runtime has none.
    const env = { DATABASE_URL: databaseURL, NEON_LOCAL_PROXY: relay.address };
    const runtime = new EdgeRuntime({ initialCode: `globalThis.process = { env: ${JSON.stringify(env)} };\n${result.outputFiles[0]!.text}` });
    return serveEdgeRuntime(runtime);
  }

  const tsx = join(ROOT, 'node_modules', '.bin', 'tsx');
  const vercelEntry = `import handler from './examples/edge/vercel-edge-function.ts';
addEventListener('fetch', (event) => event.respondWith(handler(event.request)));`;

  it('Vercel Edge Function (api/[...path].ts), in the Edge Runtime on Neon’s driver, its tables made by migrate.ts at deploy', async () => {
    const database = await freshDatabase();
    const migrated = await runCommand(tsx, ['examples/edge/migrate.ts'], { cwd: ROOT, env: { DATABASE_URL: database } });
    expect(migrated).toEqual({ code: 0, output: 'viewsync: tables ready\n' });
    const made = postgres(database, { max: 1 });
    expect(await made`SELECT to_regclass('viewsync_kv') IS NOT NULL AS kv, to_regclass('viewsync_schema') IS NOT NULL AS schema`).toEqual([
      { kv: true, schema: true },
    ]);
    await made.end();
    expect(await connections(database)).toBe(0);
    const server = await inEdgeRuntime(vercelEntry, database);
    try {
      await syncCountingConnections(new URL('api/', server.url), database);
    } finally {
      await server.close();
    }
  }, 120_000);

  it('Vercel Edge Function: a poke stream pokes after the handler returned, and holds no connection between the notifier’s reads', async () => {
    const database = await freshDatabase();
    const server = await inEdgeRuntime(vercelEntry, database);
    const clients = new Clients(() => new URL('api/', server.url));
    const streaming = new AbortController();
    try {
      const response = await fetch(new URL('api/poke', server.url), { signal: streaming.signal });
      expect(response.status).toBe(200);
      const body = response.body!.getReader();
      await readUntil(body, /data: open\n\n/);
      // The notifier reads the store every 250 ms while the stream is open, each read on a client
      // of its own: between reads, none is open (a Pool made once keeps one open throughout).
      await waitFor(async () => (await connections(database)) === 0, { timeout: 5_000, message: 'a moment with no connection while the stream is open' });
      const writer = clients.open({ name: uniqueName('edge-poker'), pullInterval: null });
      await writer.mutate.put({ key: 'greeting', value: 'poke' });
      await readUntil(body, /data: poke\n\n/);
      await waitFor(async () => (await connections(database)) === 0, {
        timeout: 5_000,
        message: 'a moment with no connection after the push, the stream still open',
      });
    } finally {
      streaming.abort();
      await clients.closeAll();
      await server.close();
    }
  }, 120_000);

  it('Next.js route handler (app/api/sync/[...path]/route.ts, runtime edge), in the Edge Runtime on Neon’s driver', async () => {
    const database = await freshDatabase();
    const server = await inEdgeRuntime(
      `import * as route from './examples/edge/next-route.ts';
if (route.runtime !== 'edge') throw new Error('not an edge route');
addEventListener('fetch', (event) => event.respondWith(route[event.request.method](event.request)));`,
      database,
    );
    try {
      await syncCountingConnections(new URL('api/sync/', server.url), database);
    } finally {
      await server.close();
    }
  }, 120_000);

  const deno = join(ROOT, 'node_modules', '.bin', 'deno');
  const DENO = ['run', '--no-prompt', '--no-remote', '--allow-net', '--allow-env', '--allow-sys', '--allow-read', '--config', 'examples/deno.json'];

  it('Netlify Edge Function (netlify/edge-functions/sync.ts), in Deno on Neon’s driver', async () => {
    const database = await freshDatabase();
    const started = await startCommand(deno, [...DENO, 'test/edge/netlify-harness.js'], {
      cwd: ROOT,
      env: { DATABASE_URL: database, NEON_LOCAL_PROXY: relay.address, DENO_NO_UPDATE_CHECK: '1' },
      ready: /\{"url":"([^"]+)"\}/,
      timeoutMs: 60_000,
    });
    running.push(started);
    await syncCountingConnections(new URL(started.match[1]!), database);
  }, 120_000);

  it('Supabase Edge Function (supabase/functions/sync/index.ts), in Deno on postgres.js over TCP with prepare: false', async () => {
    const port = await freePort();
    const started = await startCommand(deno, [...DENO, 'examples/edge/supabase-edge-function.ts'], {
      cwd: ROOT,
      env: { SUPABASE_DB_URL: await freshDatabase(), PORT: String(port), DENO_NO_UPDATE_CHECK: '1' },
      ready: /sync on (http:\S+)/,
      timeoutMs: 60_000,
    });
    running.push(started);
    await syncThrough(new URL(started.match[1]!));
  }, 120_000);
});
