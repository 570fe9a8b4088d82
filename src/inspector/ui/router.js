/**
 * The inspector page's routing: the page the hash names, shown, and what the page before it
 * started, ended. app.js names the pages (setPages): they import this file, so it cannot import
 * them.
 */
import { ApiError } from './api.js';
import { failed, main, page, say } from './dom.js';

/**
 * What the current page started: timers and fetches end when the hash changes, so a page left
 * stops polling and a late answer never draws over the next page.
 */
let current = { controller: new AbortController(), timers: /** @type {number[]} */ ([]) };

/** Whether the page that asked is still the one shown. @param {AbortSignal} signal */
export const alive = (signal) => !signal.aborted;

/** Repeats `fn` every `ms` while the page is shown. @param {() => void} fn @param {number} ms */
export function every(fn, ms) {
  current.timers.push(window.setInterval(fn, ms));
}

/** Stops the shown page's timers (a poll that will not mend ends early). */
export function stopTimers() {
  for (const id of current.timers) clearInterval(id);
}

/** @typedef {(segments: string[], query: URLSearchParams, signal: AbortSignal) => Promise<void>} Draw */

/** Draws the page a route names; set once, at start. @type {Draw} */
let drawRoute = async () => {};

/** Names what draws each route's page. @param {Draw} fn */
export function setPages(fn) {
  drawRoute = fn;
}

/** Shows the page the hash names. @param {boolean} moveFocus after a navigation, not on first load */
export async function show(moveFocus) {
  current.controller.abort();
  stopTimers();
  current = { controller: new AbortController(), timers: [] };
  const { signal } = current.controller;
  say('');
  const { segments, query } = route();
  for (const link of document.querySelectorAll('header nav a')) {
    const here = (link.getAttribute('href') === '#/live') === (segments[0] === 'live');
    if (here) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  page('Loading…');
  if (moveFocus) main.focus();
  try {
    await drawRoute(segments, query, signal);
  } catch (error) {
    if (signal.aborted || (error instanceof ApiError && error.status === 401)) return;
    page('Error', failed(error));
  }
}

/** Reads the hash: `#/space/<space>/keys?prefix=a` → ['space', space, 'keys'] and the query. */
function route() {
  const hash = location.hash.slice(1) || '/';
  const at = hash.indexOf('?');
  const path = at < 0 ? hash : hash.slice(0, at);
  const query = new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
  const parts = path
    .split('/')
    .slice(1)
    .filter((p, i, all) => p !== '' || i < all.length - 1);
  let segments;
  try {
    segments = parts.map((p) => decodeURIComponent(p));
  } catch {
    segments = ['?'];
  }
  return { segments, query };
}
