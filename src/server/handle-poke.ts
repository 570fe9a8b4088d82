import { defaultNotifier, type Notifier } from '../poke/notifier.js';
import { PokeHub } from '../poke/hub.js';
import { resolveLimits } from '../sync/limits.js';
import { type ErrorInfo, type SyncContext, reportError } from './context.js';
import { isDraining } from './drain.js';
import { HTTPError } from './errors.js';
import { identify, resolveSpace, respond } from './prepare.js';
import { type Reply, toResponse } from './reply.js';

/**
 * The poke endpoint: a `GET` answered with a Server-Sent Events stream that says `poke` each
 * time the request's space changes, so its clients pull at once instead of at their next
 * interval. A poke carries no data. Checked with the same `authenticate` and `space` as pull
 * and push; a browser's `EventSource` sends no `Authorization` header, so an app that uses one
 * reads a cookie or a query parameter in `authenticate` (`viewsync/client` sends the header).
 * Never rejects.
 *
 * @example
 * const response = await handlePoke(request, { storage, mutators });
 */
export async function handlePoke(request: Request, ctx: SyncContext): Promise<Response> {
  return toResponse(await pokeReply(request, ctx));
}

/** {@link handlePoke}, answering with a {@link Reply}. */
export function pokeReply(request: Request, ctx: SyncContext): Promise<Reply> {
  return respond(request, ctx, async () => {
    if (ctx.pokes === false) throw new HTTPError(404, 'Pokes are turned off on this server (pokes: false)');
    if (request.method !== 'GET') throw new HTTPError(405, `${request.method} is not allowed on the poke endpoint; use GET`, { headers: { allow: 'GET' } });
    if (isDraining(ctx)) throw shuttingDown();
    const userID = await identify(request, ctx);
    const space = await resolveSpace(request, ctx, userID, resolveLimits(ctx.limits));
    const body = await hubOf(ctx).open(space, userID);
    // A drain that began while this stream was opening did not end it, and nothing else would:
    // the server would wait for it until its stop timeout.
    if (isDraining(ctx)) {
      await body.cancel();
      throw shuttingDown();
    }
    return { status: 200, headers: STREAM_HEADERS, body };
  });
}

/** Tells `space`'s poke streams, on every instance the notifier reaches, that it changed. */
export function announce(ctx: SyncContext, space: string, info: ErrorInfo): void {
  if (ctx.pokes === false) return;
  const failed = (error: unknown) => reportError(ctx, error, info);
  try {
    const sent = notifierOf(ctx).notify(space);
    // The push is committed whatever happens here: a lost poke only delays clients to their next pull.
    if (sent !== undefined) sent.catch(failed);
  } catch (error) {
    failed(error);
  }
}

/** The poke streams of `ctx`, made on first use. */
export function hubOf(ctx: SyncContext): PokeHub {
  let hub = hubs.get(ctx);
  if (hub === undefined) hubs.set(ctx, (hub = new PokeHub(notifierOf(ctx), ctx.pokes || {})));
  return hub;
}

function notifierOf(ctx: SyncContext): Notifier {
  return (ctx.pokes && ctx.pokes.notifier) || defaultNotifier(ctx.storage);
}

const hubs = new WeakMap<SyncContext, PokeHub>();

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
