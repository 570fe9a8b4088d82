/**
 * The inspector page's way to the server: the API call, its error, and what the server keeps (the
 * overview), read once at start.
 */

/** What the server keeps (Overview in api-types.ts); until it answers, as little as can be. */
export let overview = { readOnly: true, view: false, changes: false, history: false, webhooks: [], process: { pid: null, startedAt: 0 } };

/** Keeps the server's answer to `overview`. @param {typeof overview} value */
export function setOverview(value) {
  overview = value;
}

/** An answer of the API with a 4xx/5xx status; `status` lets a poll tell "gone" from "try again". */
export class ApiError extends Error {
  /** @param {string} message @param {number} status */
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

/**
 * Calls the API with a relative URL (the page lives under `<base>/`). The header marks the
 * request as the page's own (the server's CSRF check); 401 means the session ended: reload to
 * the login page.
 * @param {string} path
 * @param {Record<string, any>} [params] left out when undefined or ''
 * @param {{body?: any, signal?: AbortSignal}} [options] a body makes it a POST
 */
export async function api(path, params = {}, options = {}) {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined && value !== null && value !== '') query.set(name, String(value));
  const text = query.toString();
  const url = `api/${path}${text ? `?${text}` : ''}`;
  // The server sends Referrer-Policy: no-referrer, under which a POST's Origin would be "null"
  // and its same-origin check would refuse it: same-origin sends the real one.
  /** @type {RequestInit} */
  const init = { headers: { 'x-viewsync-inspector': '1' }, signal: options.signal, referrerPolicy: 'same-origin' };
  if (options.body !== undefined) {
    init.method = 'POST';
    init.headers = { 'x-viewsync-inspector': '1', 'content-type': 'application/json' };
    init.body = JSON.stringify(options.body);
  }
  const response = await fetch(url, init);
  if (response.status === 401) {
    location.assign('./');
    throw new ApiError('Your session ended: log in again.', 401);
  }
  let data;
  try {
    data = await response.json();
  } catch {
    data = undefined;
  }
  if (!response.ok) throw new ApiError(data && typeof data.error === 'string' ? data.error : `The server answered ${response.status}.`, response.status);
  return data;
}
