/** The inspector's feed of a space, `#/space/<space>/feed`: its changes as they come. */
import { api, ApiError } from '../api.js';
import { backTo, failed, h, page, say } from '../dom.js';
import { change, num, origin, short, time } from '../format.js';
import { enc, spaceHref } from '../hrefs.js';
import { alive, every, stopTimers } from '../router.js';

/** `#/space/<space>/feed`: the last changes, then new ones at the top as they come, every second. */
export async function feedPage(space, signal) {
  const body = h('tbody');
  let note = h('p', { class: 'muted' }, 'Loading…');
  let paused = false;
  let busy = false;
  let cursor = '';
  let count = 0;
  const toggle = h(
    'button',
    {
      type: 'button',
      onclick: () => {
        paused = !paused;
        toggle.textContent = paused ? 'Resume' : 'Pause';
        say(paused ? 'Feed paused.' : 'Feed resumed.');
      },
    },
    'Pause',
  );
  const tableBox = h(
    'div',
    { class: 'scroll' },
    h(
      'table',
      null,
      h('caption', null, 'Changes, newest first'),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['Version', 'Time', 'Op', 'Key or topic', 'Change', 'Made by'].map((c) => h('th', { scope: 'col' }, c)),
        ),
      ),
      body,
    ),
  );
  page(`Feed of ${space}`, backTo(space), h('p', { class: 'bar' }, toggle), note, tableBox);
  /** Adds changes (oldest first as they come) at the top, keeping the latest 500 rows. */
  const add = (changes) => {
    for (const c of changes) {
      const what =
        c.op === 'event'
          ? [h('code', null, short(c.payload)), c.erased ? ' (erased)' : '']
          : [change(c.before, c.after), c.op === 'erased' ? ` (erased: ${c.erased})` : ''];
      body.prepend(
        h(
          'tr',
          null,
          h('td', { class: 'num' }, `${c.version}.${c.seq}`),
          h('td', null, time(c.at)),
          h('td', null, c.op === 'erased' ? `${c.was}, erased` : c.op),
          h('td', null, c.op === 'event' ? ['event ', h('code', null, c.topic)] : h('a', { href: spaceHref(space, `/key/${enc(c.key)}`) }, c.key)),
          h('td', null, what),
          h('td', null, origin(c.by)),
        ),
      );
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
      note.replaceWith((note = failed(error)));
      // A 4xx (no feed kept, say) will not mend by asking again.
      if (error instanceof ApiError && error.status < 500) {
        stopTimers();
        toggle.disabled = true;
      }
    } finally {
      busy = false;
    }
  };
  await poll();
  if (alive(signal) && !toggle.disabled) every(poll, 1000);
}
