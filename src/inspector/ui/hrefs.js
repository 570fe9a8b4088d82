/** The inspector page's own addresses: the `#/…` links its pages make (router.js reads them). */

/** encodeURIComponent, which throws on a lone surrogate (a key may hold one): those become U+FFFD. @param {string} s */
export const enc = (s) => encodeURIComponent(s.toWellFormed?.() ?? s);

/** A `#/space/…` link target. @param {string} space @param {string} [rest] @param {Record<string, any>} [query] */
export function spaceHref(space, rest = '', query) {
  const q = query ? hashQuery(query) : '';
  return `#/space/${enc(space)}${rest}${q}`;
}

/** `?a=b` for the hash, leaving out empty values. @param {Record<string, any>} query */
export function hashQuery(query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const text = q.toString();
  return text ? `?${text}` : '';
}
