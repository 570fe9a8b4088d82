/**
 * What a server adapter may hand the core in place of a Fetch `Request` it would otherwise have
 * to build for every request: a stand-in that answers `method`, `url` and `headers` (`get` and
 * `has`), holds the body's bytes, read already, under {@link BODY_BYTES}, and makes the real
 * `Request` under {@link FETCH_REQUEST}. The core reads nothing else of it, and hands the app's
 * own code (`authenticate`, `space`, `onError`) only the real one, through {@link fetchRequest}.
 * The Node adapter's small bodies come this way: undici's `Request`, its `Headers` and its body
 * stream cost more than a whole up-to-date pull.
 */

/** Where a stand-in holds the body's bytes, for the core to read instead of a stream. */
export const BODY_BYTES = Symbol('viewsync body bytes');

/** Where a stand-in makes the Fetch `Request` it stands for: the same one at every call. */
export const FETCH_REQUEST = Symbol('viewsync fetch request');

/** `request` as the app's code must see it: itself, or the real `Request` a stand-in makes. */
export function fetchRequest(request: Request): Request {
  const stand = request as Partial<Record<typeof FETCH_REQUEST, () => Request>>;
  return stand[FETCH_REQUEST] === undefined ? request : stand[FETCH_REQUEST]();
}
