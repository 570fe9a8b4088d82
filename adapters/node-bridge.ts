import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Reply } from '../src/base/reply.js';
import { BODY_BYTES } from '../src/server/read-body.js';
import { refuseRenamed } from '../src/base/renamed.js';
import { type CompressionOptions, compressReply } from './compress.js';
import { drained } from '../src/base/drained.js';
import { IDLE_TIMEOUT_MS } from './types.js';

// The bridge between node:http and Fetch, the one adapter that cannot be thin (see node.ts).

/**
 * The request as a Fetch `Request`. A small body, read already, makes a stand-in that answers
 * `method`, `url` and `headers` itself and hands the core the body's bytes: undici's `Request`,
 * its `Headers` and its body stream cost more than a whole small pull. Anything else about it
 * (user code calling `request.json()`, `clone()`, reading `signal`...) builds the real `Request`
 * then, once. A large body comes as a real `Request` with a stream. There is no AbortSignal: the
 * core never reads one, and a client that hangs up mid-body errors the body stream instead.
 */
export function toRequest(req: IncomingMessage, small: Uint8Array | undefined): Request {
  const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`).href;
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  if (small === undefined) return new Request(url, { method, headers: toHeaders(req.headers), body: hasBody ? bodyStream(req) : null, duplex: 'half' } as RequestInit);
  let headers: Headers | undefined;
  let real: Request | undefined;
  const fast: Record<PropertyKey, () => unknown> = {
    method: () => method,
    url: () => url,
    headers: () => (headers ??= lazyHeaders(req.headers)),
    [BODY_BYTES]: () => small,
  };
  return new Proxy(Object.create(Request.prototype) as Request, {
    get(_, property) {
      if (Object.hasOwn(fast, property)) return fast[property]!();
      real ??= new Request(url, { method, headers: toHeaders(req.headers), body: hasBody ? (small as Uint8Array<ArrayBuffer>) : null });
      const value = Reflect.get(real, property, real) as unknown;
      return typeof value === 'function' ? value.bind(real) : value;
    },
  });
}

/** Node's headers as Fetch `Headers`, read from Node's object until something needs a real one. */
function lazyHeaders(raw: IncomingHttpHeaders): Headers {
  let real: Headers | undefined;
  const value = (name: string) => {
    const found = raw[name.toLowerCase()];
    return Array.isArray(found) ? found.join(', ') : found;
  };
  // Made once, not at each access: the core reads a few headers of every request.
  const get = (name: string) => value(name) ?? null;
  const has = (name: string) => value(name) !== undefined;
  return new Proxy(Object.create(Headers.prototype) as Headers, {
    get(_, property) {
      if (property === 'get') return get;
      if (property === 'has') return has;
      real ??= toHeaders(raw);
      const member = Reflect.get(real, property, real) as unknown;
      return typeof member === 'function' ? member.bind(real) : member;
    },
  });
}

function toHeaders(raw: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  return headers;
}

/**
 * The whole body when it declares a small length, else undefined (it will be streamed). Node's
 * parser never delivers more than the declared length, so this buffers at most SMALL_BODY bytes.
 */
export async function readSmallBody(req: IncomingMessage): Promise<Uint8Array | undefined> {
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
 * Writes a reply, compressed when `compression` is given and the request accepts it (see
 * compress.ts). Text goes in one `end` with a Content-Length: a chunked body's separate
 * terminator waits out the client's delayed ACK, which cut throughput tenfold when measured. A
 * stream (a long pull) is written as the client reads it.
 */
export async function writeReply(reply: Reply, res: ServerResponse, compression?: Required<CompressionOptions>): Promise<void> {
  const { status, headers: replyHeaders, body } = compression ? await compressReply(reply, res.req.headers['accept-encoding'], compression) : reply;
  const headers = { ...replyHeaders };
  // An unread request body (refused before or while reading) must not be left in the connection.
  if (!res.req.complete) headers.connection = 'close';
  if (body === null || typeof body === 'string' || body instanceof Uint8Array) {
    headers['content-length'] = String(body === null ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
    if (!res.destroyed) res.writeHead(status, headers).end(body ?? undefined);
    return;
  }
  const reader = body.getReader();
  // A client that goes while the stream has nothing to say (a poke stream, between pokes) must
  // release it now, not at its next chunk.
  const cancel = () => void reader.cancel().catch(() => {});
  res.once('close', cancel);
  if (res.destroyed) return cancel();
  res.writeHead(status, headers);
  try {
    for (let chunk = await nextChunk(reader); chunk; chunk = await nextChunk(reader)) {
      // Wait while the socket is full; stop (and drop what is left) once the client has gone.
      if (res.destroyed || (!res.write(chunk) && !(await drained(res)))) return cancel();
    }
  } finally {
    res.off('close', cancel);
  }
  if (!res.destroyed) res.end();
}

async function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Uint8Array | undefined> {
  const next = await reader.read();
  return next.done ? undefined : next.value;
}

/** Node's timeouts, which bound what a slow or idle client can hold. */
export interface NodeTimeoutOptions {
  /** Milliseconds for a request's headers to arrive; then 408 and close. Default: 10,000. */
  headersTimeoutMs?: number;
  /** Milliseconds for a whole request (headers and body) to arrive; then 408 and close. Default: 60,000. */
  requestTimeoutMs?: number;
  /** Milliseconds a connection may neither send nor read, a kept-alive one included; then it is closed. Default: 60,000. */
  idleTimeoutMs?: number;
  /** Milliseconds an idle kept-alive connection stays open for the next request. Default: 5,000. */
  keepAliveTimeoutMs?: number;
}

/**
 * What `serve` gives `http.createServer` to bound slow clients (see {@link NodeTimeoutOptions}),
 * for a server of your own around `createListener`: the server options, and the idle `timeout`
 * for `server.setTimeout`.
 *
 * @example
 * const { timeout, ...options } = nodeServerOptions({});
 * const server = http.createServer(options, createListener(ctx));
 * server.setTimeout(timeout, (socket) => socket.destroy());
 */
export function nodeServerOptions(options: NodeTimeoutOptions): { headersTimeout: number; requestTimeout: number; keepAliveTimeout: number; connectionsCheckingInterval: number; timeout: number } {
  refuseRenamed(options, 'options', { headersTimeout: 'headersTimeoutMs', requestTimeout: 'requestTimeoutMs', idleTimeout: 'idleTimeoutMs', keepAliveTimeout: 'keepAliveTimeoutMs' });
  const { requestTimeoutMs: requestTimeout = 60_000, idleTimeoutMs: idleTimeout = IDLE_TIMEOUT_MS, keepAliveTimeoutMs: keepAliveTimeout = 5_000 } = options;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout);
  // Node checks the first two only this often (default 30 s): often enough to keep them.
  const connectionsCheckingInterval = Math.max(100, Math.min(1_000, headersTimeout, requestTimeout));
  return { headersTimeout, requestTimeout, keepAliveTimeout, connectionsCheckingInterval, timeout: idleTimeout };
}
