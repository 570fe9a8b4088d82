import type { SyncContext } from '../context/context.js';
import { isDraining } from '../context/drain.js';
import { checkContext } from '../context/state.js';
import { HTTPError } from '../base/errors.js';
import { identify, resolveSpace, respond } from './prepare.js';
import { pokeTokenOf, userOfPokeToken } from './poke-token.js';
import { type Reply, toResponse } from '../base/reply.js';
import { fitsUTF8 } from '../base/utf8.js';
import type { Listen } from '../poke/hub.js';
import { Prefixes } from '../sync/version/prefixes.js';
import type { Limits } from '../sync/transactions/limits.js';

/**
 * The poke endpoint: a `GET` answered with a Server-Sent Events stream that says `poke` each
 * time the request's space changes, so its clients pull at once instead of at their next
 * interval. A poke carries no data. Checked with the same `authenticate` and `space` as pull
 * and push; a browser's `EventSource` sends no `Authorization` header, so an app that uses one
 * reads a cookie or a query parameter in `authenticate` (`viewsync/client` sends the header).
 * `?clientGroupID=` and `?topic=` (repeatable) narrow what the stream is poked for (see the poke
 * hub's `Listen`). Never rejects.
 *
 * @example
 * const ctx = createContext({ storage, mutators }); // once, at startup
 * const response = await handlePoke(request, ctx);
 */
export async function handlePoke(request: Request, ctx: SyncContext): Promise<Response> {
  return toResponse(await pokeReply(request, ctx));
}

/** {@link handlePoke}, answering with a {@link Reply}. */
export function pokeReply(request: Request, ctx: SyncContext): Promise<Reply> {
  checkContext(ctx);
  return respond(request, ctx, async () => {
    if (ctx.pokes === false) throw new HTTPError(404, 'Pokes are turned off on this server (pokes: false)');
    if (request.method !== 'GET') throw new HTTPError(405, `${request.method} is not allowed on the poke endpoint; use GET`, { headers: { allow: 'GET' } });
    // Returned, not thrown: a drain's refusal is an answer, not a failure for onError to hear of
    // (every stream opened during a deploy would log a line).
    if (isDraining(ctx)) return shuttingDown().toReply();
    // A poke token in the URL stands for the Authorization header an EventSource cannot send.
    const token = pokeTokenOf(request, ctx);
    const userID = token === undefined ? await identify(request, ctx) : await userOfPokeToken(ctx, token);
    const space = await resolveSpace(request, ctx, userID, ctx.limits);
    const body = await ctx.hub!.open(space, userID, listenOf(request, ctx.limits));
    // A drain that began while this stream was opening did not end it, and nothing else would:
    // the server would wait for it until its stop timeout.
    if (isDraining(ctx)) {
      await body.cancel();
      return shuttingDown().toReply();
    }
    return { status: 200, headers: STREAM_HEADERS, body };
  });
}

/**
 * What the stream asks to be poked for, from its query: `clientGroupID` (the group it serves,
 * which `connectPokes` sends) and `topic`, repeated (key prefixes). Checked like a pull's IDs and
 * a view's prefixes: a bad one is a 400, never a stream that hears less than it should.
 */
function listenOf(request: Request, limits: Pick<Limits, 'idBytes' | 'keyBytes'>): Listen {
  const query = new URL(request.url).searchParams;
  const group = query.get('clientGroupID') ?? undefined;
  if (group !== undefined && (group === '' || !fitsUTF8(group, limits.idBytes))) {
    throw new HTTPError(400, `clientGroupID must be 1 to ${limits.idBytes} bytes (limits.idBytes)`);
  }
  const topics = query.getAll('topic');
  if (topics.length > MAX_TOPICS) throw new HTTPError(400, `A poke stream may name at most ${MAX_TOPICS} topics, got ${topics.length}`);
  const long = topics.find((topic) => !fitsUTF8(topic, limits.keyBytes));
  if (long !== undefined) throw new HTTPError(400, `A topic is a key prefix, at most ${limits.keyBytes} bytes (limits.keyBytes)`);
  return { group, topics: topics.length === 0 ? undefined : Prefixes.canonical(topics) };
}

/** Topics one stream may name: enough for the channels of a page. */
const MAX_TOPICS = 100;

const shuttingDown = () => new HTTPError(503, 'This server is shutting down; reconnect to another', { headers: { 'retry-after': '1' } });

const STREAM_HEADERS = {
  'content-type': 'text/event-stream',
  // no-transform: a compressing proxy would hold pokes back to fill its buffer.
  'cache-control': 'no-cache, no-transform',
  // nginx buffers responses unless told not to.
  'x-accel-buffering': 'no',
  // A stream the server ends (its age, a full server, a drain) lets its connection go too: kept
  // alive, a client that stopped reading would hold it for the keep-alive timeout more.
  connection: 'close',
};
