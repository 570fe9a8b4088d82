/**
 * The inspector page's building blocks: elements made from plain data, the status region, and the
 * parts every page uses (its heading, tables, fields, pagers). Every key, value and name is
 * attacker-chosen text: it only ever reaches the page as textContent or an attribute, never as HTML.
 */
import { spaceHref } from './hrefs.js';

export const main = /** @type {HTMLElement} */ (document.getElementById('main'));
export const statusBox = /** @type {HTMLElement} */ (document.getElementById('status'));
const SVG = 'http://www.w3.org/2000/svg';

/**
 * Builds an element. `on…` attributes become listeners, `true` an empty attribute, and
 * null/undefined/false are left out; children may be strings, nodes, arrays or nothing.
 * @param {string} tag
 * @param {Record<string, any> | null} [attrs]
 * @param {...any} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs, ...children) {
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
export function flat(children) {
  return children
    .flat(Infinity)
    .filter((c) => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Node ? c : String(c)));
}

/** An SVG element (charts); attributes only. @param {string} tag @param {Record<string, any>} attrs */
export function svg(tag, attrs) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  return el;
}

/** Shows a notice (or an error) in the status region, which screen readers announce. */
export function say(message, error = false) {
  statusBox.textContent = message;
  statusBox.className = error ? 'error' : '';
}

/**
 * A table with a caption and column headers (scope=col); a `num` column is right-aligned.
 * @param {string} caption
 * @param {(string | [string, 'num'])[]} columns
 * @param {any[][]} rows cells: text, nodes, or [content, 'num']
 */
export function table(caption, columns, rows) {
  const head = columns.map((c) => (Array.isArray(c) ? h('th', { scope: 'col', class: c[1] }, c[0]) : h('th', { scope: 'col' }, c)));
  const body = rows.map((row) =>
    h(
      'tr',
      null,
      row.map((cell) => (Array.isArray(cell) && cell[1] === 'num' ? h('td', { class: 'num' }, cell[0]) : h('td', null, cell))),
    ),
  );
  return h('div', { class: 'scroll' }, h('table', null, h('caption', null, caption), h('thead', null, h('tr', null, head)), h('tbody', null, body)));
}

/** A labelled input (its label above it). @param {string} label @param {Record<string, any>} attrs */
export function field(label, attrs) {
  const id = `f-${++fieldIds}`;
  const control =
    attrs.tag === 'select'
      ? h(
          'select',
          { ...attrs, tag: null, options: null, id },
          attrs.options.map((o) => h('option', { value: o, selected: o === attrs.value }, o)),
        )
      : h('input', { type: 'text', ...attrs, id });
  return h('p', { class: 'field' }, h('label', { for: id }, label), control);
}
let fieldIds = 0;

/** The value of the first input in `el` (a field). @param {Element} el */
export const val = (el) => /** @type {HTMLInputElement} */ (el.querySelector('input')).value;

/** A <dl> of label–value pairs; pairs whose value is undefined are left out. @param {[string, any][]} pairs */
export function summary(pairs) {
  return h(
    'dl',
    { class: 'summary' },
    pairs.filter(([, v]) => v !== undefined).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]),
  );
}

/** Starts a page: its title, its one <h1>, and what comes below. @param {string} title @param {...any} content */
export function page(title, ...content) {
  document.title = `${title} – viewsync inspector`;
  main.replaceChildren(h('h1', null, title), ...flat(content));
}

/** A line showing where a space page came from. @param {string} space */
export function backTo(space) {
  return h('p', null, h('a', { href: spaceHref(space) }, `← Space ${space}`));
}

/** An error in the page and the status region. @param {unknown} error */
export function failed(error) {
  const message = error instanceof Error ? error.message : String(error);
  say(message, true);
  return h('p', { class: 'error' }, message);
}

/** "First page" and "Next page" buttons. @param {boolean} paged @param {string|undefined} next @param {(after: string) => string} href */
export function pager(paged, next, href) {
  return h(
    'p',
    { class: 'bar' },
    paged ? h('button', { type: 'button', class: 'secondary', onclick: () => (location.hash = href('')) }, 'First page') : null,
    next !== undefined ? h('button', { type: 'button', onclick: () => (location.hash = href(next)) }, 'Next page') : null,
  );
}
