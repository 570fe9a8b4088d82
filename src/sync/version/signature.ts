import { base64url } from './base64url.js';
import { remember } from '../../base/remember.js';
import { sameText } from '../../base/constant-time.js';
import { hmacKey } from '../../base/hmac-key.js';

/**
 * Signatures of view cookies. A view cookie says which prefixes its client's data was drawn from
 * (its `view`) and as of which version (its `order`); a pull whose view changed since then deletes
 * what the client held under the prefixes it lost. Both fields can be copied from other cookies,
 * so a client could claim a view at a version it never held it at, and learn the names of keys
 * written there after it lost access. A signature under a secret of the space, which never leaves
 * the server, makes such a pair unforgeable: only the server's own cookies carry a valid one.
 */

/** A new space secret: 128 random bits, base64url. */
export function newSecret(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(16)));
}

/** The signature of `cookie`'s order, epoch, view and page under `secret`: 128 bits of an HMAC-SHA-256. */
export async function signature(secret: string, cookie: Signable): Promise<string> {
  // A page's cursor is signed too (page-cookie.ts); the cookies of before have none, and sign as they did.
  const text = `${secret}\n${cookie.order}\n${cookie.epoch ?? ''}\n${cookie.view ?? ''}${cookie.page === undefined ? '' : `\n${cookie.page}`}`;
  const known = signed.get(text);
  if (known !== undefined) return known;
  const mac = await crypto.subtle.sign('HMAC', await hmacKey(secret), new TextEncoder().encode(text.slice(secret.length + 1)));
  const result = base64url(new Uint8Array(mac).subarray(0, 16));
  // An up-to-date client sends back the cookie it was given: most checks are of a known cookie.
  remember(signed, text, result, MEMO_SIZE);
  return result;
}

/** Whether `cookie` carries the signature `secret` gives it, compared in constant time. */
export async function isSigned(secret: string, cookie: Signable): Promise<boolean> {
  return sameText(cookie.sig ?? '', await signature(secret, cookie));
}

/** The fields of a cookie a signature covers, and the signature. */
interface Signable {
  order: number;
  epoch?: string | undefined;
  view?: string | undefined;
  page?: string | undefined;
  sig?: string | undefined;
}

/** Characters of a signature. */
export const SIGNATURE_LENGTH = 22;

const signed = new Map<string, string>();
const MEMO_SIZE = 4_096;
