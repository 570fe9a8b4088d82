/**
 * viewsync inspector: the page's entry. Plain DOM in small ES modules, bundled into one file by
 * scripts/embed-inspector.mjs. The shapes it reads are in ../api-types.ts. Every key, value and
 * name is attacker-chosen text: it only ever reaches the page as textContent or an attribute,
 * never as HTML.
 */
import { api, ApiError, overview, setOverview } from './api.js';
import { failed, h, main, page } from './dom.js';
import { feedPage } from './pages/feed.js';
import { historyPage } from './pages/history.js';
import { keyPage } from './pages/key.js';
import { keysPage } from './pages/keys.js';
import { livePage } from './pages/live.js';
import { spacePage } from './pages/space.js';
import { spacesPage } from './pages/spaces.js';
import { viewAsPage } from './pages/view-as.js';
import { setPages, show } from './router.js';

/**
 * Draws the page a route names.
 * @param {string[]} segments @param {URLSearchParams} query @param {AbortSignal} signal
 */
async function drawPage(segments, query, signal) {
  const [first, space, sub, key] = segments;
  if (first === undefined) await spacesPage(query, signal);
  else if (first === 'live' && segments.length === 1) await livePage(signal);
  else if (first === 'space' && space !== undefined && sub === undefined) await spacePage(space, signal);
  else if (first === 'space' && sub === 'keys' && space !== undefined) await keysPage(space, query, signal);
  else if (first === 'space' && sub === 'key' && space !== undefined && key !== undefined) await keyPage(space, key, query, signal);
  else if (first === 'space' && sub === 'view-as' && space !== undefined) await viewAsPage(space, query, signal);
  else if (first === 'space' && sub === 'feed' && space !== undefined) await feedPage(space, signal);
  else if (first === 'space' && sub === 'history' && space !== undefined) historyPage(space);
  else page('Not found', h('p', null, 'No page has this address. ', h('a', { href: '#/' }, 'See the spaces.')));
}

try {
  setOverview(await api('overview'));
  document.getElementById('mode').hidden = !overview.readOnly;
} catch (error) {
  if (!(error instanceof ApiError && error.status === 401)) failed(error);
}
setPages(drawPage);
window.addEventListener('hashchange', () => show(true));
// The skip link must not route: the hash names the page shown.
document.querySelector('.skip')?.addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});
show(false);
