/** The inspector's page of one space, `#/space/<space>`: what it holds, who syncs it, and its webhooks. */
import { api, overview } from '../api.js';
import { h, page, summary, table } from '../dom.js';
import { ago, bytes, moveText, num, quotaUse, schema, time } from '../format.js';
import { spaceHref } from '../hrefs.js';
import { alive } from '../router.js';
import { webhooksSection } from './webhooks.js';

/** `#/space/<space>`: its summary, client groups, schema versions, migrations and webhooks. */
export async function spacePage(space, signal) {
  const [s, hooks] = await Promise.all([
    api('space', { space }, { signal }),
    // Always asked: a webhook another process names (the CLI's inspector names none) has a state here too.
    api('webhooks', { space }, { signal }).catch((error) => error),
  ]);
  if (!alive(signal)) return;
  const log = s.changes;
  const links = h(
    'ul',
    { class: 'links' },
    h('li', null, h('a', { href: spaceHref(space, '/keys') }, 'Keys')),
    h('li', null, h('a', { href: spaceHref(space, '/feed') }, 'Feed')),
    h('li', null, h('a', { href: spaceHref(space, '/view-as') }, 'View as a user')),
    (overview.changes || overview.history) && !overview.readOnly
      ? h('li', null, h('a', { href: spaceHref(space, '/history') }, 'History (restore, revert)'))
      : null,
  );
  const groups = s.groups ?? [];
  page(
    `Space ${space}`,
    h('p', null, h('a', { href: '#/' }, '← Spaces')),
    links,
    h('h2', null, 'Summary'),
    summary([
      ['Version', num(s.version)],
      ['Entries', num(s.entries)],
      ['Bytes', bytes(s.bytes)],
      ['History', bytes(s.history)],
      [
        'Quota',
        s.quota
          ? `${quotaUse(s)} (${[s.quota.entries !== undefined && `${num(s.quota.entries)} entries`, s.quota.bytes !== undefined && `${bytes(s.quota.bytes)}`, s.quota.historyBytes !== undefined && `history ${s.quota.historyBytes === false ? 'unbounded' : bytes(s.quota.historyBytes)}`].filter(Boolean).join(', ')})`
          : 'none',
      ],
      ['Store', s.store],
      ['Move', s.move ? moveText(s.move) : undefined],
      ['Client groups', `${num(s.clientGroups)}${s.groupsCut ? ' (of the first 1,000 listed)' : ''}`],
      ['Last activity', s.lastActivity ? [time(s.lastActivity), ` (${ago(s.lastActivity)})`] : 'none'],
      [
        'Change log',
        log
          ? `whole from ${log.from === null ? '— (not whole now)' : `v${log.from}`}${log.oldest ? `, oldest change ${new Date(log.oldest).toLocaleString()}` : ''}`
          : 'not kept',
      ],
      [
        'Checkpoints',
        log && log.checkpoints.length > 0 ? log.checkpoints.map((c) => `v${c.version}${c.done ? '' : ' (being written)'}`).join(', ') : undefined,
      ],
      ['Rejected mutations', num(s.rejected ?? 0)],
      ['Staging', s.staging?.length ? s.staging.map((a) => `import begun ${new Date(a.started).toLocaleString()}`).join('; ') : 'none'],
    ]),
    h('h2', null, 'Client groups'),
    groups.length === 0
      ? h('p', null, 'No client groups.')
      : table(
          `Client groups (${s.groupsCut ? `the first ${num(groups.length)}` : num(groups.length)})`,
          ['User', 'Client group', 'Last active', 'Expired', 'Schema version', 'Clients (lastMutationID)'],
          groups.map((g) => [
            g.userID ?? h('span', { class: 'muted' }, 'anonymous'),
            h('code', null, g.clientGroupID),
            time(g.lastActive),
            g.expired ? 'yes' : 'no',
            schema(g.schemaVersion),
            Object.entries(g.clients).map(([id, lmid], i) => [i > 0 ? ', ' : '', h('code', null, id), `: ${lmid}`]),
          ]),
        ),
    s.schemaVersions
      ? [
          h('h2', null, 'Schema versions'),
          table(
            'Client groups active lately, by schema version',
            ['Schema version', ['Client groups', 'num']],
            Object.entries(s.schemaVersions).map(([v, n]) => [v === '?' ? '? (not recorded)' : schema(v), [num(n), 'num']]),
          ),
        ]
      : null,
    s.rejectedMutations?.length
      ? [
          h('h2', null, 'Rejected mutations'),
          table(
            `Rejected mutations (the latest ${num(Math.min(50, s.rejectedMutations.length))})`,
            ['Time', 'Mutation', 'Client', 'Schema version', 'Reason'],
            s.rejectedMutations
              .slice(-50)
              .reverse()
              .map((r) => [time(r.at), r.name, `${r.clientID} #${r.id}`, r.schemaVersion, r.reason]),
          ),
        ]
      : null,
    h('h2', null, 'Migrations'),
    s.migrations
      ? table(
          'Data migrations',
          ['Migration', 'State', ['Entries done', 'num'], 'Last key', 'Started', 'Finished'],
          Object.entries(s.migrations).map(([name, m]) => [
            name,
            m.state,
            [num(m.entries), 'num'],
            m.after !== undefined ? h('code', null, m.after) : '—',
            time(m.started),
            time(m.finished),
          ]),
        )
      : h('p', null, 'No data migration ran in this space.'),
    hooks instanceof Error || hooks.webhooks.length > 0 ? webhooksSection(space, hooks) : null,
  );
}
