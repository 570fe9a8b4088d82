/**
 * The two-version to-do app's server for the browser test: the page (page.ts, bundled once) at
 * `/`, and viewsync at `/api/`, on one origin, so a deploy is a stop and a start on the same port.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { createListener, nodeServerOptions, stopServer } from '../../adapters/node.js';
import type { SyncContext } from '../../src/index.js';

/** The page's script (`entry`, by default the to-do app's), bundled for the browser with the `replicache` package installed here. */
export async function bundlePage(entry = fileURLToPath(new URL('page.ts', import.meta.url))): Promise<Uint8Array> {
  const bundle = await build({ entryPoints: [entry], bundle: true, write: false, format: 'esm', platform: 'browser', logLevel: 'warning' });
  return bundle.outputFiles[0]!.contents;
}

export interface AppServer {
  url: URL;
  port: number;
  /** Stops as a deploy does: poke streams told to reconnect, requests in flight answered. */
  stop(): Promise<void>;
}

/** Serves `ctx` and the page on `port` (0: any free one). */
export async function startAppServer(ctx: SyncContext, script: Uint8Array, port = 0): Promise<AppServer> {
  const api = createListener(ctx);
  const { timeout, ...options } = nodeServerOptions({});
  const server = createServer(options, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path.startsWith('/api/')) return api(req, res);
    if (path === '/page.js') return void res.writeHead(200, { 'content-type': 'text/javascript', 'cache-control': 'no-store' }).end(script);
    if (path === '/') return void res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' }).end(PAGE);
    res.writeHead(404).end();
  });
  server.setTimeout(timeout, (socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  return { url: new URL(`http://127.0.0.1:${bound}/`), port: bound, stop: () => stopServer(server, ctx, { timeoutMs: 2_000, retryMs: 100 }) };
}

const PAGE = '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>to-dos</title><script type="module" src="/page.js"></script>';
