import type { ResolvedCors } from '../context/options-schema.js';

/** The headers the real client sends, plus the spec's neutral spelling of the request ID. */
const ALLOWED_HEADERS = 'authorization, content-type, x-replicache-requestid, x-sync-requestid';

/**
 * CORS headers for a response to `request` (a preflight for a `GET` or a `POST` when
 * `preflightFor` says which), or null when the request comes from an origin that
 * may not call (or from no browser at all, which needs none).
 */
export function corsHeaders(request: Request, options: ResolvedCors | false, preflightFor?: 'GET' | 'POST'): Record<string, string> | null {
  const origin = request.headers.get('origin');
  if (origin === null || options === false) return null;
  const allowed = options.origin;
  let headers: Record<string, string>;
  if (allowed === '*') headers = { 'access-control-allow-origin': '*' };
  else if (typeof allowed === 'function' ? allowed(origin) : allowed.includes(origin)) {
    headers = { 'access-control-allow-origin': origin, vary: 'origin' };
  } else return null;
  if (preflightFor !== undefined) {
    headers['access-control-allow-methods'] = `${preflightFor}, OPTIONS`;
    headers['access-control-allow-headers'] = ALLOWED_HEADERS;
    headers['access-control-max-age'] = String(Math.floor(options.maxAgeMs / 1000));
  }
  return headers;
}
