import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHandler, type EdgeRuntime } from 'edge-runtime';

/** An Edge Runtime served over HTTP by {@link serveEdgeRuntime}. */
export interface EdgeServer {
  /** `http://127.0.0.1:PORT/`. */
  readonly url: URL;
  /** Stops taking requests, answers those under way, and resolves once every connection is closed. */
  close(): Promise<void>;
}

/**
 * Serves `runtime` on `port` (any free one by default), as the `edge-runtime` package's
 * `runServer` does, but with a stop that ends. `runServer`'s close is `server.close()`, which
 * closes only the connections idle at that moment: a kept-alive connection with a request under
 * way stays open afterwards, and a client that pulls every 100 ms reuses it before it is ever idle
 * for long, so the close never resolved (the interop suite's restart tests stalled until their
 * 60 s timeout whenever the stop raced a pull). Here, as the Node adapter's `stopServer` does,
 * a stopping server answers each request with `Connection: close` and closes connections as they
 * turn idle.
 */
export async function serveEdgeRuntime(runtime: EdgeRuntime, port = 0): Promise<EdgeServer> {
  const { handler, waitUntil } = createHandler({ runtime });
  let stopping = false;
  const server = createServer((req, res) => {
    if (stopping) res.setHeader('connection', 'close');
    void handler(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`),
    close: async () => {
      stopping = true;
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      try {
        await Promise.all([new Promise<void>((resolve) => server.close(() => resolve())), waitUntil()]);
      } finally {
        clearInterval(sweep);
      }
    },
  };
}
