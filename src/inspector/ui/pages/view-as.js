/** The inspector's "view as a user" page, `#/space/<space>/view-as`: a space as one user's pulls see it. */
import { api, overview } from '../api.js';
import { backTo, failed, field, h, page, pager, table, val } from '../dom.js';
import { num } from '../format.js';
import { enc, spaceHref } from '../hrefs.js';
import { alive } from '../router.js';

/** `#/space/<space>/view-as?user=&group=&prefix=&after=`: which keys a user's pull gets, and why. */
export async function viewAsPage(space, query, signal) {
  const user = query.get('user') ?? '';
  const group = query.get('group') ?? '';
  const prefix = query.get('prefix') ?? '';
  const after = query.get('after') ?? '';
  const fields = [
    field('User ID', { name: 'user', value: user, required: true }),
    field('Client group ID', { name: 'group', value: group }),
    field('Key prefix', { name: 'prefix', value: prefix }),
  ];
  const form = h(
    'form',
    {
      class: 'bar',
      onsubmit: (e) => {
        e.preventDefault();
        const [u, g, p] = fields.map(val);
        location.hash = spaceHref(space, '/view-as', { user: u, group: g, prefix: p });
      },
    },
    fields,
    h('p', { class: 'field' }, h('button', null, 'Show')),
  );
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
  const tableBox = table(
    `Keys of ${space}${prefix ? ` starting with “${prefix}”` : ''} as user ${user} sees them (${num(data.received)} of ${num(data.entries.length)} received)`,
    ['Key', 'Received', 'Because'],
    data.entries.map((e) => [
      h('a', { href: spaceHref(space, `/key/${enc(e.key)}`) }, e.key),
      e.received ? h('span', { class: 'ok' }, 'yes') : 'no',
      e.because !== undefined
        ? e.because === ''
          ? 'the whole space'
          : h('code', null, e.because)
        : h('span', { class: 'muted' }, 'no prefix of the view covers it'),
    ]),
  );
  const rows = [...tableBox.querySelectorAll('tbody tr')];
  rows.forEach((row, i) => {
    row.dataset.received = data.entries[i].received ? 'yes' : 'no';
  });
  filter();
  page(
    `View ${space} as a user`,
    backTo(space),
    intro,
    form,
    h('h2', null, `The view of user ${data.userID ?? '(anonymous)'}, client group ${data.clientGroupID}`),
    data.refused !== undefined
      ? h('p', { class: 'error' }, `The view refuses this user: ${data.refused}`)
      : [
          h('p', null, 'Prefixes the view returns:'),
          data.prefixes.length === 0
            ? h('p', null, 'None: this user receives nothing.')
            : h(
                'ul',
                null,
                data.prefixes.map((p) => h('li', null, p === '' ? 'the whole space' : h('code', null, p))),
              ),
        ],
    data.entries.length === 0
      ? h('p', null, 'No keys here.')
      : [h('p', { class: 'check' }, only, h('label', { for: 'only-missed' }, 'Only keys not received')), tableBox],
    pager(after !== '', data.next, (next) => spaceHref(space, '/view-as', { user, group, prefix, after: next })),
  );
}

/** The "Only keys not received" filter, kept from page to page. */
let onlyMissed = false;
