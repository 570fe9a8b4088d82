/** The webhooks section of a space's page: each webhook's deliveries, and its enable and replay actions. */
import { api, overview } from '../api.js';
import { failed, field, h, say, table, val } from '../dom.js';
import { num, short } from '../format.js';
import { show } from '../router.js';

/** The webhooks of a space, with enable and replay when actions are on. */
export function webhooksSection(space, hooks) {
  const section = h('section', { 'aria-labelledby': 'webhooks-h' }, h('h2', { id: 'webhooks-h' }, 'Webhooks'));
  if (hooks instanceof Error) {
    section.append(failed(hooks));
    return section;
  }
  const list = hooks?.webhooks ?? [];
  section.append(
    table(
      'Webhook deliveries in this space',
      [
        'Webhook',
        'URL',
        'Cursor',
        ['Lag (versions)', 'num'],
        ['Lag (ms)', 'num'],
        ['Delivered', 'num'],
        ['Failures', 'num'],
        'Pending delivery',
        ['Replays', 'num'],
        'Disabled',
      ],
      list.map(({ name, url, state: w }) =>
        w
          ? [
              name,
              url ? h('code', null, url) : h('span', { class: 'muted' }, "not this server's"),
              h('code', null, w.cursor),
              [num(w.lagVersions), 'num'],
              [num(w.lagMs), 'num'],
              [num(w.delivered), 'num'],
              [num(w.failures), 'num'],
              w.pending
                ? [
                    h('code', null, w.pending.delivery),
                    `, attempt ${w.pending.attempts}, next ${new Date(w.pending.nextAttempt).toLocaleString()}`,
                    w.pending.error ? h('div', { class: 'error' }, w.pending.error) : null,
                  ]
                : '—',
              [num(w.replays), 'num'],
              w.disabled ? `${w.disabled.reason} (${new Date(w.disabled.at).toLocaleString()})` : 'no',
            ]
          : [name, h('code', null, url), h('span', { class: 'muted' }, 'no delivery yet'), '', '', '', '', '', '', ''],
      ),
    ),
  );
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
  if (state?.disabled)
    box.append(
      h(
        'p',
        null,
        h(
          'button',
          {
            type: 'button',
            onclick: () => act('webhooks/enable', {}, (r) => (r?.wasDisabled === false ? `Webhook ${name} was not disabled.` : `Webhook ${name} enabled.`)),
          },
          'Enable',
        ),
      ),
    );
  const delivery = field('Delivery ID', { name: 'delivery', value: state?.pending?.delivery ?? '', required: true });
  box.append(
    h(
      'form',
      {
        class: 'bar',
        onsubmit: (e) => {
          e.preventDefault();
          act('webhooks/replay', { delivery: val(delivery) }, (r) => `Webhook ${name}: ${queued(r)} queued for replay.`);
        },
      },
      delivery,
      h('p', { class: 'field' }, h('button', null, 'Replay delivery')),
    ),
  );
  const from = field('From cursor', { name: 'from', required: true });
  const to = field('To cursor', { name: 'to', required: true, value: state?.cursor ?? '' });
  box.append(
    h(
      'form',
      {
        class: 'bar',
        onsubmit: (e) => {
          e.preventDefault();
          act('webhooks/replay', { from: val(from), to: val(to) }, (r) => `Webhook ${name}: ${queued(r)} queued for replay.`);
        },
      },
      from,
      to,
      h('p', { class: 'field' }, h('button', null, 'Replay range')),
    ),
  );
  return box;
}

/** A replay's answer `{queued}` in words. @param {any} r */
const queued = (r) => (typeof r?.queued === 'number' ? `${num(r.queued)} deliver${r.queued === 1 ? 'y' : 'ies'}` : short(r));
