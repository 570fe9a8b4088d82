import { Buffer } from 'node:buffer';
import { type BrotliOptions, brotliCompress, constants, createBrotliCompress, createGzip, gzip, type ZlibOptions } from 'node:zlib';
import type { SyncContext } from '../src/index.js';
import { requestReply } from '../src/server/handle-request.js';
import type { Reply } from '../src/base/reply.js';
import { drained } from '../src/base/drained.js';

// Response compression for the Node, Bun and Deno servers (Deno.serve can compress, but its
// brotli is slow: see deno.ts); Cloudflare's edge compresses Workers' answers itself. node:zlib
// everywhere: Bun and Deno implement it, and only it takes a brotli quality (a CompressionStream
// would run brotli at its slow default).

/** How a server compresses its answers; `compression: false` turns it off. */
export interface CompressionOptions {
  /** Answers shorter than this many bytes go as they are: compressing them saves less than it costs. Default: 1024. */
  threshold?: number;
  /** Brotli quality, 0 to 11. Default: 2 (brotli's own 11 compresses a 12 MB pull at a few MB/s). */
  brotliQuality?: number;
  /** gzip level, 1 to 9. Default: 4 (a large pull comes out within half a point of level 6's size, at less than half its cost). */
  gzipLevel?: number;
  /** The codings offered, best first: a request that weighs them alike gets the first. Default: br, then gzip; in Bun and Deno gzip, then br (their brotli costs more, or leaves more). */
  encodings?: readonly Encoding[];
}

/** The content codings offered, in the server's order of preference. */
export type Encoding = 'br' | 'gzip';

/** A reply as it goes out: its body may be compressed bytes. */
export interface EncodedReply extends Omit<Reply, 'body'> {
  body: string | Uint8Array | ReadableStream<Uint8Array> | null;
}

/** Options with their defaults filled in, or undefined when compression is off. */
export function compressionSettings(
  options: false | CompressionOptions | undefined,
  encodings: readonly Encoding[] = ['br', 'gzip'],
): Required<CompressionOptions> | undefined {
  if (options === false) return undefined;
  const settings = { threshold: 1024, brotliQuality: 2, gzipLevel: 4, encodings, ...options };
  // Checked here, when the server starts: zlib would refuse them at the first large answer, and
  // every such answer would then fail, the client's connection dropped.
  checkRange('gzipLevel', settings.gzipLevel, 1, 9);
  checkRange('brotliQuality', settings.brotliQuality, 0, 11);
  return settings;
}

/**
 * `reply`, compressed when the request accepts br or gzip (`acceptEncoding` is its header) and
 * the body is text of at least `threshold` bytes. A text body is compressed whole, off the main
 * thread, and keeps a Content-Length; a stream (a long pull) is compressed as it is read. Only
 * text being compressed makes a promise: a small answer, the common one, is not held up for one.
 */
export function compressReply(
  reply: Reply,
  acceptEncoding: string | null | undefined,
  settings: Required<CompressionOptions>,
): EncodedReply | Promise<EncodedReply> {
  const { body, headers } = reply;
  if (body === null || !compressible(headers)) return reply;
  if (typeof body === 'string' && body.length < settings.threshold) return reply;
  // Whether or not this one is compressed, the answer depends on the header: caches must know.
  const vary = headers.vary ? `${headers.vary}, Accept-Encoding` : 'Accept-Encoding';
  const encoding = negotiateEncoding(acceptEncoding, settings.encodings);
  if (encoding === undefined) return { ...reply, headers: { ...headers, vary } };
  const encoded: Record<string, string> = { ...headers, vary, 'content-encoding': encoding };
  delete encoded['content-length'];
  if (typeof body !== 'string') return { status: reply.status, headers: encoded, body: compressStream(body, encoding, settings) };
  // A body under the threshold in bytes (it was over in characters only) still goes as it is.
  const bytes = Buffer.from(body);
  if (bytes.byteLength < settings.threshold) return reply;
  return compressBytes(bytes, encoding, settings).then((compressed) => ({ status: reply.status, headers: encoded, body: compressed }));
}

/** `handleRequest`, its answer compressed as {@link compressReply} does: for Fetch servers (Bun's). */
export async function compressedResponse(request: Request, ctx: SyncContext, settings: Required<CompressionOptions>): Promise<Response> {
  const { status, headers, body } = await compressReply(await requestReply(request, ctx), request.headers.get('accept-encoding'), settings);
  return new Response(body as BodyInit | null, { status, headers });
}

/**
 * The coding to answer with for an `Accept-Encoding` header (RFC 9110, 12.5.3), or undefined
 * for none: of `offered`, the one with the highest q-value (the first on a tie), when it is
 * above 0 and not below identity's. `*` stands for any coding not listed; no header means identity.
 */
export function negotiateEncoding(header: string | null | undefined, offered: readonly Encoding[] = ['br', 'gzip']): Encoding | undefined {
  if (!header) return undefined;
  const q = new Map<string, number>();
  for (const item of header.split(',')) {
    const [coding = '', ...params] = item.split(';').map((part) => part.trim().toLowerCase());
    if (coding === '') continue;
    const name = coding === 'x-gzip' ? 'gzip' : coding;
    const weight = params.find((param) => /^q\s*=/.test(param));
    const value = weight === undefined ? 1 : Number(weight.slice(weight.indexOf('=') + 1).trim());
    // A malformed weight makes no promise either way: the coding is passed over.
    if (!(value >= 0 && value <= 1)) continue;
    q.set(name, Math.max(q.get(name) ?? 0, value));
  }
  const any = q.get('*');
  const weightOf = (coding: string) => q.get(coding) ?? any ?? 0;
  // Identity is always acceptable unless excluded (RFC 9110, 12.5.3); it is preferred only
  // where the header weighs it, by name or by `*`, above the codings.
  const identity = q.get('identity') ?? any ?? 0;
  const best = offered.reduce<Encoding | undefined>((a, b) => (a === undefined || weightOf(b) > weightOf(a) ? b : a), undefined);
  return best !== undefined && weightOf(best) > 0 && weightOf(best) >= identity ? best : undefined;
}

/**
 * JSON and text, but not an event stream: a compressor holds bytes back until it has enough,
 * so a poke would wait in it; and pokes are a few bytes each, with nothing to gain.
 */
function compressible(headers: Readonly<Record<string, string>>): boolean {
  const type = headers['content-type'] ?? '';
  if (headers['content-encoding'] !== undefined || type.startsWith('text/event-stream')) return false;
  return type.startsWith('application/json') || type.startsWith('text/');
}

function zlibOptions(encoding: Encoding, settings: Required<CompressionOptions>, sizeHint?: number): BrotliOptions & ZlibOptions {
  if (encoding === 'gzip') return { level: settings.gzipLevel };
  // A 256 KiB window, not brotli's 4 MiB: a compressor takes in up to twice its window before it
  // gives out anything, which a client that reads nothing would hold; and JSON repeats itself at
  // short range (the benchmark's pull compresses no better with 4 MiB).
  const params: Record<number, number> = {
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    [constants.BROTLI_PARAM_QUALITY]: settings.brotliQuality,
    [constants.BROTLI_PARAM_LGWIN]: 18,
  };
  if (sizeHint !== undefined) params[constants.BROTLI_PARAM_SIZE_HINT] = sizeHint;
  return { params };
}

/** Compresses in libuv's thread pool (Node) or Bun's, not on the thread serving requests. */
function compressBytes(bytes: Buffer, encoding: Encoding, settings: Required<CompressionOptions>): Promise<Uint8Array> {
  const options = zlibOptions(encoding, settings, bytes.byteLength);
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, out: Buffer) => (error ? reject(error) : resolve(out));
    if (encoding === 'br') brotliCompress(bytes, options, done);
    else gzip(bytes, options, done);
  });
}

/**
 * `source` compressed, read only as fast as the result is: the compressor takes a chunk when it
 * has room, and stops producing while the result's queue is full. Cancelling the result (the
 * client went) frees the compressor and cancels `source`; a source that fails fails the result.
 */
export function compressStream(source: ReadableStream<Uint8Array>, encoding: Encoding, settings: Required<CompressionOptions>): ReadableStream<Uint8Array> {
  // Room for a few of the core's slices (64 KiB each): the next is serialised on this thread
  // while the thread pool compresses the last, rather than one after the other.
  const options = { ...zlibOptions(encoding, settings), writableHighWaterMark: 256 * 1024 };
  const zlib = encoding === 'br' ? createBrotliCompress(options) : createGzip(options);
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        zlib.on('data', (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 0) <= 0) zlib.pause();
        });
        zlib.once('end', () => controller.close());
        zlib.once('error', (error) => {
          controller.error(error);
          // Nothing will read the rest: let the source go (when it failed itself, this does nothing).
          void reader.cancel(error).catch(() => {});
        });
        void feed(reader, zlib).catch((error: unknown) => zlib.destroy(error instanceof Error ? error : new Error(String(error))));
      },
      pull() {
        zlib.resume();
      },
      cancel(reason) {
        zlib.destroy();
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
}

type Compressor = ReturnType<typeof createGzip>;

/** Moves `reader`'s chunks into `zlib` while it has room, then ends it; stops once it is destroyed. */
async function feed(reader: ReadableStreamDefaultReader<Uint8Array>, zlib: Compressor): Promise<void> {
  for (;;) {
    const next = await reader.read();
    if (zlib.destroyed) return;
    if (next.done) return void zlib.end();
    if (!zlib.write(next.value) && !(await drained(zlib))) return;
  }
}

function checkRange(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max)
    throw new RangeError(`compression.${name} must be a whole number from ${min} to ${max}; it was ${String(value)}`);
}
