import type { SyncContext } from '../context/context.js';
import { HTTPError } from '../base/errors.js';
import { sameText } from '../base/constant-time.js';

/**
 * The door of the endpoints for the app's own backend (the change feed, a space's history): the
 * server secret `changes.secret`, sent as `Authorization: Bearer <secret>`, never a user's auth,
 * since they answer with every user's data. Without a secret configured, `what` is not served
 * (404); any other header is 401.
 */
export function checkServerSecret(request: Request, ctx: SyncContext, what: string): void {
  const secret = ctx.changes?.secret;
  if (secret === undefined) throw new HTTPError(404, `${what} is not served over HTTP here: set changes.secret to serve it`);
  if (!sameText(request.headers.get('authorization') ?? '', `Bearer ${secret}`)) {
    throw new HTTPError(401, `${what} needs the server secret: Authorization: Bearer <changes.secret>`, { headers: { 'www-authenticate': 'Bearer' } });
  }
}
