import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleRequest, type SyncContext } from '../src/index.js';
import type { ServeOptions, SyncServer } from './types.js';

export type { ServeOptions, SyncServer } from './types.js';

/**
 * A `node:http` request listener serving both endpoints, to mount in your own server, Express
 * or Fastify (`app.use('/sync', createListener(ctx))`).
 *
 * @example
 * http.createServer(createListener(ctx)).listen(8787);
 */
export function createListener(ctx: SyncContext): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    void toResponse(req, res, ctx).catch((error: unknown) => {
      // Only writing to a socket the client already dropped gets here; the core never rejects.
      res.destroy(error instanceof Error ? error : undefined);
    });
  };
}

/**
 * Starts a `node:http` server for both endpoints and resolves once it listens.
 *
 * @example
 * const server = await serve(ctx, { port: 8787 });
 * console.log(`pull: ${server.url}pull`);
 */
export function serve(ctx: SyncContext, options: ServeOptions = {}): Promise<SyncServer> {
  const server = createServer(createListener(ctx));
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8787, options.hostname ?? '127.0.0.1', () => {
      const { port, address } = server.address() as AddressInfo;
      const host = address.includes(':') ? `[${address}]` : address;
      resolve({
        port,
        hostname: address,
        url: new URL(`http://${host}:${port}/`),
        stop: () => new Promise<void>((done) => (server.closeAllConnections(), server.close(() => done()))),
      });
    });
  });
}

async function toResponse(req: IncomingMessage, res: ServerResponse, ctx: SyncContext): Promise<void> {
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
  await writeResponse(await handleRequest(request, ctx), res);
}

/**
 * The request as a Fetch `Request`. It carries no AbortSignal: the core never reads one, a
 * client that hangs up mid-body errors the body stream instead, and undici makes a Request with
 * a signal cost half as much again.
 */
function toRequest(req: IncomingMessage, small: Uint8Array | undefined): Request {
  const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  return new Request(url, { method: req.method, headers, body: hasBody ? (small ?? bodyStream(req)) : null, duplex: 'half' } as RequestInit);
}

/**
 * The whole body when it declares a small length, else undefined (it will be streamed). Node's
 * parser never delivers more than the declared length, so this buffers at most SMALL_BODY bytes,
 * and bytes make a Request about twice as fast as a stream does.
 */
async function readSmallBody(req: IncomingMessage): Promise<Uint8Array | undefined> {
  const length = Number(req.headers['content-length'] ?? NaN);
  if (!(length <= SMALL_BODY) || req.method === 'GET' || req.method === 'HEAD') return undefined;
  // Events, not `for await`: a stream's async iterator costs more than the rest of the bridge.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.once('error', reject);
  });
}

const SMALL_BODY = 64 * 1024;

/**
 * The request body as a web stream that reads only as fast as the core consumes it: the socket
 * is paused whenever the stream's queue is full. Cancelling (a body over the limit) stops
 * reading; the response then closes the connection rather than draining the rest.
 */
function bodyStream(req: IncomingMessage): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        req.on('data', (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) req.pause();
        });
        req.once('end', () => controller.close());
        req.once('error', (error) => controller.error(error));
        req.once('aborted', () => controller.error(new Error('The client aborted the request')));
      },
      pull() {
        req.resume();
      },
      cancel() {
        req.removeAllListeners('data');
        req.pause();
        req.unpipe();
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
}

/**
 * Writes a Fetch response in one `end` with a Content-Length. The core builds every body in
 * memory, so streaming it in pieces would only cost time: a chunked body's separate terminator
 * waits out the client's delayed ACK, which cut throughput tenfold when measured.
 */
async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const body = new Uint8Array(await response.arrayBuffer());
  const headers: Record<string, string> = Object.fromEntries(response.headers);
  headers['content-length'] = String(body.byteLength);
  // An unread request body (refused before or while reading) must not be left in the connection.
  if (!res.req.complete) headers.connection = 'close';
  if (!res.destroyed) res.writeHead(response.status, headers).end(body);
}
