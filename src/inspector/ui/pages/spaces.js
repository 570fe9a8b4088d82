/** The inspector's first page, `#/`: the spaces, a page at a time. */
import { api } from '../api.js';
import { field, h, page, pager, table, val } from '../dom.js';
import { bytes, moveText, num, quotaUse } from '../format.js';
import { hashQuery, spaceHref } from '../hrefs.js';
import { alive } from '../router.js';

/** `#/`: a page of spaces (never more than one fetched, so 10,000 spaces cost what 50 do). */
export async function spacesPage(query, signal) {
  const prefix = query.get('prefix') ?? '';
  const after = query.get('after') ?? '';
  const data = await api('spaces', { prefix, after, limit: 50 }, { signal });
  if (!alive(signal)) return;
  const form = h(
    'form',
    {
      class: 'bar',
      role: 'search',
      onsubmit: (e) => {
        e.preventDefault();
        location.hash = `#/${hashQuery({ prefix: val(form) })}`;
      },
    },
    field('Space name starts with', { name: 'prefix', value: prefix }),
    h('p', { class: 'field' }, h('button', null, 'Filter')),
  );
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
  page(
    'Spaces',
    form,
    rows.length === 0
      ? h('p', null, prefix || after ? 'No spaces here.' : 'No spaces yet.')
      : table(
          `Spaces${prefix ? ` starting with “${prefix}”` : ''}${after ? ` after “${after}”` : ''}`,
          [
            'Space',
            ['Version', 'num'],
            ['Entries', 'num'],
            ['Bytes', 'num'],
            ['History', 'num'],
            'Quota use',
            'Store',
            'Move',
            ['Pushes (1 min)', 'num'],
            ['Pulls (1 min)', 'num'],
          ],
          rows,
        ),
    pager(after !== '', data.next, (next) => `#/${hashQuery({ prefix, after: next })}`),
  );
}
