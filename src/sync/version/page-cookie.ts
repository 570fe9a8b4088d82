import type { JSONValue } from '../../protocol/json.js';
import { remember } from '../../base/remember.js';
import { base64url } from './base64url.js';

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
//
// A first sync in an order the app chose (`firstSync.order`) reads its ranges in that order: the
// cursor's range is a number in that order's list, so the cookie names the order too (`order`, a
// hash of its prefixes). A page of another order than the pull's now (the app changed it) starts
// over; a page of before orders existed (no `order`) goes on in key order, as it began.

/** Where a first sync in pages goes on: the page's number, and the reset's range and last row read (reset-pages.ts). */
export interface PageCursor {
  readonly number: number;
  readonly range: number;
  readonly after: string | undefined;
  /** The order's tag ({@link orderTag}); undefined: key order. */
  readonly order?: string | undefined;
}

/** The tag of a first sync's order in its pages' cookies: a hash of its prefixes; undefined for key order (none). */
export async function orderTag(order: readonly string[]): Promise<string | undefined> {
  if (order.length === 0) return undefined;
  const text = JSON.stringify(order);
  const known = tags.get(text);
  if (known !== undefined) return known;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  // 96 bits: two orders of one app never share a tag.
  const tag = base64url(digest.subarray(0, 12));
  // Most pulls use one of a few orders.
  if (text.length <= 2_048) remember(tags, text, tag, 1_024);
  return tag;
}

const tags = new Map<string, string>();
const TAG_LENGTH = 16;

/** The pages a first sync may take: each page's order is its start's less this plus its number. */
export const MAX_PAGES = 2 ** 20;

/** The cookie of a page: the start's cookie with its order lowered, and the page's cursor. */
export function pageCookie<C extends { order: number; sig?: string }>(start: C, cursor: PageCursor): Omit<C, 'sig'> & { page: string } {
  const { sig: _, ...fields } = start;
  const at = [cursor.number, cursor.range, cursor.after ?? null];
  return { ...fields, order: start.order - MAX_PAGES + cursor.number, page: JSON.stringify(cursor.order === undefined ? at : [...at, cursor.order]) };
}

/**
 * The start and cursor of a page's cookie (its signature left to the caller), or undefined for a
 * `page` field this server never wrote.
 */
export function readPage<C extends { order: number; page: string; sig?: string }>(
  cookie: C,
): { start: Omit<C, 'page' | 'sig'>; cursor: PageCursor } | undefined {
  let parsed: JSONValue;
  try {
    parsed = JSON.parse(cookie.page) as JSONValue;
  } catch {
    return undefined;
  }
  // Three fields in key order (and in every page cookie of before orders), four with one.
  if (!Array.isArray(parsed) || (parsed.length !== 3 && parsed.length !== 4)) return undefined;
  const [number, range, after, order] = parsed;
  if (parsed.length === 4 && (typeof order !== 'string' || order.length !== TAG_LENGTH)) return undefined;
  if (!Number.isSafeInteger(number) || (number as number) < 0 || (number as number) >= MAX_PAGES) return undefined;
  if (!Number.isSafeInteger(range) || (range as number) < 0) return undefined;
  if (after !== null && typeof after !== 'string') return undefined;
  const { page: _, sig: __, ...fields } = cookie;
  const start = { ...fields, order: cookie.order + MAX_PAGES - (number as number) } as Omit<C, 'page' | 'sig'>;
  if (!Number.isSafeInteger(start.order)) return undefined;
  return { start, cursor: { number: number as number, range: range as number, after: after ?? undefined, ...(typeof order === 'string' && { order }) } };
}
