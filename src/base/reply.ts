/**
 * An answer before it is a Fetch `Response`. The handlers build these and turn them into a
 * `Response` at the edge; the Node adapter writes them straight to its socket instead, since
 * making a `Response` (and its body stream) costs more there than the rest of a small pull.
 */
export interface Reply {
  status: number;
  headers: Record<string, string>;
  /** JSON text; a stream, for a long pull; or none. */
  body: string | ReadableStream<Uint8Array> | null;
}

/** A JSON reply. */
export function json(body: unknown, status = 200, headers: Readonly<Record<string, string>> = {}): Reply {
  return { status, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

/** `reply` as a Fetch `Response`. */
export function toResponse(reply: Reply): Response {
  return new Response(reply.body, { status: reply.status, headers: reply.headers });
}
