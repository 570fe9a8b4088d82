import { sameText } from '../base/constant-time.js';
import { base64url } from '../sync/version/base64url.js';

/**
 * The inspector's sessions: a login trades the secret for a cookie holding an expiry and its
 * HMAC under the secret. Nothing is kept on the server, so any instance with the same secret
 * accepts it (edge functions, several processes), and changing the secret ends every session.
 * HttpOnly (no script reads it), SameSite=Strict (no other site's page sends it), Secure over
 * https, and scoped to the inspector's path.
 */

/** The cookie's name. */
export const COOKIE = 'viewsync_inspector';

/** How long a session lasts: 12 hours. */
export const SESSION_MS = 12 * 60 * 60 * 1000;

/** Signs sessions with one secret; its key is imported once. */
export class Sessions {
  readonly #key: Promise<CryptoKey>;

  constructor(secret: string) {
    this.#key = crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  }

  /** A `Set-Cookie` value for a new session, made at `now`. */
  async open(now: number, base: string, secure: boolean): Promise<string> {
    const expires = now + SESSION_MS;
    return cookie(`${expires}.${await this.#sign(expires)}`, base, secure, SESSION_MS / 1000);
  }

  /** Whether `request` carries a session that is signed and not expired at `now`. */
  async holds(request: Request, now: number): Promise<boolean> {
    const token = cookieOf(request.headers.get('cookie'), COOKIE);
    const dot = token?.indexOf('.') ?? -1;
    if (token === undefined || dot === -1 || token.length > 200) return false;
    const expires = Number(token.slice(0, dot));
    if (!Number.isSafeInteger(expires) || expires <= now || expires > now + SESSION_MS) return false;
    // The open page asks every second with the same cookie: its signature is checked once.
    if (token === this.#checked) return true;
    const good = sameText(token.slice(dot + 1), await this.#sign(expires));
    if (good) this.#checked = token;
    return good;
  }

  /** The last token found signed (its expiry is checked at each use). */
  #checked: string | undefined;

  async #sign(expires: number): Promise<string> {
    const mac = await crypto.subtle.sign('HMAC', await this.#key, new TextEncoder().encode(`viewsync inspector session ${expires}`));
    return base64url(new Uint8Array(mac));
  }
}

/** The `Set-Cookie` value that ends a session. */
export function closed(base: string, secure: boolean): string {
  return cookie('', base, secure, 0);
}

function cookie(value: string, base: string, secure: boolean, maxAge: number): string {
  // A path may hold `;` or `,` unencoded, which would end the attribute and widen the cookie's scope: encoded, as a browser compares them.
  const path = base.replace(/[;,\s]/g, encodeURIComponent);
  return `${COOKIE}=${value}; Path=${path}/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** The value of cookie `name` in a `Cookie` header. */
function cookieOf(header: string | null, name: string): string | undefined {
  if (header === null) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq !== -1 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
