/** The inspector's key browser, `#/space/<space>/keys`: a space's entries now, or as of a version. */
import { api, overview } from '../api.js';
import { backTo, failed, field, h, page, pager, table, val } from '../dom.js';
import { bytes, num } from '../format.js';
import { enc, spaceHref } from '../hrefs.js';
import { alive } from '../router.js';

/** `#/space/<space>/keys?prefix=&version=&after=`: a page of 100 entries, now or as of a version. */
export async function keysPage(space, query, signal) {
  const prefix = query.get('prefix') ?? '';
  const version = query.get('version') ?? '';
  const after = query.get('after') ?? '';
  const asOf = overview.changes || overview.history;
  const prefixField = field('Key prefix', { name: 'prefix', value: prefix });
  const versionField = asOf ? field('As of version', { name: 'version', type: 'number', min: 0, step: 1, value: version }) : null;
  const form = h(
    'form',
    {
      class: 'bar',
      role: 'search',
      onsubmit: (e) => {
        e.preventDefault();
        location.hash = spaceHref(space, '/keys', { prefix: val(prefixField), version: versionField ? val(versionField) : '' });
      },
    },
    prefixField,
    versionField,
    h('p', { class: 'field' }, h('button', null, 'Show')),
  );
  let data;
  try {
    data = await api('keys', { space, prefix, after, limit: 100, version }, { signal });
  } catch (error) {
    if (!alive(signal)) return;
    page(`Keys of ${space}`, backTo(space), form, failed(error));
    return;
  }
  if (!alive(signal)) return;
  page(
    `Keys of ${space}`,
    backTo(space),
    form,
    data.entries.length === 0
      ? h('p', null, 'No keys here.')
      : table(
          `Keys${prefix ? ` starting with “${prefix}”` : ''} at version ${num(data.version)}${version ? ' (from history)' : ''}`,
          ['Key', ['Size', 'num'], 'Value (JSON)'],
          data.entries.map((e) => [
            h('a', { href: spaceHref(space, `/key/${enc(e.key)}`) }, e.key),
            [bytes(e.bytes), 'num'],
            h('code', null, e.json + (e.cut ? '…' : '')),
          ]),
        ),
    pager(after !== '', data.next, (next) => spaceHref(space, '/keys', { prefix, version, after: next })),
  );
}
