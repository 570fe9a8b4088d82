import type { JSONValue } from '../protocol/json.js';

/**
 * The cookie of the global version strategy: the space's version, and the epoch (a random ID
 * drawn when the space was created) that tells one incarnation of a store from the next.
 * Version 0 is the empty space in every incarnation, so its cookie carries no epoch.
 */
export type VersionCookie = { order: number; epoch?: string };

/** The cookie for `version` of a space created in `epoch`. */
export function makeCookie(version: number, epoch: string | undefined): VersionCookie {
  return version === 0 || epoch === undefined ? { order: version } : { order: version, epoch };
}

/**
 * Reads a cookie from a request: `null`, one of ours, or `'foreign'` for anything this server
 * never issues (another server's format, a hand-made value).
 */
export function readCookie(cookie: JSONValue): VersionCookie | null | 'foreign' {
  if (cookie === null) return null;
  if (typeof cookie !== 'object' || Array.isArray(cookie)) return 'foreign';
  const { order, epoch, ...rest } = cookie as { [key: string]: JSONValue };
  if (!Number.isSafeInteger(order) || (order as number) < 0) return 'foreign';
  if (Object.keys(rest).length > 0) return 'foreign';
  // Exactly the shapes makeCookie issues: an epoch with every order but 0.
  if (order === 0 && epoch === undefined) return { order: 0 };
  if (typeof epoch !== 'string') return 'foreign';
  return { order: order as number, epoch };
}

/**
 * Orders two cookies as the client does (`cookies.ts` in replicache): null lowest, objects by
 * `order`, and as strings when either side is a string. The client rejects a response whose
 * cookie is lower than its own, so a server must know this order to never send one.
 */
export function compareCookies(a: JSONValue, b: JSONValue): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  const x = orderOf(a);
  const y = orderOf(b);
  if (typeof x === 'string' || typeof y === 'string') {
    const [sx, sy] = [String(x), String(y)];
    return sx === sy ? 0 : sx < sy ? -1 : 1;
  }
  return x - y;
}

function orderOf(cookie: JSONValue): number | string {
  if (typeof cookie === 'number' || typeof cookie === 'string') return cookie;
  const order = typeof cookie === 'object' && cookie !== null && !Array.isArray(cookie) ? (cookie as { order?: JSONValue }).order : undefined;
  // Only a hand-made request carries a cookie the client could not order (the client validates
  // every cookie it accepts); ranking it lowest gets such a caller a full reset.
  return typeof order === 'number' || typeof order === 'string' ? order : -Infinity;
}
