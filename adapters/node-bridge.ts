import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { Reply } from '../src/base/reply.js';
import { BODY_BYTES, FETCH_REQUEST } from '../src/base/request-stand-in.js';
import { refuseRenamed } from '../src/base/renamed.js';
import { type CompressionOptions, compressReply } from './compress.js';
import { drained } from '../src/base/drained.js';
import { DirectStream, type Sink } from '../src/base/direct-stream.js';
import { IDLE_TIMEOUT_MS } from './types.js';

// The bridge between node:http and Fetch, the one adapter that cannot be thin (see node.ts).

/**
 * The request as the core takes it. A small body, read already, makes a stand-in (see
 * request-stand-in.ts) that answers `method`, `url` and `headers` from Node's request and hands
 * the core the body's bytes; the app's code gets a real `Request`, made when it first asks. A
 * large body comes as a real `Request` with a stream. There is no AbortSignal: the core never
 * reads one, and a client that hangs up mid-body errors the body stream instead.
 */
export function toRequest(req: IncomingMessage, small: Uint8Array | undefined): Request {
  const url = hrefOf(req.url ?? '/', req.headers.host);
  const method = req.method ?? 'GET';
  // biome-ignore lint/plugin/no-double-cast: ReadRequest reads like a Request for the handlers (what it lacks they never call), and is not one.
  if (small !== undefined) return new ReadRequest(method, url, req.headers, small) as unknown as Request;
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(url, { method, headers: toHeaders(req.headers), body: hasBody ? bodyStream(req) : null, duplex: 'half' } as RequestInit);
}

/** A request whose whole body was read: what the core reads of it, and the real `Request`, made once, for the app's code. */
class ReadRequest {
  readonly method: string;
  readonly url: string;
  readonly [BODY_BYTES]: Uint8Array;
  readonly #raw: IncomingHttpHeaders;
  #headers: NodeHeaders | undefined;
  #real: Request | undefined;

  constructor(method: string, url: string, raw: IncomingHttpHeaders, body: Uint8Array) {
    this.method = method;
    this.url = url;
    this.#raw = raw;
    this[BODY_BYTES] = body;
  }

  get headers(): NodeHeaders {
    return (this.#headers ??= new NodeHeaders(this.#raw));
  }

  [FETCH_REQUEST](): Request {
    this.#real ??= new Request(this.url, { method: this.method, headers: toHeaders(this.#raw), body: this[BODY_BYTES] as Uint8Array<ArrayBuffer> });
    return this.#real;
  }
}

/** Node's headers, read as Fetch's `get` and `has` read them. */
class NodeHeaders {
  readonly #raw: IncomingHttpHeaders;

  constructor(raw: IncomingHttpHeaders) {
    this.#raw = raw;
  }

  get(name: string): string | null {
    const found = this.#raw[name.toLowerCase()];
    return found === undefined ? null : Array.isArray(found) ? found.join(', ') : found;
  }

  has(name: string): boolean {
    return this.#raw[name.toLowerCase()] !== undefined;
  }
}

/**
 * The URL of a request line's target at `host`. The last one is kept: a server's requests go to
 * a few URLs over and over, and parsing one costs more than the rest of the bridge. Throws for a
 * target or host that makes no URL.
 */
function hrefOf(target: string, host: string | undefined): string {
  if (target !== last.target || host !== last.host) last = { target, host, href: new URL(target, `http://${host ?? 'localhost'}`).href };
  return last.href;
}

let last: { target: string; host: string | undefined; href: string } = { target: '/', host: 'localhost', href: 'http://localhost/' };

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
    // `on`, not `once`: each fires once here all the same, and `once` wraps its listener.
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
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
  const encoded = compression ? compressReply(reply, res.req.headers['accept-encoding'], compression) : reply;
  const { status, headers: replyHeaders, body } = encoded instanceof Promise ? await encoded : encoded;
  // Not a spread: adding a field to an object V8 cloned by spreading cost a microsecond (Node 20).
  const headers = Object.assign({}, replyHeaders);
  // An unread request body (refused before or while reading) must not be left in the connection.
  if (!res.req.complete) headers.connection = 'close';
  if (body === null || typeof body === 'string' || body instanceof Uint8Array) {
    headers['content-length'] = String(body === null ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
    if (!res.destroyed) res.writeHead(status, headers).end(body ?? undefined);
    return;
  }
  if (body instanceof DirectStream) return writeDirect(body, res, status, headers);
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

/**
 * Writes a poke stream straight to the socket (see {@link DirectStream}): no reader waits on it,
 * and what is not yet sent is bounded by the stream's producer, which leaves pokes out while the
 * socket is behind (see {@link ResponseSink.full}).
 */
function writeDirect(body: DirectStream, res: ServerResponse, status: number, headers: Record<string, string>): void {
  if (res.destroyed) return void body.cancel().catch(() => {});
  res.writeHead(status, headers);
  // A client that goes releases its stream at once, not at its next chunk.
  res.once('close', body.attach(new ResponseSink(res)));
}

/** A response as a poke stream's {@link Sink}. */
class ResponseSink implements Sink {
  readonly #res: ServerResponse;

  constructor(res: ServerResponse) {
    this.#res = res;
  }

  get waiting(): boolean {
    return this.#res.writableLength > 0;
  }

  get full(): boolean {
    return this.#res.writableLength >= UNSENT_BYTES;
  }

  write(chunk: Uint8Array): void {
    // Node emits an error, which nothing here would catch, for a write after the end.
    if (!this.#res.destroyed && !this.#res.writableEnded) this.#res.write(chunk);
  }

  end(): void {
    if (!this.#res.destroyed) this.#res.end();
  }
}

/**
 * Bytes a poke stream's response may hold unsent (its socket full) before pokes to it are left
 * out: a few of its chunks, so that a heartbeat and a poke written in one tick (both wait for the
 * socket's uncork) both go, and a client that stops reading costs no more than this.
 */
const UNSENT_BYTES = 256;

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
export function nodeServerOptions(options: NodeTimeoutOptions): {
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionsCheckingInterval: number;
  timeout: number;
} {
  refuseRenamed(options, 'options', {
    headersTimeout: 'headersTimeoutMs',
    requestTimeout: 'requestTimeoutMs',
    idleTimeout: 'idleTimeoutMs',
    keepAliveTimeout: 'keepAliveTimeoutMs',
  });
  const { requestTimeoutMs: requestTimeout = 60_000, idleTimeoutMs: idleTimeout = IDLE_TIMEOUT_MS, keepAliveTimeoutMs: keepAliveTimeout = 5_000 } = options;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(options.headersTimeoutMs ?? 10_000, requestTimeout);
  // Node checks the first two only this often (default 30 s): often enough to keep them.
  const connectionsCheckingInterval = Math.max(100, Math.min(1_000, headersTimeout, requestTimeout));
  return { headersTimeout, requestTimeout, keepAliveTimeout, connectionsCheckingInterval, timeout: idleTimeout };
}
