import type { SyncContext } from './context.js';
import { corsHeaders } from './cors.js';
import { HTTPError } from './errors.js';
import { handlePull } from './handle-pull.js';
import { handlePush } from './handle-push.js';
import { respond } from './prepare.js';

/**
 * One fetch handler for both endpoints, the thing to mount: `POST` to a path ending in `/pull`
 * or `/push` goes to {@link handlePull} or {@link handlePush}, `OPTIONS` answers a CORS
 * preflight, any other method is 405 and any other path 404. Never rejects.
 *
 * @example
 * export default { fetch: (request: Request) => handleRequest(request, ctx) };
 */
export async function handleRequest(request: Request, ctx: SyncContext): Promise<Response> {
  const response = await respond(request, ctx, async () => {
    const path = new URL(request.url).pathname;
    const handler = path.endsWith('/pull') ? handlePull : path.endsWith('/push') ? handlePush : undefined;
    if (handler === undefined) throw new HTTPError(404, `Nothing is served at ${path}; POST to a path ending in /pull or /push`);
    if (request.method === 'OPTIONS' && ctx.cors !== false) {
      // Without an Origin it is no preflight, just a question about the resource.
      if (!request.headers.has('origin')) return new Response(null, { status: 204, headers: { allow: 'POST, OPTIONS' } });
      const headers = corsHeaders(request, ctx.cors, true);
      if (headers === null) throw new HTTPError(403, `Origin ${request.headers.get('origin') ?? '(none)'} may not call this server`);
      return new Response(null, { status: 204, headers });
    }
    if (request.method !== 'POST') {
      throw new HTTPError(405, `${request.method} is not allowed; use POST`, { headers: { allow: ctx.cors === false ? 'POST' : 'POST, OPTIONS' } });
    }
    return handler(request, ctx);
  });
  if (request.method !== 'OPTIONS') {
    for (const [name, value] of Object.entries(corsHeaders(request, ctx.cors, false) ?? {})) response.headers.set(name, value);
  }
  return response;
}
