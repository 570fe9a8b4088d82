import * as v from 'valibot';
import { HTTPError } from '../base/errors.js';
import { BODY_BYTES } from '../base/request-stand-in.js';

/**
 * Reads a JSON request body of at most `maxBytes` bytes. Throws 415 for a content type that is
 * not JSON, or none: a browser sends a cross-site POST without a preflight only with a "simple"
 * content type (none, text/plain, a form), so requiring JSON keeps other sites from making a
 * signed-in user's browser push (the real client always sends it). Throws 413 past the limit
 * (checked on the declared length first, then while streaming, so a lying or absent
 * Content-Length cannot make us buffer more), and 400 for bytes that are not UTF-8 JSON.
 */
export async function readJSONBody(request: Request, maxBytes: number): Promise<unknown> {
  const type = request.headers.get('content-type');
  if (type === null || !isJSONType(type)) {
    const got = type === null ? 'no Content-Type' : `Content-Type ${JSON.stringify(type.slice(0, 100))}`;
    throw new HTTPError(415, `The body must be sent as application/json (got ${got})`);
  }
  const tooLarge = () => new HTTPError(413, `The body is larger than the limit of ${maxBytes} bytes (limits.bodyBytes)`);
  const declared = Number(request.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) throw tooLarge();

  const chunks: Uint8Array[] = [];
  let size = 0;
  // A stand-in's bytes, read already (see request-stand-in.ts).
  const read = (request as Partial<Record<typeof BODY_BYTES, Uint8Array>>)[BODY_BYTES];
  if (read !== undefined) {
    if (read.byteLength > maxBytes) throw tooLarge();
    chunks.push(read);
    size = read.byteLength;
  } else if (declared <= WHOLE_BODY && !request.headers.has('transfer-encoding')) {
    // A small body of a declared length: one native read, much cheaper than a stream's chunks
    // (Bun, Deno). HTTP framing holds it to the declared length; checked again all the same.
    let bytes: Uint8Array;
    try {
      bytes = new Uint8Array(await request.arrayBuffer());
    } catch (error) {
      throw new HTTPError(400, 'The request body could not be read', { cause: error });
    }
    if (bytes.byteLength > maxBytes) throw tooLarge();
    chunks.push(bytes);
    size = bytes.byteLength;
  } else if (request.body !== null) {
    const reader = request.body.getReader();
    try {
      for (let next = await reader.read(); !next.done; next = await reader.read()) {
        size += next.value.byteLength;
        if (size > maxBytes) {
          void reader.cancel().catch(() => {});
          throw tooLarge();
        }
        chunks.push(next.value);
      }
    } catch (error) {
      if (error instanceof HTTPError) throw error;
      throw new HTTPError(400, 'The request body could not be read', { cause: error });
    }
  }

  let text: string;
  try {
    text = UTF8.decode(concat(chunks, size));
  } catch (error) {
    throw new HTTPError(400, 'The body is not valid UTF-8', { cause: error });
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    // Told apart only once parsing failed: trimming copies the body, which a good one need not pay.
    if (text.trim() === '') throw new HTTPError(400, 'The body is empty; send a JSON object');
    throw new HTTPError(400, `The body is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
}

/** One decoder for every body: without `stream`, a decode keeps no state between calls. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Bodies up to this declared length are read whole rather than as a stream. */
const WHOLE_BODY = 1024 * 1024;

/**
 * Validates `body` against a wire schema, or throws 400 naming the first broken field. It stops
 * at the first issue: collecting every issue of a hostile body (two million `{}` mutations)
 * costs seconds and gigabytes, and the answer would be as large.
 */
export function parseBody<TSchema extends v.GenericSchema>(schema: TSchema, body: unknown, what: string): v.InferOutput<TSchema> {
  const result = v.safeParse(schema, body, { abortEarly: true });
  if (result.success) return result.output;
  const issue = result.issues[0];
  // valibot quotes a wrong value whole ("received" a 16 MiB string): keep the answer small.
  const path = shorten(v.getDotPath(issue) ?? '');
  const message = shorten(issue.message);
  throw new HTTPError(400, `Invalid ${what}: ${path ? `${path}: ` : ''}${message}`, { issues: [{ path, message }] });
}

function shorten(text: string): string {
  return text.length <= 200 ? text : `${text.slice(0, 200)}…`;
}

function isJSONType(contentType: string): boolean {
  // What the real client sends, told at once.
  if (contentType === 'application/json') return true;
  const essence = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return essence === 'application/json' || (essence.startsWith('application/') && essence.endsWith('+json'));
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}
