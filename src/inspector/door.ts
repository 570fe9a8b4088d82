import type { InspectorAction, InspectorOptions, SyncContext } from '../context/context.js';
import type { InspectorDoor } from '../context/context.js';
import { reportError } from '../context/context.js';
import { HTTPError, TemporaryError } from '../base/errors.js';
import { json, type Reply } from '../base/reply.js';
import { TokenBuckets } from '../base/token-buckets.js';
import { sameText } from '../base/constant-time.js';
import { BODY_BYTES } from '../base/request-stand-in.js';
import { isTemporary } from '../storage/unreachable.js';
import { checkAPIHeader, checkSameOrigin, PAGE_HEADERS } from './guard.js';
import { closed, Sessions } from './session.js';
import { APP_CSS, APP_JS, INDEX_HTML, LOGIN_HTML } from './ui/assets.js';
import { READS } from './reads.js';
import { ACTIONS } from './actions.js';

/**
 * The inspector's door (`SyncOptions.inspector`): its page, its login and its JSON API, under
 * `<base>/` (a path ending in `/_inspect`). Everything but the page's own files and the login
 * needs the session cookie; every action also a same-origin POST, and is refused in read-only
 * mode; every action, login and refused login is told to `onAction`. Never rejects.
 */
export function inspectorDoor(options: InspectorOptions): InspectorDoor {
  const sessions = new Sessions(options.secret);
  // Logins a second, for all: the secret is long enough that guessing is hopeless, and this keeps a flood of guesses from costing HMACs.
  const logins = new TokenBuckets(5, 20, 1);
  const tell = (action: Omit<InspectorAction, 'at'>) => {
    const told = { ...action, at: Date.now() };
    try {
      if (options.onAction) options.onAction(told);
      else console.info(`viewsync inspector: ${told.action} ${JSON.stringify(told.details)} -> ${told.outcome}`);
    } catch {
      // A broken logger must not break the inspector.
    }
  };

  return async (request, ctx, base) => {
    const rest = new URL(request.url).pathname.slice(base.length);
    try {
      // HEAD is a GET without its body.
      const head = request.method === 'HEAD';
      const reply = await route(head ? new Request(request.url, { headers: request.headers }) : request, ctx, base, rest);
      // A route's own headers win (the page's files may be cached).
      reply.headers = { ...PAGE_HEADERS, ...reply.headers };
      return head ? { ...reply, body: null } : reply;
    } catch (thrown) {
      return failure(thrown, request, ctx);
    }
  };

  async function route(request: Request, ctx: SyncContext, base: string, rest: string): Promise<Reply> {
    const secure = new URL(request.url).protocol === 'https:';
    const signedIn = () => sessions.holds(request, Date.now());
    if (rest === '') return { status: 308, headers: { location: `${base}/` }, body: null };
    if (request.method === 'GET' && rest === '/') return page((await signedIn()) ? INDEX_HTML : LOGIN_HTML.replace('<!--message-->', ''));
    if (request.method === 'GET' && rest === '/app.js') return asset(request, APP_JS, 'text/javascript; charset=utf-8');
    if (request.method === 'GET' && rest === '/app.css') return asset(request, APP_CSS, 'text/css; charset=utf-8');
    if (rest === '/login' && request.method === 'POST') {
      checkSameOrigin(request);
      if (logins.take('', Date.now()) > 0) throw new HTTPError(429, 'Too many logins at once: wait a second', { headers: { 'retry-after': '1' } });
      const secret = new URLSearchParams(await smallText(request)).get('secret') ?? '';
      if (!sameText(secret, options.secret)) {
        tell({ action: 'login-refused', details: {}, outcome: 'wrong secret' });
        return page(LOGIN_HTML.replace('<!--message-->', '<p role="alert" class="error">That is not the inspector secret.</p>'), 401);
      }
      tell({ action: 'login', details: {}, outcome: 'ok' });
      return { status: 303, headers: { location: `${base}/`, 'set-cookie': await sessions.open(Date.now(), base, secure) }, body: null };
    }
    if (rest === '/logout' && request.method === 'POST') {
      checkSameOrigin(request);
      if (await signedIn()) tell({ action: 'logout', details: {}, outcome: 'ok' });
      return { status: 303, headers: { location: `${base}/`, 'set-cookie': closed(base, secure) }, body: null };
    }
    if (rest.startsWith('/api/')) {
      const name = rest.slice('/api/'.length);
      // Own names only: `constructor` or `toString` is no endpoint (Object's would be called with the context).
      const read = request.method === 'GET' && Object.hasOwn(READS, name) ? READS[name] : undefined;
      const act = request.method === 'POST' && Object.hasOwn(ACTIONS, name) ? ACTIONS[name] : undefined;
      if (read === undefined && act === undefined) {
        if (Object.hasOwn(READS, name) || Object.hasOwn(ACTIONS, name))
          throw new HTTPError(405, `${request.method} is not allowed here`, { headers: { allow: Object.hasOwn(READS, name) ? 'GET' : 'POST' } });
        throw new HTTPError(404, `The inspector's API has no ${JSON.stringify(name.slice(0, 100))}`);
      }
      checkAPIHeader(request);
      if (!(await signedIn())) throw new HTTPError(401, 'Log in to the inspector first (the session ended or was never opened)');
      if (read !== undefined) return json(await read(ctx, new URL(request.url).searchParams));
      checkSameOrigin(request);
      if (options.readOnly) throw new HTTPError(403, 'The inspector is read-only here (inspector.readOnly): actions are off');
      return json(await act!(ctx, await jsonBody(request), tell));
    }
    throw new HTTPError(404, `The inspector serves nothing at ${JSON.stringify(rest.slice(0, 100))}`);
  }
}

/** An error as the page reads it: `{error}` with its status; a failure of ours is told to `onError` and answered 500 without its details. */
function failure(thrown: unknown, request: Request, ctx: SyncContext): Reply {
  // A store out of reach for a moment (a lost connection, a failover) is no failure of ours: 503, as the endpoints answer it.
  if (isTemporary(thrown))
    return json({ error: 'The store is unavailable for a moment (a lost connection, or a failover under way): try again' }, 503, {
      'retry-after': '1',
      ...PAGE_HEADERS,
    });
  if (thrown instanceof HTTPError) {
    if (thrown.status >= 500 && !(thrown instanceof TemporaryError)) reportError(ctx, thrown, { request });
    return json({ error: thrown.message }, thrown.status, { ...thrown.headers, ...PAGE_HEADERS });
  }
  reportError(ctx, thrown, { request });
  return json({ error: 'The inspector failed to answer: see the server log' }, 500, PAGE_HEADERS);
}

function page(html: string, status = 200): Reply {
  return { status, headers: { 'content-type': 'text/html; charset=utf-8' }, body: html };
}

/** A file of the page: cached by the browser, asked again each load (`no-cache`) and answered 304 while it is the same. */
function asset(request: Request, text: string, type: string): Reply {
  const etag = etagOf(text);
  const headers = { 'content-type': type, 'cache-control': 'no-cache', etag };
  if (request.headers.get('if-none-match') === etag) return { status: 304, headers, body: null };
  return { status: 200, headers, body: text };
}

/** A file's ETag: a hash of its text (FNV-1a), worked out once per file. */
function etagOf(text: string): string {
  let etag = etags.get(text);
  if (etag === undefined) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    etags.set(text, (etag = `"${(hash >>> 0).toString(36)}-${text.length.toString(36)}"`));
  }
  return etag;
}

const etags = new Map<string, string>();

/** The body of a login or an action: small, read with a bound (a flood of bytes costs nothing). */
async function smallText(request: Request): Promise<string> {
  if (Number(request.headers.get('content-length') ?? 0) > MAX_BODY) throw new HTTPError(413, `An inspector request's body is at most ${MAX_BODY} bytes`);
  // The Node adapter's stand-in holds a small body's bytes, read already (see request-stand-in.ts).
  const read = (request as Partial<Record<typeof BODY_BYTES, Uint8Array>>)[BODY_BYTES];
  if (read !== undefined) {
    if (read.byteLength > MAX_BODY) throw new HTTPError(413, `An inspector request's body is at most ${MAX_BODY} bytes`);
    return new TextDecoder().decode(read);
  }
  const reader = request.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let next = await reader.read(); !next.done; next = await reader.read()) {
    size += next.value.byteLength;
    if (size > MAX_BODY) {
      void reader.cancel().catch(() => {});
      throw new HTTPError(413, `An inspector request's body is at most ${MAX_BODY} bytes`);
    }
    chunks.push(next.value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) bytes.set(chunk, (offset += chunk.byteLength) - chunk.byteLength);
  return new TextDecoder().decode(bytes);
}

/** An action's JSON body: an object. */
async function jsonBody(request: Request): Promise<Record<string, unknown>> {
  const type = request.headers.get('content-type')?.split(';', 1)[0]?.trim().toLowerCase();
  if (type !== 'application/json') throw new HTTPError(415, 'An inspector action is sent as application/json');
  let body: unknown;
  try {
    body = JSON.parse(await smallText(request));
  } catch (error) {
    if (error instanceof HTTPError) throw error;
    throw new HTTPError(400, 'The body is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HTTPError(400, 'The body must be a JSON object');
  return body as Record<string, unknown>;
}

const MAX_BODY = 64 * 1024;
