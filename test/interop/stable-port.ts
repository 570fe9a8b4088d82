/**
 * For a runtime whose test server always picks its own port (Miniflare's `startWorkerd()`): a
 * forwarding proxy in front of each server it starts, listening on the port the suite asks for.
 * Restarting then works as for the Node server: stop (proxy and server), start a new server
 * on a fresh store behind a new proxy on the same port, and the clients' URLs stay valid.
 * Forwards with node:http, not `fetch`, so the suite's fetch recorder sees each request once.
 */
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningServer, StartOptions, StartServer } from './suite.js';

export function withStablePort(start: (options: { requireAuth?: string }) => Promise<RunningServer>): StartServer {
  return async ({ port = 0, requireAuth }: StartOptions = {}) => {
    const backend = await start({ requireAuth });
    const proxy = createServer((req, res) => {
      const target = new URL(req.url ?? '/', backend.url);
      const headers = { ...req.headers, host: target.host };
      const upstream = httpRequest(target, { method: req.method, headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.once('error', (error) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
        res.end(`proxy: ${error.message}`);
      });
      req.pipe(upstream);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        proxy.once('error', reject);
        proxy.listen(port, '127.0.0.1', () => resolve());
      });
    } catch (error) {
      await backend.stop();
      throw error;
    }
    const { port: listening } = proxy.address() as AddressInfo;
    return {
      url: new URL(`http://127.0.0.1:${listening}/`),
      stop: async () => {
        await new Promise<void>((resolve) => (proxy.closeAllConnections(), proxy.close(() => resolve())));
        await backend.stop();
      },
    };
  };
}
