/**
 * `viewsync history`, `restore`, `revert` and `erase` from a shell, on a SQLite file a server
 * with the change feed wrote: what each prints, that a dry run writes nothing, that a revert
 * stopped on conflicts exits 3 and lists every one, that the CLI's writes are in the change log
 * as a restore's, a revert's and an erasure's, and that each mistake exits 2 in one line,
 * changing nothing.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createContext, type SyncContext } from '../../src/index.js';
import { at, readHistory } from '../../src/backend.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { mutation, push, testMutators } from '../support/helpers.js';
import { sh, work } from './process.js';

/** A server on the SQLite file keeping the feed, users named by the `user` header, every request in space `s`; `stop` closes the file. */
function server(file: string): SyncContext & { stop(): void } {
  const db = openSQLite(file);
  const ctx = createContext({
    storage: sqliteStorage(db),
    mutators: testMutators,
    onError: () => {},
    changes: {},
    authenticate: (request) => request.headers.get('user'),
    space: () => 's',
  });
  return Object.assign(ctx, { stop: () => db.close() });
}

/**
 * A space `s` written by two users, each by a client group of their own: mallory sets a, b and
 * c, then bob writes b again and an escape sequence into d. Answers the versions the writes made.
 */
async function twoUsers(file: string): Promise<{ before: number; mallory: number; bob: number }> {
  const run = server(file);
  await push(run, 'g-bob', [mutation('c-bob', 1, 'put', { key: 'a', value: 'first' })], { user: 'bob' });
  const before = (await readHistory(run, 's')).version;
  await push(
    run,
    'g-mal',
    [
      mutation('c-mal', 1, 'put', { key: 'a', value: 'spam' }),
      mutation('c-mal', 2, 'put', { key: 'b', value: { junk: 1 } }),
      mutation('c-mal', 3, 'put', { key: 'c', value: 'spam' }),
    ],
    { user: 'mallory' },
  );
  const mallory = (await readHistory(run, 's')).version;
  await push(
    run,
    'g-bob',
    [mutation('c-bob', 2, 'put', { key: 'b', value: 'fixed by bob' }), mutation('c-bob', 3, 'put', { key: 'd', value: 'evil \u001b[2J text' })],
    { user: 'bob' },
  );
  const bob = (await readHistory(run, 's')).version;
  run.stop();
  return { before, mallory, bob };
}

/** What the space holds now, and its version, read from the file. */
async function now(file: string): Promise<{ version: number; entries: Record<string, unknown> }> {
  const run = server(file);
  try {
    const { version } = await readHistory(run, 's');
    return { version, entries: Object.fromEntries((await at(run, 's', version)).entries) };
  } finally {
    run.stop();
  }
}

/** The origins of the changes of `key`, as the change log holds them. */
async function madeBy(file: string, key: string): Promise<string[]> {
  const run = server(file);
  try {
    return (await readHistory(run, 's', { key })).changes.map(({ by }) => by.kind);
  } finally {
    run.stop();
  }
}

describe('viewsync history, restore, revert and erase', () => {
  it('history prints each change of the space, a key or a prefix, and who made it, with client text escaped; --at the space as of a version', async () => {
    const file = join(work, 'history.db');
    const { before, mallory } = await twoUsers(file);
    const all = sh(`viewsync history s --sqlite ${file}`);
    expect([all.status, all.stderr]).toEqual([0, '']);
    const [head, ...rows] = all.stdout.trimEnd().split('\n');
    expect(head).toMatch(/^VERSION\s+AT\s+OP\s+KEY\s+BY\s+USER\s+CLIENT GROUP\s+MUTATOR\s+BEFORE → AFTER$/);
    expect(rows).toHaveLength(6);
    expect(rows[1]).toMatch(
      new RegExp(`^${mallory}\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\s+set\\s+a\\s+mutation c-mal#1\\s+mallory\\s+g-mal\\s+put\\s+"first" → "spam"$`),
    );
    // A client's escape sequence is printed escaped, never sent to the terminal.
    expect(all.stdout).not.toContain('\u001b');
    expect(rows[5]).toMatch(/set\s+d\s+mutation c-bob#3\s+bob\s+g-bob\s+put\s+\(none\) → "evil \\u001b\[2J text"$/);
    const key = sh(`viewsync history s b --sqlite ${file}`);
    expect(
      key.stdout
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((line) => line.split(/\s{2,}/).at(-1)),
    ).toEqual(['(none) → {"junk":1}', '{"junk":1} → "fixed by bob"']);
    const prefix = JSON.parse(sh(`viewsync history s --prefix c --json --sqlite ${file}`).stdout) as {
      space: string;
      changes: Array<{ key: string; by: { kind: string; userID: string } }>;
      more: boolean;
    };
    expect(prefix).toMatchObject({ space: 's', changes: [{ key: 'c', by: { kind: 'mutation', userID: 'mallory' } }], more: false });
    const paged = sh(`viewsync history s --limit 1 --sqlite ${file}`);
    expect([paged.status, paged.stdout.trimEnd().split('\n').length, paged.stderr]).toEqual([
      0,
      2,
      `viewsync: more changes follow: go on with --after ${before}\n`,
    ]);
    expect(sh(`viewsync history s --after ${mallory} --sqlite ${file}`).stdout.trimEnd().split('\n')).toHaveLength(3);
    const then = sh(`viewsync history s --at ${before} --sqlite ${file}`);
    expect([then.status, then.stdout]).toEqual([0, `KEY  VALUE AT VERSION ${before}\na    "first"\n`]);
    expect(JSON.parse(sh(`viewsync history s --at ${mallory} --prefix b --json --sqlite ${file}`).stdout)).toEqual({
      space: 's',
      version: mallory,
      entries: [['b', { junk: 1 }]],
      more: false,
    });
  });

  it('restore --dry-run writes nothing; restore makes the space what it was, as a new version the change log says a restore made', async () => {
    const file = join(work, 'restore.db');
    const { before } = await twoUsers(file);
    const was = await now(file);
    const dry = sh(`viewsync restore s --to ${before} --dry-run --sqlite ${file}`);
    expect([dry.status, dry.stderr]).toEqual([0, '']);
    expect(dry.stdout).toMatch(
      new RegExp(
        `^Dry run: restoring "s" to version ${before} would change 4 keys \\(1 set, 3 deleted\\); nothing was written\\.\\n\\nKEY\\s+NOW\\s+BECOMES\\na\\s+"spam"\\s+"first"\\nb\\s+"fixed by bob"\\s+\\(deleted\\)\\n`,
      ),
    );
    expect(await now(file)).toEqual(was);
    const prefix = JSON.parse(sh(`viewsync restore s --to ${before} --prefix c --json --sqlite ${file}`).stdout) as { version: number; changes: unknown[] };
    expect(prefix).toMatchObject({ space: 's', to: before, prefix: 'c', dryRun: false, changes: [{ key: 'c', before: 'spam' }] });
    const done = sh(`viewsync restore s --to ${before} --sqlite ${file}`);
    expect([done.status, done.stderr]).toEqual([0, '']);
    const after = await now(file);
    expect(done.stdout).toMatch(new RegExp(`^Restored "s" to version ${before}: changed 3 keys \\(1 set, 2 deleted\\), as version ${after.version}\\.\\n`));
    expect(after.entries).toEqual({ a: 'first' });
    expect(await madeBy(file, 'a')).toEqual(['mutation', 'mutation', 'restore']);
    expect(sh(`viewsync restore s --to ${before} --sqlite ${file}`).stdout).toBe(`"s" is as it was at version ${before}: nothing to change.\n`);
    // Beside a server holding the file, the dry runs read; a write is refused, the file being that process's.
    const running = server(file);
    try {
      expect(sh(`viewsync restore s --to 0 --dry-run --sqlite ${file}`).status).toBe(0);
      expect(sh(`viewsync revert s --user bob --dry-run --on-conflict skip --sqlite ${file}`).status).toBe(0);
      const refused = sh(`viewsync restore s --to 0 --sqlite ${file}`);
      expect([refused.status, refused.stderr]).toEqual([1, expect.stringMatching(/is in use by another viewsync store/)]);
    } finally {
      running.stop();
    }
  });

  it('revert stops on conflicts by default (exit 3, every conflict listed, nothing changed); skip reverts the rest; the dry runs write nothing', async () => {
    const file = join(work, 'revert.db');
    const { before, mallory, bob } = await twoUsers(file);
    const was = await now(file);
    const stopped = sh(`viewsync revert s --user mallory --since 1h --sqlite ${file}`);
    expect(stopped.status).toBe(3);
    expect(stopped.stdout).toMatch(
      /^Reverting what user mallory, since [\d: -]+ did in "s" stopped on 1 conflict, listed below: nothing was changed\.\n\nConflicts: 1 key that a later change of another cause wrote:\n/,
    );
    expect(stopped.stdout).toMatch(new RegExp(`\\nb\\s+\\d+\\s+\\(deleted\\)\\s+"fixed by bob"\\s+v${bob} mutation c-bob#2 \\(put\\) by bob group g-bob\\n$`));
    expect(stopped.stderr).toMatch(/^viewsync: the revert stopped on 1 conflict: .* --on-conflict skip leaves those keys/);
    expect(await now(file)).toEqual(was);
    // A dry run says what the run would do: stopped too, exit 3.
    expect(sh(`viewsync revert s --user mallory --dry-run --sqlite ${file}`).status).toBe(3);
    const dry = sh(`viewsync revert s --client-group g-mal --on-conflict skip --dry-run --json --sqlite ${file}`);
    expect(dry.status).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      dryRun: true,
      stopped: false,
      changes: [
        { key: 'a', before: 'spam', after: 'first' },
        { key: 'c', before: 'spam' },
      ],
      conflicts: [{ key: 'b', version: expect.any(Number), current: 'fixed by bob', later: [{ version: bob, by: { kind: 'mutation', userID: 'bob' } }] }],
    });
    expect(await now(file)).toEqual(was);
    // Selectors combine: mallory's put of c alone.
    const one = sh(`viewsync revert s --user mallory --mutation c-mal:3 --sqlite ${file}`);
    expect([one.status, one.stderr]).toEqual([0, '']);
    expect(one.stdout).toMatch(/^Reverted what user mallory, mutation c-mal:3 did in "s": changed 1 key \(0 set, 1 deleted\), as version \d+\.\n/);
    const skip = sh(`viewsync revert s --mutator put --versions ${before + 1}..${mallory} --on-conflict skip --sqlite ${file}`);
    expect([skip.status, skip.stderr]).toEqual([0, '']);
    expect(skip.stdout).toMatch(/: changed 1 key \(1 set, 0 deleted\), as version \d+; 1 conflict left as is \(--on-conflict skip\), listed below\.\n/);
    expect((await now(file)).entries).toEqual({ a: 'first', b: 'fixed by bob', d: 'evil \u001b[2J text' });
    expect(await madeBy(file, 'a')).toEqual(['mutation', 'mutation', 'revert']);
  });

  it("erase takes a key's values out of the live data and the history, and says so", async () => {
    const file = join(work, 'erase.db');
    await twoUsers(file);
    const erased = sh(`viewsync erase s --key b --sqlite ${file}`);
    expect([erased.status, erased.stderr]).toEqual([0, '']);
    expect(erased.stdout).toMatch(
      /^Erased key "b" from "s": 1 key deleted, 3 changes of its history without their values, 0 checkpoint rows removed, 0 rejected mutations without their args, as version \d+\.\n.*viewsync\.erased event.*\nDeleted: "b"\n$/,
    );
    expect((await now(file)).entries).not.toHaveProperty('b');
    const history = sh(`viewsync history s b --sqlite ${file}`).stdout;
    expect(history).not.toContain('junk');
    expect(history).not.toContain('fixed by bob');
    expect(
      history
        .trimEnd()
        .split('\n')
        .map((line) => line.split(/\s{2,}/).at(-1)),
    ).toEqual(['BEFORE → AFTER', '(none) → (erased)', '(erased) → (erased)', '(erased) → (deleted)']);
    const user = JSON.parse(sh(`viewsync erase s --user mallory --json --sqlite ${file}`).stdout) as { deleted: string[] };
    expect(user).toMatchObject({ space: 's', target: { userID: 'mallory' }, deleted: ['a', 'c'] });
  });

  it('each mistake exits 2 in one line and changes nothing; a space the store does not hold exits 1', async () => {
    const file = join(work, 'mistakes.db');
    const { bob } = await twoUsers(file);
    const was = await now(file);
    for (const [line, message] of [
      ['history', /^viewsync: history needs a SPACE/],
      ['history s a b', /history takes a SPACE and at most one KEY/],
      ['history s a --prefix a', /history takes a KEY or --prefix, not both/],
      ['history s a --at 1', /history --at reads the whole space as of a version: it takes --prefix, not a KEY/],
      ['history s --after x', /--after takes a version, a whole number of at least 0, got "x"/],
      ['history s --limit 0', /--limit takes a whole number from 1 to 10,000, got "0"/],
      [`history s --at ${bob + 1}`, new RegExp(`^viewsync: Version ${bob + 1} of space "s" is not kept: its history holds versions 0 to ${bob} `)],
      ['history s --to 1', /history takes no --to/],
      ['restore s', /restore needs --to VERSION/],
      ['restore s --to=-1', /--to takes a version, a whole number of at least 0, got "-1"/],
      ['restore s --to 1.5', /--to takes a version, a whole number of at least 0, got "1.5"/],
      ['restore s --to 1 --to 2', /--to is given twice: give it once/],
      [`restore s --to ${bob + 1}`, /is not kept: its history holds versions 0 to/],
      ['restore s t --to 1', /restore takes one SPACE, got 2 arguments/],
      ['revert s', /revert needs a cause: --client-group G, --user U, --mutator NAME, --mutation CLIENTID:MUTATIONID or --versions A\.\.B/],
      ['revert s --since 1m', /revert needs a cause/],
      ['revert s --versions 5..2', /--versions 5\.\.2 runs backwards: give the lower version first \(2\.\.5\)/],
      ['revert s --versions 5', /--versions takes a range of versions A\.\.B/],
      ['revert s --mutation c-mal', /--mutation takes CLIENTID:MUTATIONID/],
      ['revert s --user u --on-conflict maybe', /--on-conflict takes skip, overwrite or stop, got "maybe"/],
      ['revert s --user u --since 1', /--since takes a duration above 0 with its unit/],
      ['revert s --user u --user v', /--user is given twice/],
      ['revert s --key a', /revert takes no --key/],
      ['erase s', /erase needs what to erase: --key K, --prefix P or --user U/],
      ['erase s --key a --user u', /erase takes one of --key, --prefix or --user, got --key and --user/],
      ["erase s --prefix ''", /erase --prefix '' would erase the whole space/],
      ['erase s --key a --dry-run', /erase takes no --dry-run/],
    ] as const) {
      const run = sh(`viewsync ${line} --sqlite ${file}`);
      expect([line, run.status, run.stdout]).toEqual([line, 2, '']);
      expect(run.stderr, line).toMatch(message);
      // One line, and the pointer to --help where the command line itself was wrong.
      expect(
        run.stderr
          .trimEnd()
          .split('\n')
          .filter((each) => !each.startsWith("Run 'viewsync --help'")),
        line,
      ).toHaveLength(1);
    }
    expect(await now(file)).toEqual(was);
    const unknown = sh(`viewsync restore nope --to 0 --sqlite ${file}`);
    expect([unknown.status, unknown.stderr]).toEqual([
      1,
      'viewsync: Space "nope" holds no data in this store: check its name (\'viewsync inspect\' lists the spaces)\n',
    ]);
    expect(sh(`viewsync --help`).stdout).toMatch(/3 a revert stopped on conflicts/);
    expect(sh(`viewsync revert --help`).stdout).toMatch(/Exit 3 when the revert\nstopped on conflicts/);
  });
});

describe('gc and history', () => {
  it('keeps the log for the longer of --changes and --keep-history: history a server keeps longer is not trimmed by a gc told only --changes', async () => {
    const file = join(work, 'gc-history.db');
    const db = openSQLite(file);
    const day = 24 * 60 * 60 * 1000;
    // Written ten days ago, by a server that keeps history for 90 days.
    const old = createContext({
      storage: sqliteStorage(db),
      mutators: testMutators,
      onError: () => {},
      history: {},
      clock: () => Date.now() - 10 * day,
      space: () => 's',
    });
    await push(old, 'g', [mutation('c', 1, 'put', { key: 'a', value: 'then' }), mutation('c', 2, 'put', { key: 'a', value: 'later' })]);
    db.close();
    const kept = sh(`viewsync gc --sqlite ${file} --changes 1d --keep-history 90d --json`);
    expect([kept.status, kept.stderr]).toEqual([0, '']);
    expect(JSON.parse(kept.stdout)).toMatchObject({ changes: 0 });
    const trimmed = sh(`viewsync gc --sqlite ${file} --changes 1d --json`);
    expect(JSON.parse(trimmed.stdout)).toMatchObject({ changes: 2 });
    expect(sh(`viewsync gc --sqlite ${file} --keep-history soon`)).toMatchObject({
      status: 2,
      stderr: expect.stringMatching(/--keep-history takes a duration/),
    });
  });
});
