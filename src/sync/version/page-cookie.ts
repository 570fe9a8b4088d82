import type { JSONValue } from '../../protocol/json.js';

// The cookies of a first sync in pages (`firstSync` in the context's options). A first pull of a
// big space may be answered a page at a time: each page's cookie says where the next starts, the
// client applies the page and, poked, pulls with it for the next one. The client holds a cookie
// and its data together and any tab may carry on from it, so where the next page starts lives in
// the cookie, never on the server.
//
// Every page is read as of one version, the start's: its cookie is that version's cookie (the
// `start`), lowered by MAX_PAGES and raised by the page's number, so that each page's order is
// above the last (the client refuses a lower one) and below the cookie of the end, which is the
// start's version or later. The last page ends as a full pull sent as it is read does: with the
// changes since the start, under the cookie of then.

/** Where a first sync in pages goes on: the page's number, and the reset's range and last row read (reset-pages.ts). */
export interface PageCursor {
  readonly number: number;
  readonly range: number;
  readonly after: string | undefined;
}

/** The pages a first sync may take: each page's order is its start's less this plus its number. */
export const MAX_PAGES = 2 ** 20;

/** The cookie of a page: the start's cookie with its order lowered, and the page's cursor. */
export function pageCookie<C extends { order: number; sig?: string }>(start: C, cursor: PageCursor): Omit<C, 'sig'> & { page: string } {
  const { sig: _, ...fields } = start;
  return { ...fields, order: start.order - MAX_PAGES + cursor.number, page: JSON.stringify([cursor.number, cursor.range, cursor.after ?? null]) };
}

/**
 * The start and cursor of a page's cookie (its signature left to the caller), or undefined for a
 * `page` field this server never wrote.
 */
export function readPage<C extends { order: number; page: string; sig?: string }>(cookie: C): { start: Omit<C, 'page' | 'sig'>; cursor: PageCursor } | undefined {
  let parsed: JSONValue;
  try {
    parsed = JSON.parse(cookie.page) as JSONValue;
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
  const [number, range, after] = parsed;
  if (!Number.isSafeInteger(number) || (number as number) < 0 || (number as number) >= MAX_PAGES) return undefined;
  if (!Number.isSafeInteger(range) || (range as number) < 0) return undefined;
  if (after !== null && typeof after !== 'string') return undefined;
  const { page: _, sig: __, ...fields } = cookie;
  const start = { ...fields, order: cookie.order + MAX_PAGES - (number as number) } as Omit<C, 'page' | 'sig'>;
  if (!Number.isSafeInteger(start.order)) return undefined;
  return { start, cursor: { number: number as number, range: range as number, after: after ?? undefined } };
}
