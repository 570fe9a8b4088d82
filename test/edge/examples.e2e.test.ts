/**
 * The edge examples users copy (examples/edge/), each run where it can run here, against the real
 * PostgreSQL server, with the real `replicache` client syncing through it:
 * - the Vercel Edge Function and the Next.js route handler (`runtime: 'edge'`), bundled for the
 *   edge and run in Vercel's Edge Runtime, on Neon's serverless Pool through a local relay;
 * - the Netlify Edge Function, in Deno, on Neon's Pool through the same relay;
 * - the Supabase Edge Function, in Deno, on postgres.js over TCP with `prepare: false`.
 * Each gets a database of its own: the examples use the default schema, as a user's would.
 */
import { join } from 'node:path';
import { EdgeRuntime } from 'edge-runtime';
import { build } from 'esbuild';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Clients, pendingCount, serverData, snapshot, uniqueName, waitFor } from '../interop/client.js';
import { ROOT } from '../package/packed.js';
import { freePort, type Started, startCommand } from '../support/command.js';
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
    await Promise.all(tabs.map(async (tab) => {
      for (let i = 0; i < 5; i++) await tab.mutate.increment({ key: 'count', delta: 1 });
    }));
    await waitFor(async () => (await Promise.all(tabs.map(pendingCount))).every((n) => n === 0), { timeout: 30_000, message: 'every push to be confirmed' });
    expect(await serverData(base)).toMatchObject({ count: 15, greeting: 'hello from a' });
  } finally {
    await clients.closeAll();
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
    const result = await build({ stdin: { contents: entry, resolveDir: ROOT, loader: 'ts' }, bundle: true, platform: 'browser', format: 'iife', target: 'es2022', write: false, plugins: [builtPackage], logLevel: 'silent' });
    // Vercel gives edge code the project's environment as process.env; the Edge Runtime has none.
    const env = { DATABASE_URL: databaseURL, NEON_LOCAL_PROXY: relay.address };
    const runtime = new EdgeRuntime({ initialCode: `globalThis.process = { env: ${JSON.stringify(env)} };\n${result.outputFiles[0]!.text}` });
    return serveEdgeRuntime(runtime);
  }

  it('Vercel Edge Function (api/[...path].ts), in the Edge Runtime on Neon’s Pool', async () => {
    const server = await inEdgeRuntime(`import handler from './examples/edge/vercel-edge-function.ts';
addEventListener('fetch', (event) => event.respondWith(handler(event.request)));`, await freshDatabase());
    try {
      await syncThrough(new URL('api/', server.url));
    } finally {
      await server.close();
    }
  }, 120_000);

  it('Next.js route handler (app/api/sync/[...path]/route.ts, runtime edge), in the Edge Runtime on Neon’s Pool', async () => {
    const server = await inEdgeRuntime(`import * as route from './examples/edge/next-route.ts';
if (route.runtime !== 'edge') throw new Error('not an edge route');
addEventListener('fetch', (event) => event.respondWith(route[event.request.method](event.request)));`, await freshDatabase());
    try {
      await syncThrough(new URL('api/sync/', server.url));
    } finally {
      await server.close();
    }
  }, 120_000);

  const deno = join(ROOT, 'node_modules', '.bin', 'deno');
  const DENO = ['run', '--no-prompt', '--no-remote', '--allow-net', '--allow-env', '--allow-sys', '--allow-read', '--config', 'examples/deno.json'];

  it('Netlify Edge Function (netlify/edge-functions/sync.ts), in Deno on Neon’s Pool', async () => {
    const started = await startCommand(deno, [...DENO, 'test/edge/netlify-harness.js'], { cwd: ROOT, env: { DATABASE_URL: await freshDatabase(), NEON_LOCAL_PROXY: relay.address, DENO_NO_UPDATE_CHECK: '1' }, ready: /\{"url":"([^"]+)"\}/, timeoutMs: 60_000 });
    running.push(started);
    await syncThrough(new URL(started.match[1]!));
  }, 120_000);

  it('Supabase Edge Function (supabase/functions/sync/index.ts), in Deno on postgres.js over TCP with prepare: false', async () => {
    const port = await freePort();
    const started = await startCommand(deno, [...DENO, 'examples/edge/supabase-edge-function.ts'], { cwd: ROOT, env: { SUPABASE_DB_URL: await freshDatabase(), PORT: String(port), DENO_NO_UPDATE_CHECK: '1' }, ready: /sync on (http:\S+)/, timeoutMs: 60_000 });
    running.push(started);
    await syncThrough(new URL(started.match[1]!));
  }, 120_000);
});
