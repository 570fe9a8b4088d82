import type { JSONValue } from '../../protocol/json.js';
import { SIGNATURE_LENGTH } from './signature.js';
import type { Meta } from './records.js';
import { Prefixes, VIEW_ID_LENGTH } from './prefixes.js';
import { readPage } from './page-cookie.js';

/** The longest `page` field of a cookie: a page's cursor names a row key (a key of up to `limits.keyBytes`, escaped). */
const MAX_PAGE_CHARS = 16 * 1024;

/**
 * The cookie of the global version strategy. `epoch` is a random ID drawn when the space was
 * created; it tells one incarnation of a store from the next (a wiped or restored database).
 * `order` is the space's version plus a base taken from the creation time, so the cookies of a
 * newer incarnation sort above those of an older one: a client that comes back with a cookie the
 * server lost can then be sent a reset it accepts, as the client refuses any cookie lower than its
 * own. Version 0 is the empty space in every incarnation, so its cookie is just `{order: 0}`.
 * With per-user views, `view` names the prefixes the client's data was drawn from (prefixes.ts), and
 * `sig` signs the cookie so that no client can pair a view with an order of its choosing
 * (signature.ts). A page of a first sync in pages carries `page`, where the next page starts
 * (page-cookie.ts).
 */
export type VersionCookie = { order: number; epoch?: string; view?: string; sig?: string; page?: string };

/** Where the versions of a space created now start: a thousand per millisecond of its life. */
export function orderBase(now: number): number {
  // The spec bounds a space to about a thousand pushes a second: a million times below this.
  // At 1000/ms, Date.now() stays within Number.MAX_SAFE_INTEGER until the year 2255.
  return Math.floor(now) * 1000;
}

/**
 * Whether a cookie names the empty view: `{order: 0}`, or `{order, epoch: ''}`, the cookie of a
 * reset to a space that has no data yet, issued with an order above the lost cookie it replaced.
 */
export function isEmptyView(cookie: VersionCookie): boolean {
  return cookie.order === 0 || cookie.epoch === '';
}

/** The cookie of a space at `version`, created in `epoch` with orders from `base`; absent: empty. */
export function makeCookie(space: { version: number; epoch: string; base: number } | undefined): VersionCookie {
  return space === undefined || space.version === 0 ? { order: 0 } : { order: space.base + space.version, epoch: space.epoch };
}

/**
 * Reads a cookie from a request: `null`, one of ours, or `'foreign'` for anything this server
 * never issues (another server's format, a hand-made value).
 */
export function readCookie(cookie: JSONValue): VersionCookie | null | 'foreign' {
  if (cookie === null) return null;
  if (typeof cookie !== 'object' || Array.isArray(cookie)) return 'foreign';
  const { order, epoch, view, sig, page, ...rest } = cookie as { [key: string]: JSONValue };
  if (!Number.isSafeInteger(order) || (order as number) < 0) return 'foreign';
  if (Object.keys(rest).length > 0) return 'foreign';
  if (page !== undefined) {
    // A page's cookie: its start must be one of ours, and its cursor one a page could have left.
    if (typeof page !== 'string' || page.length > MAX_PAGE_CHARS) return 'foreign';
    const { page: _, ...start } = cookie as { [key: string]: JSONValue };
    const read = readCookie(start);
    if (read === null || read === 'foreign' || read.order === 0) return 'foreign';
    const paged = { ...read, page };
    return readPage(paged) === undefined ? 'foreign' : paged;
  }
  if (view !== undefined && (typeof view !== 'string' || view.length !== VIEW_ID_LENGTH)) return 'foreign';
  if (sig !== undefined && (view === undefined || typeof sig !== 'string' || sig.length !== SIGNATURE_LENGTH)) return 'foreign';
  const named = view === undefined ? {} : sig === undefined ? { view } : { view, sig };
  // Exactly the shapes makeCookie issues: an epoch with every order but 0.
  if (order === 0 && epoch === undefined) return { order: 0, ...named };
  if (typeof epoch !== 'string') return 'foreign';
  return { order: order as number, epoch, ...named };
}

/** What a pull's cookie asks for: see {@link answerTo}. */
export interface CookieAnswer {
  /** The version the cookie stands for; `'reset'` when only everything will do. */
  since: number | 'reset';
  /** The answer's cookie, unsigned. */
  current: VersionCookie;
  /** With a view, the prefixes the client's data was drawn from when known without a read; left undefined, they are in the record the cookie names. */
  from?: Prefixes;
  /**
   * The cookie names a version this store skipped (`Meta.gaps`): a commit it lost gave it. Its
   * client may hold writes and lastMutationIDs the store no longer has.
   */
  lost?: true;
  /**
   * The cookie may name a commit of this space that the store does not show yet: the client read
   * it elsewhere (a standby) before this read could see it (a primary still waiting for its
   * synchronous standby). The next version, as a space commits one at a time; or, in a space the
   * store does not hold yet, any version of a space (its first commit). Only a later read can
   * tell it from a version the store lost.
   */
  ahead?: true;
}

/**
 * Which version `cookie` stands for in the space `meta` describes (undefined: empty), and the
 * answer's cookie, at `now`, for a pull with `view` (its name and prefixes) or without one.
 */
export function answerTo(cookie: JSONValue, meta: Meta | undefined, view: { id: string; prefixes: Prefixes } | undefined, now: number): CookieAnswer {
  const version = meta?.version ?? 0;
  const named = (cookie: VersionCookie): VersionCookie => (view === undefined ? cookie : { ...cookie, view: view.id });
  const current = named(makeCookie(meta));
  const parsed = readCookie(cookie);
  if (parsed === null) return { since: 'reset', current };
  if (parsed !== 'foreign' && isEmptyView(parsed)) {
    // Nothing to have lost, nor any data. While the space is still empty, the same cookie is the answer.
    const { view: _, sig: __, ...order } = parsed;
    return { since: 0, current: version === 0 ? named(order) : current, from: Prefixes.none };
  }
  if (parsed !== 'foreign' && meta !== undefined && parsed.epoch === meta.epoch && parsed.order > meta.base && parsed.order - meta.base <= version) {
    const since = parsed.order - meta.base;
    // A version the store skipped after coming back with fewer commits than it acknowledged: a
    // lost commit gave it, and the same number names other data here. Never a patch from it.
    if (meta.gaps?.some(([from, to]) => since > from && since < to)) return { since: 'reset', current, lost: true };
    // Deletes after `since` whose tombstones housekeeping removed cannot be told: start over.
    // The answer's cookie is the current one, above `since`, so the client takes the reset.
    if (since < (meta.floor ?? 0)) return { since: 'reset', current };
    // A cookie of the whole space (issued before the view existed) or of a view that no longer
    // exists: a reset costs what the current view holds, a patch could cost the whole space.
    if ((view === undefined) !== (parsed.view === undefined)) return { since: 'reset', current };
    return { since, current, ...(view !== undefined && parsed.view === view.id && { from: view.prefixes }) };
  }
  // A cookie we never issued (spec, pull rule 3: unusable) or one of state this store lost (it
  // was wiped or restored). A reloaded page forks such a cookie into every new client group it
  // starts, so ClientStateNotFound would reload it forever: send everything, with a cookie
  // that sorts above the lost one. A newer incarnation's does; an empty space's is made so, and
  // just so: one above a lost cookie of ours, not the time, as the space that a push creates
  // next takes its base from that push's clock, which may have been read before this pull's (the
  // reloaded page pushes and pulls at once) or run behind it (another instance). Sorting above
  // that base, the cookie would get ClientStateNotFound once the space held data.
  if (version !== 0)
    return {
      since: 'reset',
      current,
      ...(parsed !== 'foreign' && parsed.epoch === meta!.epoch && parsed.order - meta!.base === version + 1 && { ahead: true as const }),
    };
  const ahead = meta === undefined && parsed !== 'foreign' && parsed.epoch !== '';
  return {
    since: 'reset',
    ...(ahead && { ahead: true as const }),
    current: named({ order: parsed === 'foreign' ? orderBase(now) : parsed.order + 1, epoch: '' }),
  };
}

/**
 * Whether a response with `cookie` would be dropped by a client holding `held`: the client
 * ignores a response whose cookie is deeply equal to its own, whatever the patch.
 */
export function sameCookie(cookie: VersionCookie, held: JSONValue): boolean {
  if (typeof held !== 'object' || held === null || Array.isArray(held)) return false;
  const other = held as { [key: string]: JSONValue };
  const fields = Object.keys(cookie) as Array<keyof VersionCookie>;
  return Object.keys(other).length === fields.length && fields.every((field) => other[field] === cookie[field]);
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
