import type { SyncContext } from '../context/context.js';
import { corsHeaders } from './cors.js';
import { HTTPError } from '../base/errors.js';
import { healthReply } from './health.js';
import { pullReply } from './handle-pull.js';
import { pokeReply } from './handle-poke.js';
import { pokeTokenReply } from './poke-token.js';
import { pushReply } from './handle-push.js';
import { changesReply } from './handle-changes.js';
import { historyReply } from './handle-history.js';
import { respond } from './prepare.js';
import { type Reply, toResponse } from '../base/reply.js';
import { checkContext } from '../context/state.js';

/**
 * One fetch handler for every endpoint, the thing to mount: `POST` to a path ending in `/pull`
 * or `/push` goes to {@link handlePull} or {@link handlePush}, `GET` of a path ending in `/poke`
 * to {@link handlePoke}, of one ending in `/changes` to {@link handleChanges} (the change feed, with the server secret), of one ending in `/history` to {@link handleHistory} (a space's history, with the same secret) and of one ending in `/health` to {@link checkHealth} (200 or 503), a path with an `/_inspect` segment to the inspector when the context has one (`SyncOptions.inspector`), `OPTIONS` answers a CORS preflight, any other method is 405 and any
 * other path 404. Never rejects.
 *
 * @example
 * export default { fetch: (request: Request) => handleRequest(request, ctx) };
 */
export async function handleRequest(request: Request, ctx: SyncContext): Promise<Response> {
  checkContext(ctx);
  return toResponse(await requestReply(request, ctx));
}

/** {@link handleRequest}, answering with a {@link Reply}: what the Node adapter serves. */
export async function requestReply(request: Request, ctx: SyncContext): Promise<Reply> {
  const path = pathOf(request.url);
  const door = ctx.state.inspectorDoor;
  if (door !== undefined) {
    // The inspector's pages and API, under `…/_inspect/`: no CORS headers, so no other site's page may read them.
    const base = inspectorBase(path);
    if (base !== undefined) return door(request, ctx, base);
  }
  const route = ROUTES.find(({ suffix }) => path.endsWith(suffix));
  // A route answers every failure of its own requests (respond wraps each once, in the route):
  // here only what no route serves is answered, a preflight, a wrong method, a path unknown.
  const reply =
    route !== undefined && request.method === route.method
      ? await route.reply(request, ctx)
      : await respond(request, ctx, async () => unrouted(request, ctx, path, route));
  if (request.method !== 'OPTIONS') Object.assign(reply.headers, corsHeaders(request, ctx.cors));
  return reply;
}

/** The answer to a request no route takes: a CORS preflight, or a refusal (thrown). */
function unrouted(request: Request, ctx: SyncContext, path: string, route: (typeof ROUTES)[number] | undefined): Reply {
  if (route === undefined)
    throw new HTTPError(
      404,
      `Nothing is served at ${path}; POST to a path ending in /pull or /push, or GET one ending in /poke, /poke-token, /changes, /history or /health`,
    );
  const allow = ctx.cors === false ? route.method : `${route.method}, OPTIONS`;
  if (request.method === 'OPTIONS' && ctx.cors !== false) {
    // Without an Origin it is no preflight, just a question about the resource.
    if (!request.headers.has('origin')) return { status: 204, headers: { allow }, body: null };
    const headers = corsHeaders(request, ctx.cors, route.method);
    if (headers === null) throw new HTTPError(403, `Origin ${request.headers.get('origin') ?? '(none)'} may not call this server`);
    return { status: 204, headers, body: null };
  }
  throw new HTTPError(405, `${request.method} is not allowed; use ${route.method}`, { headers: { allow } });
}

/** The path up to and including its `/_inspect` segment, when it has one. */
function inspectorBase(path: string): string | undefined {
  const at = path.indexOf(INSPECT);
  if (at === -1) return undefined;
  const end = at + INSPECT.length;
  return end === path.length || path.charCodeAt(end) === SLASH ? path.slice(0, end) : undefined;
}

const INSPECT = '/_inspect';
const SLASH = 0x2f;

/** The path of `url`. The last one is kept: requests go to a few URLs over and over, and parsing one costs more than routing it. */
function pathOf(url: string): string {
  if (url !== lastURL) {
    lastPath = new URL(url).pathname;
    lastURL = url;
  }
  return lastPath;
}

let lastURL = '';
let lastPath = '';

const ROUTES = [
  { suffix: '/pull', method: 'POST', reply: pullReply },
  { suffix: '/push', method: 'POST', reply: pushReply },
  { suffix: '/poke', method: 'GET', reply: pokeReply },
  { suffix: '/poke-token', method: 'GET', reply: pokeTokenReply },
  { suffix: '/changes', method: 'GET', reply: changesReply },
  { suffix: '/history', method: 'GET', reply: historyReply },
  // The health check answers its store's failures itself; anything else it throws is answered here.
  { suffix: '/health', method: 'GET', reply: (request: Request, ctx: SyncContext) => respond(request, ctx, () => healthReply(request, ctx)) },
] as const;
