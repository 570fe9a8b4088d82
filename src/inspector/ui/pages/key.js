/** The inspector's page of one key, `#/space/<space>/key/<key>`: its value now and its history. */
import { api } from '../api.js';
import { h, page, table } from '../dom.js';
import { change, origin, time } from '../format.js';
import { enc, spaceHref } from '../hrefs.js';
import { alive } from '../router.js';

/** `#/space/<space>/key/<key>?before=`: the value now and its changes, newest first, 50 at a time. */
export async function keyPage(space, key, query, signal) {
  const before = query.get('before') ?? '';
  const data = await api('key', { space, key, before }, { signal });
  if (!alive(signal)) return;
  const hist = data.history;
  page(
    `Key ${key}`,
    h('p', null, h('a', { href: spaceHref(space, '/keys') }, `← Keys of ${space}`)),
    h('h2', null, 'Value now'),
    'value' in data ? h('pre', { tabindex: 0, 'aria-label': 'Value now' }, JSON.stringify(data.value, null, 2)) : h('p', null, 'This key does not exist now.'),
    h('h2', null, 'History'),
    data.noHistory ? h('p', null, data.noHistory) : null,
    hist
      ? [
          h('p', { class: 'muted' }, `History keeps versions ${hist.kept.from} to ${hist.kept.to}.`),
          hist.changes.length === 0
            ? h('p', null, 'No changes of this key in the versions kept.')
            : table(
                `Changes of ${key}, newest first`,
                [['Version', 'num'], 'Time', 'Change', 'Made by'],
                hist.changes.map((c) => [
                  [c.version, 'num'],
                  time(c.at),
                  c.erased ? [change(c.before, c.after), ` (erased: ${c.erased})`] : change(c.before, c.after),
                  origin(c.by),
                ]),
              ),
          h(
            'p',
            { class: 'bar' },
            before
              ? h('button', { type: 'button', class: 'secondary', onclick: () => (location.hash = spaceHref(space, `/key/${enc(key)}`)) }, 'Newest changes')
              : null,
            hist.older
              ? h(
                  'button',
                  { type: 'button', onclick: () => (location.hash = spaceHref(space, `/key/${enc(key)}`, { before: hist.changes.at(-1).version })) },
                  'Older changes',
                )
              : null,
          ),
        ]
      : null,
  );
}
