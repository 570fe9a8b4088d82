/**
 * The core at the edge, proven rather than assumed: a handler bundled for the edge (no Node
 * built-ins), run inside Vercel's Edge Runtime (the `edge-runtime` package that `vercel dev` and
 * Next.js use), on Neon's serverless Pool talking to the real PostgreSQL server through a local
 * WebSocket-to-TCP relay. The real `replicache` client syncs through it: the whole interop suite,
 * concurrent pushers that end exact, and a restart that keeps the data.
 */
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { EdgeRuntime } from 'edge-runtime';
import { build } from 'esbuild';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../package/packed.js';
import { Clients, pendingCount, serverData, uniqueName, waitFor } from '../interop/client.js';
import { describeInterop, type RunningServer, type StartOptions } from '../interop/suite.js';
import { startRelay } from '../support/ws-relay.js';
import { builtPackage } from './built-package.js';
import { RUNTIME_INSPECTOR_SECRET } from '../runtime/app.js';
import { serveEdgeRuntime } from './edge-server.js';

const url = process.env.DATABASE_URL;

describe.skipIf(url === undefined)("the Vercel Edge Runtime on Neon's serverless driver", () => {
  let bundle = '';
  let relay: Awaited<ReturnType<typeof startRelay>>;
  const sql = url === undefined ? undefined : postgres(url, { onnotice: () => {}, max: 1 });
  const schemas: string[] = [];
  const freshSchema = () => {
    const schema = `edge_${process.pid}_${schemas.length}`;
    schemas.push(schema);
    return schema;
  };

  beforeAll(async () => {
    // platform browser: a Node built-in anywhere in the graph fails the build.
    const result = await build({
      entryPoints: [join(ROOT, 'test/edge/handler.ts')],
      bundle: true,
      platform: 'browser',
      format: 'iife',
      target: 'es2022',
      write: false,
      minify: true,
      plugins: [builtPackage],
      logLevel: 'silent',
    });
    bundle = result.outputFiles[0]!.text;
    const target = new URL(url!);
    relay = await startRelay({ host: target.hostname, port: Number(target.port || 5432) });
  }, 120_000);

  afterAll(async () => {
    await relay?.close();
    for (const schema of schemas) await sql!.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql?.end();
  });

  async function startEdge(options: StartOptions & { schema?: string } = {}): Promise<RunningServer> {
    const config = { databaseURL: url, relay: relay.address, schema: options.schema ?? freshSchema(), requireAuth: options.requireAuth };
    const runtime = new EdgeRuntime({ initialCode: `globalThis.EDGE_CONFIG = ${JSON.stringify(config)};\n${bundle}` });
    const server = await serveEdgeRuntime(runtime, options.port);
    return { url: server.url, stop: () => server.close() };
  }

  it('the handler bundles for the edge, Neon driver and all, with no Node built-in', () => {
    expect(bundle).not.toMatch(/\brequire\(["']node:/);
    const gzipped = gzipSync(bundle).length;
    console.log(
      `edge bundle (core, PostgreSQL store, Neon driver), minified: ${(bundle.length / 1024).toFixed(0)} KiB, gzipped ${(gzipped / 1024).toFixed(1)} KiB`,
    );
    expect(gzipped).toBeLessThan(200 * 1024);
  });

  describeInterop("the Vercel Edge Runtime, on Neon's serverless Pool", (options) => startEdge(options));

  it('serves the inspector at the edge: a login (WebCrypto HMAC) and a space read over Neon', async () => {
    const server = await startEdge();
    try {
      await fetch(new URL('push', server.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          pushVersion: 1,
          clientGroupID: 'edge-inspected',
          profileID: 'p',
          schemaVersion: '',
          mutations: [{ clientID: 'edge-inspected', id: 1, name: 'put', args: { key: 'seen', value: 1 }, timestamp: 1 }],
        }),
      });
      const login = await fetch(new URL('_inspect/login', server.url), {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: server.url.origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: `secret=${RUNTIME_INSPECTOR_SECRET}`,
      });
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const keys = await fetch(new URL('_inspect/api/keys?space=', server.url), { headers: { cookie, 'x-viewsync-inspector': '1' } });
      expect(await keys.json()).toMatchObject({ entries: [{ key: 'seen', json: '1' }] });
    } finally {
      await server.stop();
    }
  });

  it('concurrent pushers end exact, and a restarted runtime keeps every count', async () => {
    const schema = freshSchema();
    let server = await startEdge({ schema });
    const clients = new Clients(() => server.url);
    try {
      const tabs = Array.from({ length: 6 }, (_, i) => clients.open({ name: uniqueName(`edge-${i}`), pullInterval: 100 }));
      await Promise.all(
        tabs.map(async (tab) => {
          for (let i = 0; i < 10; i++) await tab.mutate.increment({ key: 'count', delta: 1 });
        }),
      );
      await waitFor(async () => (await Promise.all(tabs.map(pendingCount))).every((n) => n === 0), { timeout: 30_000, message: 'every push to be confirmed' });
      expect(await serverData(server.url)).toMatchObject({ count: 60 });
      const port = Number(server.url.port);
      await clients.closeAll();
      await server.stop();
      server = await startEdge({ schema, port });
      // A kept-alive connection to the stopped runtime fails once: waitFor tries again.
      await waitFor(async () => (await serverData(server.url)).count === 60, { message: 'the count after the restart' });
      const again = clients.open({ name: uniqueName('edge-after'), pullInterval: 100 });
      await again.mutate.increment({ key: 'count', delta: 1 });
      await waitFor(async () => (await serverData(server.url)).count === 61, { timeout: 10_000, message: 'a push after the restart' });
    } finally {
      await clients.closeAll();
      await server.stop();
    }
  }, 120_000);
});
