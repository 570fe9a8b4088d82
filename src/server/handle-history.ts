import type { SyncContext } from '../context/context.js';
import { checkContext } from '../context/state.js';
import { HTTPError } from '../base/errors.js';
import { json, type Reply, toResponse } from '../base/reply.js';
import { fitsUTF8 } from '../base/utf8.js';
import { readAsOf, readHistoryPage } from '../sync/history/history-reads.js';
import { HistoryGoneError } from '../sync/history/log-reads.js';
import { respond } from './prepare.js';
import { checkServerSecret } from './server-secret.js';

/**
 * A space's history over HTTP, for the rest of the app's backend (a support tool, an audit
 * page): `GET …/history?space=<space>&version=<v>[&prefix=][&after=<key>][&limit=]`, the space as
 * of a version (`at`), or, without `version`, `GET …/history?space=<space>[&key=|&prefix=]
 * [&after=<version>][&limit=]`, the changes of a key, a prefix or the space (`readHistory`). JSON
 * pages: `more` says there is more, read on with `after=` the page's `next` (a key) or `version`.
 * Opened by the server secret only, as `GET …/changes` is (404 without one, 401 otherwise); a
 * version history no longer keeps is 410. Restores, reverts and erasures are not served: they are
 * an operator's acts, done from the app's backend or the CLI, and a leaked read secret should
 * never be enough to rewrite or destroy a space.
 */
export async function handleHistory(request: Request, ctx: SyncContext): Promise<Response> {
  return toResponse(await historyReply(request, ctx));
}

/** {@link handleHistory}, answering with a {@link Reply}. */
export function historyReply(request: Request, ctx: SyncContext): Promise<Reply> {
  checkContext(ctx);
  return respond(request, ctx, async () => {
    checkServerSecret(request, ctx, "A space's history");
    const query = params(new URL(request.url).searchParams);
    const space = query.space ?? '';
    if (!fitsUTF8(space, ctx.limits.idBytes)) throw new HTTPError(400, `space is longer than ${ctx.limits.idBytes} bytes (limits.idBytes)`);
    const limit = whole(query.limit, 'limit', 1, MAX_LIMIT) ?? DEFAULT_LIMIT;
    try {
      if (query.version !== undefined) {
        if (query.key !== undefined) throw new HTTPError(400, 'key is for a history of changes (without version); a space as of a version takes prefix');
        const version = whole(query.version, 'version', 0, Number.MAX_SAFE_INTEGER)!;
        const page = await readAsOf(ctx.storage, space, version, {
          limit,
          ...(query.prefix !== undefined && { prefix: query.prefix }),
          ...(query.after !== undefined && { after: query.after }),
        });
        return json(page, 200, { 'cache-control': 'no-store' });
      }
      if (query.key !== undefined && query.prefix !== undefined) throw new HTTPError(400, 'Give key or prefix, not both');
      const after = whole(query.after, 'after', 0, Number.MAX_SAFE_INTEGER);
      const page = await readHistoryPage(ctx.storage, space, {
        limit,
        ...(query.key !== undefined && { key: query.key }),
        ...(query.prefix !== undefined && { prefix: query.prefix }),
        ...(after !== undefined && { after }),
      });
      return json(page, 200, { 'cache-control': 'no-store' });
    } catch (error) {
      if (error instanceof HistoryGoneError) throw new HTTPError(410, error.message);
      throw error;
    }
  });
}

/** What one page holds unless `limit` says otherwise, and the most it may say. */
const DEFAULT_LIMIT = 1_000;
const MAX_LIMIT = 10_000;

const NAMES = ['space', 'version', 'key', 'prefix', 'after', 'limit'] as const;
type Params = Partial<Record<(typeof NAMES)[number], string>>;

/**
 * The query's parameters, each at most once. An unknown one is refused rather than ignored: a
 * misspelt `version` would otherwise answer the space's changes, not the space as of it.
 */
function params(search: URLSearchParams): Params {
  const found: Params = {};
  for (const [name, value] of search) {
    if (!(NAMES as readonly string[]).includes(name))
      throw new HTTPError(400, `history takes no parameter ${JSON.stringify(name.slice(0, 40))}: it takes ${NAMES.join(', ')}`);
    if (found[name as keyof Params] !== undefined) throw new HTTPError(400, `${name} is given twice`);
    found[name as keyof Params] = value;
  }
  return found;
}

/** A whole-number parameter from `min` to `max`, or undefined when absent. */
function whole(text: string | undefined, name: string, min: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const value = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!(value >= min && value <= max))
    throw new HTTPError(400, `${name} must be a whole number from ${min} to ${max.toLocaleString('en-US')}, got ${JSON.stringify(text.slice(0, 40))}`);
  return value;
}
