/**
 * The page's files ship inside the code (src/inspector/ui/assets.ts, written by
 * scripts/embed-inspector.mjs): fails while assets.ts is behind the files beside it. The page
 * loads nothing from elsewhere: no CDN, no font, no inline script (the CSP forbids them).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script, no types.
import { embedded } from '../../scripts/embed-inspector.mjs';
import { APP_CSS, APP_JS, INDEX_HTML, LOGIN_HTML } from '../../src/inspector/ui/assets.js';

describe("the inspector's page files", () => {
  it('are embedded as they are now (run node scripts/embed-inspector.mjs)', () => {
    expect(readFileSync(new URL('../../src/inspector/ui/assets.ts', import.meta.url), 'utf8')).toBe(embedded());
  });

  it('load nothing from another origin and hold no inline script or style', () => {
    for (const text of [INDEX_HTML, LOGIN_HTML, APP_JS, APP_CSS]) expect(text).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
    for (const html of [INDEX_HTML, LOGIN_HTML]) {
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/);
      expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    }
    expect(LOGIN_HTML.split('<!--message-->')).toHaveLength(2);
  });
});
