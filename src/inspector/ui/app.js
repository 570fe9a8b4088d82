/**
 * viewsync inspector: the page. Plain DOM, no build step. The shapes it reads are in
 * ../api-types.ts. Every key, value and name is attacker-chosen text: it only ever reaches the
 * page as textContent or an attribute, never as HTML.
 */

const main = /** @type {HTMLElement} */ (document.getElementById('main'));
const statusBox = /** @type {HTMLElement} */ (document.getElementById('status'));
const SVG = 'http://www.w3.org/2000/svg';

/** What the server keeps (Overview in api-types.ts); until it answers, as little as can be. */
let overview = { readOnly: true, view: false, changes: false, history: false, webhooks: [], process: { pid: null, startedAt: 0 } };

/**
 * Builds an element. `on…` attributes become listeners, `true` an empty attribute, and
 * null/undefined/false are left out; children may be strings, nodes, arrays or nothing.
 * @param {string} tag
 * @param {Record<string, any> | null} [attrs]
 * @param {...any} children
 * @returns {HTMLElement}
 */
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else if (name === 'class') el.className = value;
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  el.append(...flat(children));
  return el;
}

/** @param {any[]} children @returns {(Node|string)[]} */
function flat(children) {
  return children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false).map((c) => (c instanceof Node ? c : String(c)));
}

/** An SVG element (charts); attributes only. @param {string} tag @param {Record<string, any>} attrs */
function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  return el;
}

/** Shows a notice (or an error) in the status region, which screen readers announce. */
function say(message, error = false) {
  statusBox.textContent = message;
  statusBox.className = error ? 'error' : '';
}

/** An answer of the API with a 4xx/5xx status; `status` lets a poll tell "gone" from "try again". */
class ApiError extends Error {
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
async function api(path, params = {}, options = {}) {
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

// ——— Formatting ———

const number = new Intl.NumberFormat('en');
/** @param {number|undefined|null} n */
const num = (n) => (typeof n === 'number' ? number.format(n) : '—');

/** Bytes in human units (1 KB = 1,000 bytes, as disks and quotas say). @param {number|undefined} n */
function bytes(n) {
  if (typeof n !== 'number') return '—';
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${number.format(n)} bytes` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** A time, as a <time> element with the local date and time. @param {number|null|undefined} ms */
function time(ms) {
  if (typeof ms !== 'number') return '—';
  const date = new Date(ms);
  return h('time', { datetime: date.toISOString() }, date.toLocaleString());
}

/** How long ago, in words. @param {number} ms */
function ago(ms) {
  const s = Math.round((Date.now() - ms) / 1000);
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} days ago`;
}

/** A JSON value on one line, cut to `max` characters; absent values say so. @param {any} value */
function short(value, max = 80, absent = '(absent)') {
  if (value === undefined) return absent;
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A change's values as "before → after", each in <code>. */
function change(before, after, max = 80) {
  return [h('code', null, short(before, max)), ' → ', h('code', null, short(after, max, '(deleted)'))];
}

/** What made a change (ChangeOrigin), briefly. @param {any} by */
function origin(by) {
  if (!by) return '—';
  switch (by.kind) {
    case 'mutation':
      return `mutation ${by.name} by ${by.userID === null ? 'anonymous' : `user ${by.userID}`} (group ${by.clientGroupID}, client ${by.clientID} #${by.mutationID})`;
    case 'backend':
      return `backend ${by.call}${by.name ? ` ${by.name}` : ''}${by.userID !== null && by.userID !== undefined ? ` for user ${by.userID}` : ''}`;
    case 'migration':
      return `migration ${by.name}`;
    case 'restore':
      return `restore to v${by.to}${by.prefix ? ` (keys starting with ${by.prefix})` : ''}`;
    case 'revert':
      return `revert${by.cause ? ` of ${cause(by.cause)}` : ''}`;
    case 'erase':
      return 'erase';
    default:
      return String(by.kind);
  }
}

/** A revert's cause in words. @param {any} c */
function cause(c) {
  const parts = [];
  if (c.mutation) parts.push(`mutation ${c.mutation.clientID} #${c.mutation.mutationID}`);
  if (c.userID !== undefined) parts.push(`user ${c.userID}`);
  if (c.clientGroupID !== undefined) parts.push(`group ${c.clientGroupID}`);
  if (c.mutator !== undefined) parts.push(`mutator ${c.mutator}`);
  if (c.versions) parts.push(`v${c.versions[0]}–v${c.versions[1]}`);
  if (c.since !== undefined) parts.push(`since ${new Date(c.since).toLocaleString()}`);
  return parts.join(', ') || 'everything';
}

// ——— Building blocks ———

/**
 * A table with a caption and column headers (scope=col); a `num` column is right-aligned.
 * @param {string} caption
 * @param {(string | [string, 'num'])[]} columns
 * @param {any[][]} rows cells: text, nodes, or [content, 'num']
 */
function table(caption, columns, rows) {
  const head = columns.map((c) => (Array.isArray(c) ? h('th', { scope: 'col', class: c[1] }, c[0]) : h('th', { scope: 'col' }, c)));
  const body = rows.map((row) => h('tr', null, row.map((cell) => (Array.isArray(cell) && cell[1] === 'num' ? h('td', { class: 'num' }, cell[0]) : h('td', null, cell)))));
  return h('div', { class: 'scroll' }, h('table', null, h('caption', null, caption), h('thead', null, h('tr', null, head)), h('tbody', null, body)));
}

/** A labelled input (its label above it). @param {string} label @param {Record<string, any>} attrs */
function field(label, attrs) {
  const id = `f-${++fieldIds}`;
  const control = attrs.tag === 'select' ? h('select', { ...attrs, tag: null, options: null, id }, attrs.options.map((o) => h('option', { value: o, selected: o === attrs.value }, o))) : h('input', { type: 'text', ...attrs, id });
  return h('p', { class: 'field' }, h('label', { for: id }, label), control);
}
let fieldIds = 0;

/** The value of the first input in `el` (a field). @param {Element} el */
const val = (el) => /** @type {HTMLInputElement} */ (el.querySelector('input')).value;

/** A <dl> of label–value pairs; pairs whose value is undefined are left out. @param {[string, any][]} pairs */
function summary(pairs) {
  return h('dl', { class: 'summary' }, pairs.filter(([, v]) => v !== undefined).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

/** encodeURIComponent, which throws on a lone surrogate (a key may hold one): those become U+FFFD. @param {string} s */
const enc = (s) => encodeURIComponent(s.toWellFormed?.() ?? s);

/** A `#/space/…` link target. @param {string} space @param {string} [rest] @param {Record<string, any>} [query] */
function spaceHref(space, rest = '', query) {
  const q = query ? hashQuery(query) : '';
  return `#/space/${enc(space)}${rest}${q}`;
}

/** `?a=b` for the hash, leaving out empty values. @param {Record<string, any>} query */
function hashQuery(query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** Starts a page: its title, its one <h1>, and what comes below. @param {string} title @param {...any} content */
function page(title, ...content) {
  document.title = `${title} – viewsync inspector`;
  main.replaceChildren(h('h1', null, title), ...flat(content));
}

/** A line showing where a space page came from. @param {string} space */
function backTo(space) {
  return h('p', null, h('a', { href: spaceHref(space) }, `← Space ${space}`));
}

/** An error in the page and the status region. @param {unknown} error */
function failed(error) {
  const message = error instanceof Error ? error.message : String(error);
  say(message, true);
  return h('p', { class: 'error' }, message);
}

/** The quota use of a space as percentages of each bound given. @param {any} row */
function quotaUse(row) {
  const q = row.quota;
  if (!q) return '—';
  const parts = [];
  if (typeof q.bytes === 'number' && typeof row.bytes === 'number') parts.push(`${pct(row.bytes, q.bytes)} of bytes`);
  if (typeof q.entries === 'number' && typeof row.entries === 'number') parts.push(`${pct(row.entries, q.entries)} of entries`);
  const historyBound = q.historyBytes === false ? undefined : (q.historyBytes ?? q.bytes);
  if (typeof historyBound === 'number' && typeof row.history === 'number') parts.push(`${pct(row.history, historyBound)} of history`);
  return parts.join(', ') || '—';
}
/** @param {number} n @param {number} of */
const pct = (n, of) => (of === 0 ? (n === 0 ? '0%' : '∞') : `${Math.round((n / of) * 100)}%`);

/** A schema version: '' is one too. @param {string|null} v */
const schema = (v) => (v === null ? '—' : v === '' ? '(empty)' : v);

/** A move in progress, in words. @param {any} move */
function moveText(move) {
  if (!move) return '—';
  const progress = move.copied !== undefined ? ` (${num(move.copied)}${move.of !== undefined ? ` of ${num(move.of)}` : ''} copied)` : '';
  return `${move.step}: ${move.from} → ${move.to}${progress}`;
}

// ——— Routing ———

/**
 * What the current page started: timers and fetches end when the hash changes, so a page left
 * stops polling and a late answer never draws over the next page.
 */
let current = { controller: new AbortController(), timers: /** @type {number[]} */ ([]) };

/** Whether the page that asked is still the one shown. @param {AbortSignal} signal */
const alive = (signal) => !signal.aborted;

/** Repeats `fn` every `ms` while the page is shown. @param {() => void} fn @param {number} ms */
function every(fn, ms) {
  current.timers.push(window.setInterval(fn, ms));
}

/** Reads the hash: `#/space/<space>/keys?prefix=a` → ['space', space, 'keys'] and the query. */
function route() {
  const hash = location.hash.slice(1) || '/';
  const at = hash.indexOf('?');
  const path = at < 0 ? hash : hash.slice(0, at);
  const query = new URLSearchParams(at < 0 ? '' : hash.slice(at + 1));
  const parts = path.split('/').slice(1).filter((p, i, all) => p !== '' || i < all.length - 1);
  let segments;
  try {
    segments = parts.map((p) => decodeURIComponent(p));
  } catch {
    segments = ['?'];
  }
  return { segments, query };
}

/** Shows the page the hash names. @param {boolean} moveFocus after a navigation, not on first load */
async function show(moveFocus) {
  current.controller.abort();
  for (const id of current.timers) clearInterval(id);
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
  const [first, space, sub, key] = segments;
  try {
    if (first === undefined) await spacesPage(query, signal);
    else if (first === 'live' && segments.length === 1) await livePage(signal);
    else if (first === 'space' && space !== undefined && sub === undefined) await spacePage(space, signal);
    else if (first === 'space' && sub === 'keys' && space !== undefined) await keysPage(space, query, signal);
    else if (first === 'space' && sub === 'key' && space !== undefined && key !== undefined) await keyPage(space, key, query, signal);
    else if (first === 'space' && sub === 'view-as' && space !== undefined) await viewAsPage(space, query, signal);
    else if (first === 'space' && sub === 'feed' && space !== undefined) await feedPage(space, signal);
    else if (first === 'space' && sub === 'history' && space !== undefined) historyPage(space);
    else page('Not found', h('p', null, 'No page has this address. ', h('a', { href: '#/' }, 'See the spaces.')));
  } catch (error) {
    if (signal.aborted || (error instanceof ApiError && error.status === 401)) return;
    page('Error', failed(error));
  }
}

// ——— Spaces ———

/** `#/`: a page of spaces (never more than one fetched, so 10,000 spaces cost what 50 do). */
async function spacesPage(query, signal) {
  const prefix = query.get('prefix') ?? '';
  const after = query.get('after') ?? '';
  const data = await api('spaces', { prefix, after, limit: 50 }, { signal });
  if (!alive(signal)) return;
  const form = h('form', { class: 'bar', role: 'search', onsubmit: (e) => {
    e.preventDefault();
    location.hash = `#/${hashQuery({ prefix: val(form) })}`;
  } }, field('Space name starts with', { name: 'prefix', value: prefix }), h('p', { class: 'field' }, h('button', null, 'Filter')));
  const rows = data.spaces.map((s) => [
    h('a', { href: spaceHref(s.space) }, s.space),
    [num(s.version), 'num'],
    [num(s.entries), 'num'],
    [bytes(s.bytes), 'num'],
    [bytes(s.history), 'num'],
    quotaUse(s),
    s.store ?? '—',
    moveText(s.move),
    [num(s.activity?.pushes), 'num'],
    [num(s.activity?.pulls), 'num'],
  ]);
  page('Spaces', form,
    rows.length === 0 ? h('p', null, prefix || after ? 'No spaces here.' : 'No spaces yet.') : table(`Spaces${prefix ? ` starting with “${prefix}”` : ''}${after ? ` after “${after}”` : ''}`, ['Space', ['Version', 'num'], ['Entries', 'num'], ['Bytes', 'num'], ['History', 'num'], 'Quota use', 'Store', 'Move', ['Pushes (1 min)', 'num'], ['Pulls (1 min)', 'num']], rows),
    pager(after !== '', data.next, (next) => `#/${hashQuery({ prefix, after: next })}`));
}

/** "First page" and "Next page" buttons. @param {boolean} paged @param {string|undefined} next @param {(after: string) => string} href */
function pager(paged, next, href) {
  return h('p', { class: 'bar' },
    paged ? h('button', { type: 'button', class: 'secondary', onclick: () => (location.hash = href('')) }, 'First page') : null,
    next !== undefined ? h('button', { type: 'button', onclick: () => (location.hash = href(next)) }, 'Next page') : null);
}

// ——— One space ———

/** `#/space/<space>`: its summary, client groups, schema versions, migrations and webhooks. */
async function spacePage(space, signal) {
  const [s, hooks] = await Promise.all([
    api('space', { space }, { signal }),
    // Always asked: a webhook another process names (the CLI's inspector names none) has a state here too.
    api('webhooks', { space }, { signal }).catch((error) => error),
  ]);
  if (!alive(signal)) return;
  const log = s.changes;
  const links = h('ul', { class: 'links' },
    h('li', null, h('a', { href: spaceHref(space, '/keys') }, 'Keys')),
    h('li', null, h('a', { href: spaceHref(space, '/feed') }, 'Feed')),
    h('li', null, h('a', { href: spaceHref(space, '/view-as') }, 'View as a user')),
    (overview.changes || overview.history) && !overview.readOnly ? h('li', null, h('a', { href: spaceHref(space, '/history') }, 'History (restore, revert)')) : null);
  const groups = s.groups ?? [];
  page(`Space ${space}`, h('p', null, h('a', { href: '#/' }, '← Spaces')), links,
    h('h2', null, 'Summary'),
    summary([
      ['Version', num(s.version)],
      ['Entries', num(s.entries)],
      ['Bytes', bytes(s.bytes)],
      ['History', bytes(s.history)],
      ['Quota', s.quota ? `${quotaUse(s)} (${[s.quota.entries !== undefined && `${num(s.quota.entries)} entries`, s.quota.bytes !== undefined && `${bytes(s.quota.bytes)}`, s.quota.historyBytes !== undefined && `history ${s.quota.historyBytes === false ? 'unbounded' : bytes(s.quota.historyBytes)}`].filter(Boolean).join(', ')})` : 'none'],
      ['Store', s.store],
      ['Move', s.move ? moveText(s.move) : undefined],
      ['Client groups', `${num(s.clientGroups)}${s.groupsCut ? ' (of the first 1,000 listed)' : ''}`],
      ['Last activity', s.lastActivity ? [time(s.lastActivity), ` (${ago(s.lastActivity)})`] : 'none'],
      ['Change log', log ? `whole from ${log.from === null ? '— (not whole now)' : `v${log.from}`}${log.oldest ? `, oldest change ${new Date(log.oldest).toLocaleString()}` : ''}` : 'not kept'],
      ['Checkpoints', log && log.checkpoints.length > 0 ? log.checkpoints.map((c) => `v${c.version}${c.done ? '' : ' (being written)'}`).join(', ') : undefined],
      ['Rejected mutations', num(s.rejected ?? 0)],
      ['Staging', s.staging?.length ? s.staging.map((a) => `import begun ${new Date(a.started).toLocaleString()}`).join('; ') : 'none'],
    ]),
    h('h2', null, 'Client groups'),
    groups.length === 0 ? h('p', null, 'No client groups.') : table(`Client groups (${s.groupsCut ? `the first ${num(groups.length)}` : num(groups.length)})`, ['User', 'Client group', 'Last active', 'Expired', 'Schema version', 'Clients (lastMutationID)'], groups.map((g) => [
      g.userID ?? h('span', { class: 'muted' }, 'anonymous'),
      h('code', null, g.clientGroupID),
      time(g.lastActive),
      g.expired ? 'yes' : 'no',
      schema(g.schemaVersion),
      Object.entries(g.clients).map(([id, lmid], i) => [i > 0 ? ', ' : '', h('code', null, id), `: ${lmid}`]),
    ])),
    s.schemaVersions ? [h('h2', null, 'Schema versions'), table('Client groups active lately, by schema version', ['Schema version', ['Client groups', 'num']], Object.entries(s.schemaVersions).map(([v, n]) => [v === '?' ? '? (not recorded)' : schema(v), [num(n), 'num']]))] : null,
    s.rejectedMutations?.length ? [h('h2', null, 'Rejected mutations'), table(`Rejected mutations (the latest ${num(Math.min(50, s.rejectedMutations.length))})`, ['Time', 'Mutation', 'Client', 'Schema version', 'Reason'], s.rejectedMutations.slice(-50).reverse().map((r) => [time(r.at), r.name, `${r.clientID} #${r.id}`, r.schemaVersion, r.reason]))] : null,
    h('h2', null, 'Migrations'),
    s.migrations ? table('Data migrations', ['Migration', 'State', ['Entries done', 'num'], 'Last key', 'Started', 'Finished'], Object.entries(s.migrations).map(([name, m]) => [name, m.state, [num(m.entries), 'num'], m.after !== undefined ? h('code', null, m.after) : '—', time(m.started), time(m.finished)])) : h('p', null, 'No data migration ran in this space.'),
    hooks instanceof Error || hooks.webhooks.length > 0 ? webhooksSection(space, hooks) : null);
}

/** The webhooks of a space, with enable and replay when actions are on. */
function webhooksSection(space, hooks) {
  const section = h('section', { 'aria-labelledby': 'webhooks-h' }, h('h2', { id: 'webhooks-h' }, 'Webhooks'));
  if (hooks instanceof Error) {
    section.append(failed(hooks));
    return section;
  }
  const list = hooks?.webhooks ?? [];
  section.append(table('Webhook deliveries in this space', ['Webhook', 'URL', 'Cursor', ['Lag (versions)', 'num'], ['Lag (ms)', 'num'], ['Delivered', 'num'], ['Failures', 'num'], 'Pending delivery', ['Replays', 'num'], 'Disabled'], list.map(({ name, url, state: w }) => w ? [
    name, url ? h('code', null, url) : h('span', { class: 'muted' }, 'not this server\'s'), h('code', null, w.cursor), [num(w.lagVersions), 'num'], [num(w.lagMs), 'num'], [num(w.delivered), 'num'], [num(w.failures), 'num'],
    w.pending ? [h('code', null, w.pending.delivery), `, attempt ${w.pending.attempts}, next ${new Date(w.pending.nextAttempt).toLocaleString()}`, w.pending.error ? h('div', { class: 'error' }, w.pending.error) : null] : '—',
    [num(w.replays), 'num'],
    w.disabled ? `${w.disabled.reason} (${new Date(w.disabled.at).toLocaleString()})` : 'no',
  ] : [name, h('code', null, url), h('span', { class: 'muted' }, 'no delivery yet'), '', '', '', '', '', '', ''])));
  if (overview.readOnly) return section;
  for (const { name, state } of list) section.append(webhookActions(space, name, state));
  return section;
}

/** Enable and replay forms of one webhook. */
function webhookActions(space, name, state) {
  const box = h('section', { 'aria-label': `Webhook ${name} actions` }, h('h3', null, `Webhook ${name}`));
  /** Posts an action, says what came of it, and reloads the space's page. */
  const act = async (path, body, done) => {
    try {
      const answer = await api(path, {}, { body: { name, space, ...body } });
      await show(true);
      say(done(answer.result));
    } catch (error) {
      failed(error);
    }
  };
  if (state?.disabled) box.append(h('p', null, h('button', { type: 'button', onclick: () => act('webhooks/enable', {}, (r) => (r?.wasDisabled === false ? `Webhook ${name} was not disabled.` : `Webhook ${name} enabled.`)) }, 'Enable')));
  const delivery = field('Delivery ID', { name: 'delivery', value: state?.pending?.delivery ?? '', required: true });
  box.append(h('form', { class: 'bar', onsubmit: (e) => {
    e.preventDefault();
    act('webhooks/replay', { delivery: val(delivery) }, (r) => `Webhook ${name}: ${queued(r)} queued for replay.`);
  } }, delivery, h('p', { class: 'field' }, h('button', null, 'Replay delivery'))));
  const from = field('From cursor', { name: 'from', required: true });
  const to = field('To cursor', { name: 'to', required: true, value: state?.cursor ?? '' });
  box.append(h('form', { class: 'bar', onsubmit: (e) => {
    e.preventDefault();
    act('webhooks/replay', { from: val(from), to: val(to) }, (r) => `Webhook ${name}: ${queued(r)} queued for replay.`);
  } }, from, to, h('p', { class: 'field' }, h('button', null, 'Replay range'))));
  return box;
}

// ——— Keys ———

/** `#/space/<space>/keys?prefix=&version=&after=`: a page of 100 entries, now or as of a version. */
async function keysPage(space, query, signal) {
  const prefix = query.get('prefix') ?? '';
  const version = query.get('version') ?? '';
  const after = query.get('after') ?? '';
  const asOf = overview.changes || overview.history;
  const prefixField = field('Key prefix', { name: 'prefix', value: prefix });
  const versionField = asOf ? field('As of version', { name: 'version', type: 'number', min: 0, step: 1, value: version }) : null;
  const form = h('form', { class: 'bar', role: 'search', onsubmit: (e) => {
    e.preventDefault();
    location.hash = spaceHref(space, '/keys', { prefix: val(prefixField), version: versionField ? val(versionField) : '' });
  } }, prefixField, versionField, h('p', { class: 'field' }, h('button', null, 'Show')));
  let data;
  try {
    data = await api('keys', { space, prefix, after, limit: 100, version }, { signal });
  } catch (error) {
    if (!alive(signal)) return;
    page(`Keys of ${space}`, backTo(space), form, failed(error));
    return;
  }
  if (!alive(signal)) return;
  page(`Keys of ${space}`, backTo(space), form,
    data.entries.length === 0 ? h('p', null, 'No keys here.') : table(`Keys${prefix ? ` starting with “${prefix}”` : ''} at version ${num(data.version)}${version ? ' (from history)' : ''}`, ['Key', ['Size', 'num'], 'Value (JSON)'], data.entries.map((e) => [
      h('a', { href: spaceHref(space, `/key/${enc(e.key)}`) }, e.key),
      [bytes(e.bytes), 'num'],
      h('code', null, e.json + (e.cut ? '…' : '')),
    ])),
    pager(after !== '', data.next, (next) => spaceHref(space, '/keys', { prefix, version, after: next })));
}

/** `#/space/<space>/key/<key>?before=`: the value now and its changes, newest first, 50 at a time. */
async function keyPage(space, key, query, signal) {
  const before = query.get('before') ?? '';
  const data = await api('key', { space, key, before }, { signal });
  if (!alive(signal)) return;
  const hist = data.history;
  page(`Key ${key}`, h('p', null, h('a', { href: spaceHref(space, '/keys') }, `← Keys of ${space}`)),
    h('h2', null, 'Value now'),
    'value' in data ? h('pre', { tabindex: 0, 'aria-label': 'Value now' }, JSON.stringify(data.value, null, 2)) : h('p', null, 'This key does not exist now.'),
    h('h2', null, 'History'),
    data.noHistory ? h('p', null, data.noHistory) : null,
    hist ? [
      h('p', { class: 'muted' }, `History keeps versions ${hist.kept.from} to ${hist.kept.to}.`),
      hist.changes.length === 0 ? h('p', null, 'No changes of this key in the versions kept.') : table(`Changes of ${key}, newest first`, [['Version', 'num'], 'Time', 'Change', 'Made by'], hist.changes.map((c) => [
        [c.version, 'num'],
        time(c.at),
        c.erased ? [change(c.before, c.after), ` (erased: ${c.erased})`] : change(c.before, c.after),
        origin(c.by),
      ])),
      h('p', { class: 'bar' },
        before ? h('button', { type: 'button', class: 'secondary', onclick: () => (location.hash = spaceHref(space, `/key/${enc(key)}`)) }, 'Newest changes') : null,
        hist.older ? h('button', { type: 'button', onclick: () => (location.hash = spaceHref(space, `/key/${enc(key)}`, { before: hist.changes.at(-1).version })) }, 'Older changes') : null),
    ] : null);
}

// ——— View as a user ———

/** `#/space/<space>/view-as?user=&group=&prefix=&after=`: which keys a user's pull gets, and why. */
async function viewAsPage(space, query, signal) {
  const user = query.get('user') ?? '';
  const group = query.get('group') ?? '';
  const prefix = query.get('prefix') ?? '';
  const after = query.get('after') ?? '';
  const fields = [field('User ID', { name: 'user', value: user, required: true }), field('Client group ID', { name: 'group', value: group }), field('Key prefix', { name: 'prefix', value: prefix })];
  const form = h('form', { class: 'bar', onsubmit: (e) => {
    e.preventDefault();
    const [u, g, p] = fields.map(val);
    location.hash = spaceHref(space, '/view-as', { user: u, group: g, prefix: p });
  } }, fields, h('p', { class: 'field' }, h('button', null, 'Show')));
  const intro = overview.view ? null : h('p', null, 'This server has no view: every user receives the whole space.');
  if (!user) {
    page(`View ${space} as a user`, backTo(space), intro, form);
    return;
  }
  let data;
  try {
    data = await api('view-as', { space, user, group, prefix, after, limit: 100 }, { signal });
  } catch (error) {
    if (!alive(signal)) return;
    page(`View ${space} as a user`, backTo(space), intro, form, failed(error));
    return;
  }
  if (!alive(signal)) return;
  const filter = () => {
    onlyMissed = only.checked;
    for (const row of rows) row.hidden = onlyMissed && row.dataset.received === 'yes';
  };
  const only = h('input', { type: 'checkbox', id: 'only-missed', checked: onlyMissed, onchange: filter });
  const tableBox = table(`Keys of ${space}${prefix ? ` starting with “${prefix}”` : ''} as user ${user} sees them (${num(data.received)} of ${num(data.entries.length)} received)`, ['Key', 'Received', 'Because'], data.entries.map((e) => [
    h('a', { href: spaceHref(space, `/key/${enc(e.key)}`) }, e.key),
    e.received ? h('span', { class: 'ok' }, 'yes') : 'no',
    e.because !== undefined ? (e.because === '' ? 'the whole space' : h('code', null, e.because)) : h('span', { class: 'muted' }, 'no prefix of the view covers it'),
  ]));
  const rows = [...tableBox.querySelectorAll('tbody tr')];
  rows.forEach((row, i) => (row.dataset.received = data.entries[i].received ? 'yes' : 'no'));
  filter();
  page(`View ${space} as a user`, backTo(space), intro, form,
    h('h2', null, `The view of user ${data.userID ?? '(anonymous)'}, client group ${data.clientGroupID}`),
    data.refused !== undefined ? h('p', { class: 'error' }, `The view refuses this user: ${data.refused}`) : [
      h('p', null, 'Prefixes the view returns:'),
      data.prefixes.length === 0 ? h('p', null, 'None: this user receives nothing.') : h('ul', null, data.prefixes.map((p) => h('li', null, p === '' ? 'the whole space' : h('code', null, p)))),
    ],
    data.entries.length === 0 ? h('p', null, 'No keys here.') : [h('p', { class: 'check' }, only, h('label', { for: 'only-missed' }, 'Only keys not received')), tableBox],
    pager(after !== '', data.next, (next) => spaceHref(space, '/view-as', { user, group, prefix, after: next })));
}

/** The "Only keys not received" filter, kept from page to page. */
let onlyMissed = false;

// ——— Live ———

const SERIES = /** @type {const} */ ([['pushes', 'Pushes'], ['pulls', 'Pulls'], ['pokes', 'Pokes'], ['mutations', 'Mutations'], ['errors', 'Errors (5xx)'], ['refusals', 'Refusals (429)']]);

/** `#/live`: this process's last minute, redrawn every second. */
async function livePage(signal) {
  const charts = SERIES.map(([field, label]) => {
    const line = svg('polyline', { class: 'line', points: '' });
    const chart = svg('svg', { viewBox: '0 0 600 100', preserveAspectRatio: 'none', role: 'img', 'aria-label': `${label} a second, last 60 seconds` });
    chart.append(svg('line', { class: 'axis', x1: 0, y1: 99, x2: 600, y2: 99 }), line);
    const caption = h('figcaption', null, `${label} a second: —`);
    const peak = h('p', { class: 'muted' }, '');
    return { field, label, line, chart, caption, peak, figure: h('figure', null, caption, chart, peak) };
  });
  const latency = h('div');
  const { pid, startedAt } = overview.process;
  page('Live', h('p', { class: 'muted' }, `These numbers are this process's alone (pid ${pid ?? 'unknown'}, started ${startedAt ? new Date(startedAt).toLocaleString() : '—'}); each instance counts its own. They refresh every second.`),
    h('div', { class: 'charts' }, charts.map((c) => c.figure)), h('h2', null, 'Latency'), latency);
  const draw = async () => {
    let data;
    try {
      data = await api('live', {}, { signal });
    } catch (error) {
      if (alive(signal)) failed(error);
      return;
    }
    if (!alive(signal)) return;
    if (statusBox.className === 'error') say('');
    const start = data.now - 60_000;
    for (const c of charts) {
      const values = data.seconds.map((s) => s[c.field] ?? 0);
      const max = Math.max(1, ...values);
      c.line.setAttribute('points', data.seconds.map((s, i) => `${Math.max(0, ((s.t - start) / 60_000) * 600).toFixed(1)},${(98 - (values[i] / max) * 94).toFixed(1)}`).join(' '));
      // The last whole second, and this one so far: a push late in a second is in the first at the next poll (this one, alone, would never show it).
      c.caption.textContent = `${c.label} a second: ${num(values.at(-2) ?? 0)} (${num(values.at(-1) ?? 0)} so far this second)`;
      c.peak.textContent = `Peak in the last minute: ${num(Math.max(0, ...values))}`;
    }
    const row = (name, p) => [name, [num(p.p50), 'num'], [num(p.p90), 'num'], [num(p.p99), 'num'], [num(p.count), 'num']];
    latency.replaceChildren(table('Latency over the last minute, in milliseconds', ['Request', ['p50', 'num'], ['p90', 'num'], ['p99', 'num'], ['Count', 'num']], [row('Push', data.latency.push), row('Pull', data.latency.pull)]));
  };
  await draw();
  every(draw, 1000);
}

// ——— Feed ———

/** `#/space/<space>/feed`: the last changes, then new ones at the top as they come, every second. */
async function feedPage(space, signal) {
  const body = h('tbody');
  let note = h('p', { class: 'muted' }, 'Loading…');
  let paused = false;
  let busy = false;
  let cursor = '';
  let count = 0;
  const toggle = h('button', { type: 'button', onclick: () => {
    paused = !paused;
    toggle.textContent = paused ? 'Resume' : 'Pause';
    say(paused ? 'Feed paused.' : 'Feed resumed.');
  } }, 'Pause');
  const tableBox = h('div', { class: 'scroll' }, h('table', null, h('caption', null, 'Changes, newest first'),
    h('thead', null, h('tr', null, ['Version', 'Time', 'Op', 'Key or topic', 'Change', 'Made by'].map((c) => h('th', { scope: 'col' }, c)))), body));
  page(`Feed of ${space}`, backTo(space), h('p', { class: 'bar' }, toggle), note, tableBox);
  /** Adds changes (oldest first as they come) at the top, keeping the latest 500 rows. */
  const add = (changes) => {
    for (const c of changes) {
      const what = c.op === 'event' ? [h('code', null, short(c.payload)), c.erased ? ' (erased)' : ''] : [change(c.before, c.after), c.op === 'erased' ? ` (erased: ${c.erased})` : ''];
      body.prepend(h('tr', null, h('td', { class: 'num' }, `${c.version}.${c.seq}`), h('td', null, time(c.at)), h('td', null, c.op === 'erased' ? `${c.was}, erased` : c.op),
        h('td', null, c.op === 'event' ? ['event ', h('code', null, c.topic)] : h('a', { href: spaceHref(space, `/key/${enc(c.key)}`) }, c.key)), h('td', null, what), h('td', null, origin(c.by))));
      count++;
    }
    while (body.children.length > 500) body.lastElementChild?.remove();
  };
  const poll = async () => {
    if (paused || busy || !alive(signal)) return;
    busy = true;
    try {
      // Read on at once while the server says more waits, a few pages at most a tick.
      for (let pages = 0; pages < 5; pages++) {
        const data = await api('feed', { space, after: cursor }, { signal });
        if (!alive(signal)) return;
        add(data.changes);
        cursor = data.cursor;
        note.textContent = `At version ${num(data.version)}; ${num(count)} changes shown since this page opened (the latest 500 kept).`;
        if (!data.more) break;
      }
    } catch (error) {
      if (!alive(signal)) return;
      note.replaceWith(note = failed(error));
      // A 4xx (no feed kept, say) will not mend by asking again.
      if (error instanceof ApiError && error.status < 500) {
        for (const id of current.timers) clearInterval(id);
        toggle.disabled = true;
      }
    } finally {
      busy = false;
    }
  };
  await poll();
  if (alive(signal) && !toggle.disabled) every(poll, 1000);
}

// ——— History: restore and revert ———

/** `#/space/<space>/history`: restore and revert, each a dry run first, then a confirmed real run. */
function historyPage(space) {
  if (overview.readOnly) {
    page(`History of ${space}`, backTo(space), h('p', null, 'Read-only: actions are off.'));
    return;
  }
  page(`History of ${space}`, backTo(space),
    h('p', null, 'Each action runs as a dry run first: it lists what would change. The real run is offered after a dry run of the same inputs and asks to be confirmed; it acts on the space as it is then, which may have changed since the dry run.'),
    actionForm(space, 'restore', 'Restore', [
      field('Restore to version', { name: 'to', type: 'number', min: 0, step: 1, required: true }),
      field('Only keys starting with', { name: 'prefix' }),
    ], (v) => ({ to: Number(v.to), ...(v.prefix !== '' && { prefix: v.prefix }) })),
    actionForm(space, 'revert', 'Revert', [
      field('User ID', { name: 'userID' }),
      field('Client group ID', { name: 'clientGroupID' }),
      field('Mutator', { name: 'mutator' }),
      field('Client ID', { name: 'clientID' }),
      field('Mutation ID', { name: 'mutationID', type: 'number', min: 1, step: 1 }),
      field('From version', { name: 'from', type: 'number', min: 0, step: 1 }),
      field('To version', { name: 'to', type: 'number', min: 0, step: 1 }),
      field('Since (minutes ago)', { name: 'since', type: 'number', min: 0, step: 'any' }),
      field('On conflict', { tag: 'select', name: 'onConflict', options: ['skip', 'overwrite', 'stop'], value: 'skip' }),
    ], revertBody));
}

/** A revert's body from its form's values; throws a message when the cause is not whole. */
function revertBody(v) {
  /** @type {Record<string, any>} */
  const cause = {};
  for (const name of ['userID', 'clientGroupID', 'mutator']) if (v[name] !== '') cause[name] = v[name];
  if ((v.clientID === '') !== (v.mutationID === '')) throw new Error('Give both Client ID and Mutation ID to revert one mutation.');
  if (v.clientID !== '') cause.mutation = { clientID: v.clientID, mutationID: Number(v.mutationID) };
  if ((v.from === '') !== (v.to === '')) throw new Error('Give both From version and To version.');
  if (v.from !== '') cause.versions = [Number(v.from), Number(v.to)];
  if (v.since !== '') cause.since = Date.now() - Number(v.since) * 60_000;
  if (Object.keys(cause).length === 0) throw new Error('Give at least one of: user, client group, mutator, mutation, versions or since.');
  return { cause, onConflict: v.onConflict };
}

/**
 * A restore or revert form. "Dry run" posts `dryRun: true` and shows the plan; the real button
 * is enabled only while the inputs are those of the last dry run, and its click only arms a
 * "Confirm" button, which posts the dry run's very body (same `since`) with `dryRun: false`.
 * @param {string} space @param {'restore'|'revert'} path @param {string} verb
 * @param {HTMLElement[]} fields @param {(values: Record<string, string>) => Record<string, any>} toBody
 */
function actionForm(space, path, verb, fields, toBody) {
  const result = h('div', { 'aria-live': 'polite' });
  /** @type {{inputs: string, body: any} | null} */
  let tried = null;
  const values = () => Object.fromEntries(fields.map((f) => {
    const control = /** @type {HTMLInputElement} */ (f.querySelector('input, select'));
    return [control.name, control.value.trim()];
  }));
  const run = h('button', { type: 'button', class: 'danger', disabled: true, onclick: () => {
    confirm.hidden = false;
    confirm.focus();
  } }, verb);
  const confirm = h('button', { type: 'button', class: 'danger', hidden: true, onclick: async () => {
    if (!tried) return;
    const body = tried.body;
    reset();
    try {
      const { result: r } = await api(path, {}, { body: { ...body, dryRun: false } });
      const message = r.stopped ? `${verb} stopped: there were conflicts, nothing changed.` : r.version !== undefined && r.version !== null ? `${verb} done: the space is now at version ${r.version} (${keys(r.total ?? r.changes.length)} changed).` : `${verb} done: nothing needed to change.`;
      say(message);
      result.replaceChildren(h('p', { class: 'ok' }, message), ...flat(plan(r)));
    } catch (error) {
      result.replaceChildren(failed(error));
    }
  } }, `Confirm ${path}`);
  const reset = () => {
    tried = null;
    run.disabled = true;
    confirm.hidden = true;
  };
  const form = h('form', { onsubmit: async (e) => {
    e.preventDefault();
    reset();
    const inputs = JSON.stringify(values());
    let body;
    try {
      body = { space, ...toBody(values()) };
    } catch (error) {
      result.replaceChildren(failed(error));
      return;
    }
    result.replaceChildren(h('p', null, 'Running the dry run…'));
    try {
      const { result: r } = await api(path, {}, { body: { ...body, dryRun: true } });
      if (JSON.stringify(values()) !== inputs) return;
      tried = { inputs, body };
      run.disabled = false;
      say(`Dry run of the ${path}: ${keys(r.total ?? r.changes.length)} would change.`);
      result.replaceChildren(h('p', null, `Dry run: ${keys(r.total ?? r.changes.length)} would change${r.conflicts?.length ? `, ${num(r.conflicts.length)} conflict${r.conflicts.length === 1 ? '' : 's'}` : ''}${r.stopped ? '; with “stop”, nothing would change' : ''}.`), ...flat(plan(r)));
    } catch (error) {
      result.replaceChildren(failed(error));
    }
  }, oninput: () => {
    if (tried && JSON.stringify(values()) !== tried.inputs) reset();
  } }, h('div', { class: 'bar' }, fields), h('p', { class: 'bar' }, h('button', null, 'Dry run'), run, confirm));
  return h('section', { 'aria-labelledby': `${path}-h` }, h('h2', { id: `${path}-h` }, verb), form, result);
}

/** "1 key", "2 keys". @param {number} n */
const keys = (n) => `${num(n)} key${n === 1 ? '' : 's'}`;

/** A replay's answer `{queued}` in words. @param {any} r */
const queued = (r) => (typeof r?.queued === 'number' ? `${num(r.queued)} deliver${r.queued === 1 ? 'y' : 'ies'}` : short(r));

/** A plan's (or a result's) changes and conflicts, the first 500 of each. */
function plan(r) {
  const changes = r.changes ?? [];
  const conflicts = r.conflicts ?? [];
  const total = r.total ?? changes.length;
  return [
    changes.length ? table(`Changes (${num(total)}${total > Math.min(500, changes.length) ? `, the first ${num(Math.min(500, changes.length))} shown` : ''})`, ['Key', 'Before → after'], changes.slice(0, 500).map((c) => [h('code', null, c.key), change(c.before, c.after)])) : null,
    conflicts.length ? table(`Conflicts (${num(conflicts.length)}${conflicts.length > 500 ? ', the first 500 shown' : ''})`, ['Key', ['Version', 'num'], 'Would go back to', 'Now', 'Later changes'], conflicts.slice(0, 500).map((c) => [
      h('code', null, c.key), [c.version, 'num'], c.erased ? 'erased: never written' : h('code', null, short(c.revertTo, 80, '(deleted)')), h('code', null, short(c.current)),
      c.later.map((l) => `v${l.version} by ${origin(l.by)}`).join('; '),
    ])) : null,
  ];
}

// ——— Start ———

try {
  overview = await api('overview');
  document.getElementById('mode').hidden = !overview.readOnly;
} catch (error) {
  if (!(error instanceof ApiError && error.status === 401)) failed(error);
}
window.addEventListener('hashchange', () => show(true));
// The skip link must not route: the hash names the page shown.
document.querySelector('.skip')?.addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});
show(false);
