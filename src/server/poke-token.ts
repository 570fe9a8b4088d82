import type { SyncContext } from '../context/context.js';
import { checkContext } from '../context/state.js';
import { HTTPError } from '../base/errors.js';
import { json, type Reply } from '../base/reply.js';
import { base64url } from '../sync/version/base64url.js';
import { identify, respond } from './prepare.js';

/**
 * A poke token: lets a browser's `EventSource`, which cannot send an `Authorization` header,
 * open its user's poke stream, as `…/poke?poke_token=TOKEN`. Made by the server for the user
 * `authenticate` named (`GET …/poke-token` does it, or call this in an endpoint of your own),
 * signed with `pokes.tokenSecret` (HMAC-SHA256), and good for `pokes.tokenTtlMs` (default one
 * hour): a token that leaks through an access log is soon worthless, and it opens poke streams
 * only, never a pull or a push. Every instance given the same secret accepts it. While a token
 * is good, `authenticate` is not asked again for the streams it opens: a user revoked meanwhile
 * can open poke streams (which carry no data) until it expires.
 *
 * @example
 * const { token } = await pokeToken(ctx, userID);
 * // in the browser: new EventSource(`/sync/poke?poke_token=${encodeURIComponent(token)}`)
 */
export async function pokeToken(ctx: SyncContext, userID: string): Promise<{ token: string; expiresAt: number }> {
  checkContext(ctx);
  if (typeof userID !== 'string') throw new TypeError(`pokeToken: the user ID must be a string, got ${typeof userID}`);
  const key = await keyOf(ctx);
  const expiresAt = ctx.clock() + tokenTtlMs(ctx);
  const payload = base64url(new TextEncoder().encode(JSON.stringify([userID, expiresAt])));
  const signature = new Uint8Array(await crypto.subtle.sign('HMAC', key, signed(payload)));
  const token = `${payload}.${base64url(signature)}`;
  // Refused unread at the stream: a token made for it anyway would fail for ever, unexplained.
  if (token.length > MAX_TOKEN_LENGTH)
    throw new RangeError(
      `pokeToken: the user ID is too long for a poke token (${userID.length} characters; a token holds at most about ${Math.floor((MAX_TOKEN_LENGTH - 60) * 0.75)} bytes of it)`,
    );
  return { token, expiresAt };
}

/**
 * The user a poke token was made for; throws a 401 for a token that is malformed, signed with
 * another secret, or expired. The signature is checked by `crypto.subtle.verify`, in constant time.
 */
export async function userOfPokeToken(ctx: SyncContext, token: string): Promise<string> {
  const refused = (why: string) => new HTTPError(401, `The poke token ${why}: ask for a new one (GET …/poke-token)`);
  if (token.length > MAX_TOKEN_LENGTH) throw refused('is not one of this server');
  const dot = token.indexOf('.');
  const [payload, signature] = [token.slice(0, dot), token.slice(dot + 1)];
  const bytes = dot < 0 ? undefined : fromBase64url(signature);
  if (bytes === undefined || !(await crypto.subtle.verify('HMAC', await keyOf(ctx), bytes, signed(payload)))) throw refused('is not one of this server');
  // Signed here, so well formed; checked all the same, so that nothing signed otherwise with the
  // same secret is taken for a user, or fails open on a non-numeric expiry.
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder().decode(fromBase64url(payload)));
  } catch {
    throw refused('is not one of this server');
  }
  if (!Array.isArray(claims) || claims.length !== 2 || typeof claims[0] !== 'string' || !Number.isFinite(claims[1])) throw refused('is not one of this server');
  if (ctx.clock() >= (claims[1] as number)) throw refused('has expired');
  return claims[0];
}

/** `GET …/poke-token`: a token for the user `authenticate` names, as `{token, expiresAt}`. */
export function pokeTokenReply(request: Request, ctx: SyncContext): Promise<Reply> {
  checkContext(ctx);
  return respond(request, ctx, async () => {
    if (ctx.pokes === false || tokenOptions(ctx).tokenSecret === undefined)
      throw new HTTPError(404, 'Poke tokens are off on this server: set pokes.tokenSecret to serve them');
    if (!ctx.authenticate) throw new HTTPError(404, 'Poke tokens need authenticate: without it every request is anonymous, and a poke stream needs no token');
    const userID = (await identify(request, ctx))!;
    const reply = json(await pokeToken(ctx, userID));
    reply.headers['cache-control'] = 'no-store';
    return reply;
  });
}

/** The token in a poke request's URL, if it carries one and this server makes them. */
export function pokeTokenOf(request: Request, ctx: SyncContext): string | undefined {
  if (tokenOptions(ctx).tokenSecret === undefined) return undefined;
  return new URL(request.url).searchParams.get(TOKEN_PARAMETER) ?? undefined;
}

/** The query parameter a poke request carries its token in. */
export const TOKEN_PARAMETER = 'poke_token';

function tokenOptions(ctx: SyncContext): { tokenSecret?: string | undefined } {
  return ctx.pokes || {};
}

/** How long a token is good for; pokes are on wherever a token is made (keyOf refuses otherwise). */
function tokenTtlMs(ctx: SyncContext): number {
  return ctx.pokes === false ? 0 : ctx.pokes.tokenTtlMs;
}

/** The context's signing key, imported once. */
function keyOf(ctx: SyncContext): Promise<CryptoKey> {
  const secret = tokenOptions(ctx).tokenSecret;
  if (ctx.pokes === false) throw new TypeError('pokeToken: pokes are off in this context (pokes: false)');
  if (secret === undefined) throw new TypeError('pokeToken: set pokes.tokenSecret (32 characters or more, the same on every instance) to make poke tokens');
  const state = ctx.state;
  return (state.pokeKey ??= crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']));
}

/** What is signed: the payload under a label, so no other HMAC of the same secret is a token. */
function signed(payload: string): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(`viewsync poke token\n${payload}`);
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[\w-]*$/.test(text)) return undefined;
  try {
    return Uint8Array.from(atob(text.replaceAll('-', '+').replaceAll('_', '/')), (char) => char.charCodeAt(0));
  } catch {
    return undefined; // a length base64 has no text of
  }
}

/** Longer than any token made here for a user ID within limits: refused before any work. */
const MAX_TOKEN_LENGTH = 4_096;
