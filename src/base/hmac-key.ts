import { remember } from './remember.js';

/**
 * Each secret's HMAC-SHA-256 signing key, imported once: cookies and webhook deliveries are
 * signed per request, and the import was about 6% of a delivery's time. One cache for the whole
 * package, bounded: a receiver of many webhook secrets keeps the most recent few thousand.
 */
export function hmacKey(secret: string): Promise<CryptoKey> {
  let key = keys.get(secret);
  if (key === undefined) {
    key = crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    // A secret that fails to import is not kept: the next call tries again and rejects as this one did.
    key.catch(() => keys.delete(secret));
    remember(keys, secret, key, KEYS_KEPT);
  }
  return key;
}

const keys = new Map<string, Promise<CryptoKey>>();
const KEYS_KEPT = 4_096;
