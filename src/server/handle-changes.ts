import type { SyncContext } from '../context/context.js';
import { checkContext } from '../context/state.js';
import { HTTPError } from '../base/errors.js';
import { json, type Reply, toResponse } from '../base/reply.js';
import { fitsUTF8 } from '../base/utf8.js';
import { ChangeCursorError, ChangesGoneError, type FeedPage, MAX_LIMIT, readSpaceFeed } from '../sync/feed/feed-pages.js';
import { readStoreFeed } from '../sync/feed/store-feed.js';
import { allSpaces } from '../context/collect-garbage.js';
import { respond } from './prepare.js';
import { checkServerSecret } from './server-secret.js';

/**
 * The change feed over HTTP, for the rest of the app's backend (a search indexer, a warehouse
 * loader): `GET …/changes?space=<space>&after=<cursor>[&limit=<n>][&waitMs=<ms>]`, answered
 * with a page of `readChanges` as JSON, or `GET …/changes?all&after=<store cursor>`, a page of
 * `readAllChanges`. Opened by the server secret `changes.secret`, sent as
 * `Authorization: Bearer <secret>`, never by a user's auth: the feed holds every user's data.
 * Without that secret configured it answers 404. `waitMs` (at most 30,000) holds an empty answer
 * until a change comes or the time is up: a long poll. A cursor the log no longer covers is 410,
 * with what to do in the message; a malformed one 400.
 */
export async function handleChanges(request: Request, ctx: SyncContext): Promise<Response> {
  return toResponse(await changesReply(request, ctx));
}

/** {@link handleChanges}, answering with a {@link Reply}. */
export function changesReply(request: Request, ctx: SyncContext): Promise<Reply> {
  checkContext(ctx);
  return respond(request, ctx, async () => {
    checkServerSecret(request, ctx, 'The change feed');
    const query = new URL(request.url).searchParams;
    const space = query.get('space') ?? '';
    if (!fitsUTF8(space, ctx.limits.idBytes)) throw new HTTPError(400, `space is longer than ${ctx.limits.idBytes} bytes (limits.idBytes)`);
    const limit = whole(query.get('limit'), 'limit', MAX_LIMIT);
    const waitMs = whole(query.get('waitMs'), 'waitMs', MAX_WAIT_MS) ?? 0;
    try {
      // Every space: no long poll (a change anywhere would have to wake it).
      if (query.has('all'))
        return json(await readStoreFeed(ctx.storage, await allSpaces(ctx.storage), query.get('after') ?? undefined, limit), 200, {
          'cache-control': 'no-store',
        });
      const read = () => readSpaceFeed(ctx.storage, space, query.get('after') ?? '0', limit);
      const page = waitMs > 0 ? await waited(ctx, space, read, waitMs, request.signal) : await read();
      return json(page, 200, { 'cache-control': 'no-store' });
    } catch (error) {
      if (error instanceof ChangeCursorError) throw new HTTPError(400, error.message);
      if (error instanceof ChangesGoneError) throw new HTTPError(410, error.message);
      throw error;
    }
  });
}

/** Reads; when there is nothing, waits for a change of `space` (or `ms`) and reads again. */
async function waited(ctx: SyncContext, space: string, read: () => Promise<FeedPage>, ms: number, signal: AbortSignal): Promise<FeedPage> {
  let noticed!: () => void;
  const notice = new Promise<void>((resolve) => (noticed = resolve));
  const unsubscribe = await ctx.notifier.subscribe(space, () => noticed());
  try {
    const first = await read();
    if (first.changes.length > 0) return first;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const abort = () => noticed();
    signal.addEventListener('abort', abort);
    await Promise.race([notice, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    clearTimeout(timer);
    signal.removeEventListener('abort', abort);
    return await read();
  } finally {
    unsubscribe();
  }
}

/** A whole-number query parameter from 1 (0 for `waitMs`) to `max`, or undefined when absent. */
function whole(text: string | null, name: string, max: number): number | undefined {
  if (text === null) return undefined;
  const value = /^\d{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(value >= (name === 'waitMs' ? 0 : 1) && value <= max))
    throw new HTTPError(400, `${name} must be a whole number up to ${max}, got ${JSON.stringify(text.slice(0, 40))}`);
  return value;
}

const MAX_WAIT_MS = 30_000;
