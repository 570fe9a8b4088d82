import { HTTPError } from '../base/errors.js';

/**
 * What keeps other sites out of the inspector, besides its SameSite=Strict cookie: every API
 * request carries a header no cross-site form or plain link can set (`x-viewsync-inspector`), and
 * every POST comes from a page of this server (its `Origin`, and `Sec-Fetch-Site` where the
 * browser sends it). A POST without an `Origin` is refused: every browser sends one (`null` when
 * a referrer policy hides it, taken only with `Sec-Fetch-Site: same-origin`).
 */

/** The header the page sends with every API request. */
export const API_HEADER = 'x-viewsync-inspector';

/** Throws 403 unless `request` (a POST) comes from a page of this server. */
export function checkSameOrigin(request: Request): void {
  const site = request.headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin')
    throw new HTTPError(403, `The inspector takes actions from its own pages only (this came from a ${site.slice(0, 20)} page)`);
  const origin = request.headers.get('origin');
  // A page whose referrer policy hides its origin sends `Origin: null`; the browser's own Sec-Fetch-Site then says where it came from.
  if (origin === 'null' && site === 'same-origin') return;
  // The host alone: behind a proxy that ends TLS, the page's https origin reaches the server as http.
  if (origin === null || !URL.canParse(origin) || new URL(origin).host !== new URL(request.url).host) {
    throw new HTTPError(
      403,
      `The inspector takes actions from its own pages only (Origin ${origin === null ? 'missing' : JSON.stringify(origin.slice(0, 100))})`,
    );
  }
}

/** Throws 403 unless an API request carries {@link API_HEADER}. */
export function checkAPIHeader(request: Request): void {
  if (request.headers.get(API_HEADER) !== '1') throw new HTTPError(403, `The inspector's API is for its page: send ${API_HEADER}: 1`);
}

/** The headers of every inspector answer: nothing framed, sniffed, cached or told where it came from, and no script but the page's own. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // Not no-referrer: under it Chromium sends `Origin: null` with the page's own POSTs.
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
};
