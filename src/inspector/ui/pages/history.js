/** The inspector's history page of a space, `#/space/<space>/history`: restore and revert. */
import { api, overview } from '../api.js';
import { backTo, failed, field, flat, h, page, say, table } from '../dom.js';
import { change, num, origin, short } from '../format.js';

/** `#/space/<space>/history`: restore and revert, each a dry run first, then a confirmed real run. */
export function historyPage(space) {
  if (overview.readOnly) {
    page(`History of ${space}`, backTo(space), h('p', null, 'Read-only: actions are off.'));
    return;
  }
  page(
    `History of ${space}`,
    backTo(space),
    h(
      'p',
      null,
      'Each action runs as a dry run first: it lists what would change. The real run is offered after a dry run of the same inputs and asks to be confirmed; it acts on the space as it is then, which may have changed since the dry run.',
    ),
    actionForm(
      space,
      'restore',
      'Restore',
      [field('Restore to version', { name: 'to', type: 'number', min: 0, step: 1, required: true }), field('Only keys starting with', { name: 'prefix' })],
      (v) => ({ to: Number(v.to), ...(v.prefix !== '' && { prefix: v.prefix }) }),
    ),
    actionForm(
      space,
      'revert',
      'Revert',
      [
        field('User ID', { name: 'userID' }),
        field('Client group ID', { name: 'clientGroupID' }),
        field('Mutator', { name: 'mutator' }),
        field('Client ID', { name: 'clientID' }),
        field('Mutation ID', { name: 'mutationID', type: 'number', min: 1, step: 1 }),
        field('From version', { name: 'from', type: 'number', min: 0, step: 1 }),
        field('To version', { name: 'to', type: 'number', min: 0, step: 1 }),
        field('Since (minutes ago)', { name: 'since', type: 'number', min: 0, step: 'any' }),
        field('On conflict', { tag: 'select', name: 'onConflict', options: ['skip', 'overwrite', 'stop'], value: 'skip' }),
      ],
      revertBody,
    ),
  );
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
  const values = () =>
    Object.fromEntries(
      fields.map((f) => {
        const control = /** @type {HTMLInputElement} */ (f.querySelector('input, select'));
        return [control.name, control.value.trim()];
      }),
    );
  const run = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      disabled: true,
      onclick: () => {
        confirm.hidden = false;
        confirm.focus();
      },
    },
    verb,
  );
  const confirm = h(
    'button',
    {
      type: 'button',
      class: 'danger',
      hidden: true,
      onclick: async () => {
        if (!tried) return;
        const body = tried.body;
        reset();
        try {
          const { result: r } = await api(path, {}, { body: { ...body, dryRun: false } });
          const message = r.stopped
            ? `${verb} stopped: there were conflicts, nothing changed.`
            : r.version !== undefined && r.version !== null
              ? `${verb} done: the space is now at version ${r.version} (${keys(r.total ?? r.changes.length)} changed).`
              : `${verb} done: nothing needed to change.`;
          say(message);
          result.replaceChildren(h('p', { class: 'ok' }, message), ...flat(plan(r)));
        } catch (error) {
          result.replaceChildren(failed(error));
        }
      },
    },
    `Confirm ${path}`,
  );
  const reset = () => {
    tried = null;
    run.disabled = true;
    confirm.hidden = true;
  };
  const form = h(
    'form',
    {
      onsubmit: async (e) => {
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
          result.replaceChildren(
            h(
              'p',
              null,
              `Dry run: ${keys(r.total ?? r.changes.length)} would change${r.conflicts?.length ? `, ${num(r.conflicts.length)} conflict${r.conflicts.length === 1 ? '' : 's'}` : ''}${r.stopped ? '; with “stop”, nothing would change' : ''}.`,
            ),
            ...flat(plan(r)),
          );
        } catch (error) {
          result.replaceChildren(failed(error));
        }
      },
      oninput: () => {
        if (tried && JSON.stringify(values()) !== tried.inputs) reset();
      },
    },
    h('div', { class: 'bar' }, fields),
    h('p', { class: 'bar' }, h('button', null, 'Dry run'), run, confirm),
  );
  return h('section', { 'aria-labelledby': `${path}-h` }, h('h2', { id: `${path}-h` }, verb), form, result);
}

/** A plan's (or a result's) changes and conflicts, the first 500 of each. */
function plan(r) {
  const changes = r.changes ?? [];
  const conflicts = r.conflicts ?? [];
  const total = r.total ?? changes.length;
  return [
    changes.length
      ? table(
          `Changes (${num(total)}${total > Math.min(500, changes.length) ? `, the first ${num(Math.min(500, changes.length))} shown` : ''})`,
          ['Key', 'Before → after'],
          changes.slice(0, 500).map((c) => [h('code', null, c.key), change(c.before, c.after)]),
        )
      : null,
    conflicts.length
      ? table(
          `Conflicts (${num(conflicts.length)}${conflicts.length > 500 ? ', the first 500 shown' : ''})`,
          ['Key', ['Version', 'num'], 'Would go back to', 'Now', 'Later changes'],
          conflicts
            .slice(0, 500)
            .map((c) => [
              h('code', null, c.key),
              [c.version, 'num'],
              c.erased ? 'erased: never written' : h('code', null, short(c.revertTo, 80, '(deleted)')),
              h('code', null, short(c.current)),
              c.later.map((l) => `v${l.version} by ${origin(l.by)}`).join('; '),
            ]),
        )
      : null,
  ];
}

/** "1 key", "2 keys". @param {number} n */
const keys = (n) => `${num(n)} key${n === 1 ? '' : 's'}`;
