/**
 * One cache of imported HMAC keys for the package (src/base/hmac-key.ts): the cookie signatures
 * and the webhook signatures share it, and no other file of src keeps one of its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hmacKey } from '../../src/base/hmac-key.js';
import { ROOT } from '../package/packed.js';

describe('hmacKey', () => {
  it('imports each secret once, and signs as a key imported afresh does', async () => {
    const secret = 'a secret of the test, not a real one';
    const key = hmacKey(secret);
    expect(hmacKey(secret)).toBe(key);
    expect(hmacKey(`${secret}!`)).not.toBe(key);
    const fresh = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const text = new TextEncoder().encode('the text signed');
    expect(new Uint8Array(await crypto.subtle.sign('HMAC', await key, text))).toEqual(new Uint8Array(await crypto.subtle.sign('HMAC', fresh, text)));
  });

  it('keeps no key that failed to import: the next call tries again', async () => {
    // A zero-length HMAC key is refused by WebCrypto.
    const first = hmacKey('');
    await expect(first).rejects.toThrow();
    await Promise.resolve();
    expect(hmacKey('')).not.toBe(first);
    await expect(hmacKey('')).rejects.toThrow();
  });

  it('is the only place in src that imports an HMAC key by secret and keeps it in a module-wide map', () => {
    const files = readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.ts'));
    const caching = files.filter((name) => {
      const text = readFileSync(join(ROOT, 'src', name), 'utf8');
      return /^const \w+ = new Map<string, Promise<CryptoKey>>/m.test(text);
    });
    expect(caching).toEqual([join('base', 'hmac-key.ts')]);
  });
});
