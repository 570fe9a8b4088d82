import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NodeServeOptions } from './node.js';

// The bridge between node:http and Fetch, the one adapter that cannot be thin (see node.ts).

/**
 * The request as a Fetch `Request`. It carries no AbortSignal: the core never reads one, a
 * client that hangs up mid-body errors the body stream instead, and undici makes a Request with
 * a signal cost half as much again.
 */
export function toRequest(req: IncomingMessage, small: Uint8Array | undefined): Request {
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
 * Writes a Fetch response. A body of one chunk (all but large pulls) goes in one `end` with a
 * Content-Length: a chunked body's separate terminator waits out the client's delayed ACK, which
 * cut throughput tenfold when measured. A longer one is written as the client reads it.
 */
export async function writeResponse(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = Object.fromEntries(response.headers);
  // An unread request body (refused before or while reading) must not be left in the connection.
  if (!res.req.complete) headers.connection = 'close';
  const reader = response.body?.getReader();
  const first = reader && (await nextChunk(reader));
  const second = first && (await nextChunk(reader!));
  if (second === undefined) {
    const body = first ?? new Uint8Array(0);
    headers['content-length'] = String(body.byteLength);
    if (!res.destroyed) res.writeHead(response.status, headers).end(body);
    return;
  }
  res.writeHead(response.status, headers);
  for (let chunk: Uint8Array | undefined = first!, queued: Uint8Array | undefined = second; chunk; ) {
    // Wait while the socket is full; stop (and drop what is left) once the client has gone.
    if (res.destroyed || (!res.write(chunk) && !(await drained(res)))) return void reader!.cancel().catch(() => {});
    [chunk, queued] = [queued ?? (await nextChunk(reader!)), undefined];
  }
  res.end();
}

async function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<Uint8Array | undefined> {
  const next = await reader.read();
  return next.done ? undefined : next.value;
}

/** Resolves true once `res` can take more, false if it closes first. */
function drained(res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (ok: boolean): void => (res.off('drain', onDrain).off('close', onClose), resolve(ok));
    const onDrain = (): void => done(true);
    const onClose = (): void => done(false);
    res.on('drain', onDrain).on('close', onClose);
  });
}

/** The `http.createServer` options for {@link NodeServeOptions}, and the idle `timeout`. */
export function nodeServerOptions(options: NodeServeOptions) {
  const { requestTimeout = 60_000, idleTimeout = 60_000, keepAliveTimeout = 5_000 } = options;
  // Node refuses a headers timeout longer than the request timeout.
  const headersTimeout = Math.min(options.headersTimeout ?? 10_000, requestTimeout);
  // Node checks the first two only this often (default 30 s): often enough to keep them.
  const connectionsCheckingInterval = Math.max(100, Math.min(1_000, headersTimeout, requestTimeout));
  return { headersTimeout, requestTimeout, keepAliveTimeout, connectionsCheckingInterval, timeout: idleTimeout };
}
