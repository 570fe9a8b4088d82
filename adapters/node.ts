import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SyncContext } from '../src/index.js';
import { isDraining } from '../src/context/drain.js';
import { requestReply } from '../src/server/handle-request.js';
import { type CompressionOptions, compressionSettings } from './compress.js';
import { fitStreamsToProcess } from './descriptors.js';
import { nodeServerOptions, type NodeTimeoutOptions, readSmallBody, toRequest, writeReply } from './node-bridge.js';
import { stopGracefully } from './stop.js';
import type { ServeOptions, StopOptions, SyncServer } from './types.js';
import { checkContext } from '../src/context/state.js';

export type { ServeOptions, StopOptions, SyncServer } from './types.js';
export { nodeServerOptions, type NodeTimeoutOptions } from './node-bridge.js';
export type { CompressionOptions } from './compress.js';

/**
 * A `node:http` request listener serving both endpoints, to mount in your own server, Express
 * or Fastify (`app.use('/sync', createListener(ctx))`).
 *
 * @example
 * http.createServer(createListener(ctx)).listen(8787);
 */
export function createListener(ctx: SyncContext, options: ListenerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  checkContext(ctx);
  const compression = compressionSettings(options.compression);
  fitStreamsToProcess(ctx);
  return (req, res) => {
    void toResponse(req, res, ctx, compression).catch((error: unknown) => {
      // Only writing to a socket the client already dropped gets here; the core never rejects.
      res.destroy(error instanceof Error ? error : undefined);
    });
  };
}

/** How {@link createListener} answers. */
export interface ListenerOptions {
  /** Compress answers of 1 KiB or more (pulls) with br or gzip when the request accepts it; `false` sends them as they are. Default: on, {@link CompressionOptions}' defaults. */
  compression?: false | CompressionOptions;
}

/** {@link ServeOptions}, plus Node's timeouts, which bound what a slow or idle client can hold. */
export interface NodeServeOptions extends ServeOptions, ListenerOptions, NodeTimeoutOptions {}

/**
 * Starts a `node:http` server for both endpoints and resolves once it listens. Slow clients are
 * bounded (see {@link NodeServeOptions}): a body trickled in, or a response never read, holds a
 * connection for a minute at most.
 *
 * @example
 * const server = await serve(ctx, { port: 8787 });
 * console.log(`pull: ${server.url}pull`);
 */
export function serve(ctx: SyncContext, options: NodeServeOptions = {}): Promise<SyncServer> {
  const { timeout, ...serverOptions } = nodeServerOptions(options);
  const server = createServer(serverOptions, createListener(ctx, options));
  server.setTimeout(timeout, (socket) => socket.destroy());
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8787, options.hostname ?? '127.0.0.1', () => {
      const { port, address } = server.address() as AddressInfo;
      const host = address.includes(':') ? `[${address}]` : address;
      resolve({
        port,
        hostname: address,
        url: new URL(`http://${host}:${port}/`),
        stop: (stopOptions) => stopServer(server, ctx, stopOptions),
      });
    });
  });
}

/**
 * Stops a `node:http` server that serves `ctx` through {@link createListener}, as
 * {@link SyncServer.stop} does: for a server of your own, on SIGTERM. Connections that finish a
 * request are closed after it (with `Connection: close`), idle ones at once, the rest after
 * `timeoutMs`.
 *
 * @example
 * process.once('SIGTERM', () => void stopServer(server, ctx).then(() => process.exit(0)));
 */
export function stopServer(server: Server, ctx: SyncContext, options: StopOptions = {}): Promise<void> {
  const close = () =>
    new Promise<void>((resolve) => {
      // A kept-alive connection between requests is idle: close() closes those it finds, this the
      // ones that become idle later (a response written before the drain kept its connection).
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      server.close(() => (clearInterval(sweep), resolve()));
    });
  return stopGracefully(ctx, options, close, () => server.closeAllConnections());
}

async function toResponse(req: IncomingMessage, res: ServerResponse, ctx: SyncContext, compression: Required<CompressionOptions> | undefined): Promise<void> {
  // Rejects only when the client hangs up mid-body; the listener then drops the socket.
  const small = await readSmallBody(req);
  let request: Request;
  try {
    request = toRequest(req, small);
  } catch {
    // Only a request line or Host header that makes no URL gets here.
    res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"BadRequest","message":"The request URL is not valid"}');
    return;
  }
  const reply = await requestReply(request, ctx);
  // A stopping server lets each connection go once its request is answered.
  if (isDraining(ctx)) reply.headers.connection = 'close';
  await writeReply(reply, res, compression);
}
