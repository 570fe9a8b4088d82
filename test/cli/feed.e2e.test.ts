/**
 * The CLI beside a store that keeps the change feed, as an operator uses it: an export and an
 * import between two runs of a server with webhooks no longer stop them; `viewsync feed` says
 * whether the store keeps the feed and `feed off` turns it off; `viewsync webhook enable` takes
 * a webhook a gap in the log stopped past it only when told, and `inspect` shows why it stopped.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createContext, type SyncContext } from '../../src/index.js';
import { deliverWebhooks, transact } from '../../src/backend.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { startReceiver } from '../feed/receiver.js';
import { sh, work } from './process.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const receiver = await startReceiver();
afterAll(() => receiver.close());

/** A run of a server on the SQLite file, with the feed and a webhook: its failures in `errors`; `stop` closes the file. */
function server(file: string): SyncContext & { errors: string[]; stop(): void } {
  const db = openSQLite(file);
  const errors: string[] = [];
  const ctx = createContext({
    storage: sqliteStorage(db),
    mutators: {},
    onError: (error) => errors.push(String(error)),
    changes: { webhooks: { hook: { url: receiver.url, secret: SECRET, allowPrivateAddresses: true } } },
  });
  return Object.assign(ctx, { errors, stop: () => db.close() });
}

const delivered = () =>
  receiver.delivered().flatMap(({ delivery }) => delivery.changes.map((change) => `${change.space}:${'key' in change ? change.key : ''}`));

describe('the CLI and the change feed', () => {
  it('an export and an import (merge, and a seed of a new space) between two runs of a server leave its webhooks delivering', async () => {
    const file = join(work, 'feed.db');
    let run = server(file);
    await transact(run, 's', (tx) => tx.set('a', 1));
    expect(await deliverWebhooks(run)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    run.stop();
    expect(sh(`viewsync export s --sqlite ${file} --quiet > s.ndjson`).status).toBe(0);
    expect(sh(`viewsync import s --merge --sqlite ${file} --quiet < s.ndjson`).status).toBe(0);
    expect(sh(`sed 's/"value":1/"value":2/' s.ndjson | viewsync import s --merge --sqlite ${file} --quiet`).status).toBe(0);
    expect(sh(`viewsync import trial --from s --skip-clients --sqlite ${file} --quiet < s.ndjson`).status).toBe(0);
    run = server(file);
    await transact(run, 's', (tx) => tx.set('b', 3));
    expect(await deliverWebhooks(run)).toEqual({ delivered: 2, failed: 0, disabled: 0 });
    expect(delivered()).toEqual(['s:a', 's:a', 's:b', 'trial:a']);
    expect(run.errors).toEqual([]);
    run.stop();
    const all = sh(`viewsync changes --all --sqlite ${file}`);
    expect([all.status, all.stderr]).toEqual([0, '']);
    expect(
      all.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { space?: string; key?: string })
        .filter(({ key }) => key)
        .map(({ space, key }) => `${space}:${key}`),
    ).toEqual(['s:a', 's:a', 's:b', 'trial:a']);
    expect(sh(`viewsync feed --sqlite ${file}`).stdout).toMatch(
      /^This store keeps the change feed \(since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\): every write keeps/,
    );
    expect(sh(`viewsync inspect s --sqlite ${file}`).stdout).toMatch(
      /WEBHOOK\s+CURSOR\s+VERSIONS BEHIND\s+DELIVERED\s+FAILED\s+STATE\nhook\s+\d+\s+0\s+2\s+0\s+delivering/,
    );
  });

  it('webhook enable takes a webhook a gap stopped past it only with --after-gap; inspect says why it stopped', async () => {
    const file = join(work, 'gap.db');
    let run = server(file);
    await transact(run, 'g', (tx) => tx.set('a', 1));
    await deliverWebhooks(run);
    run.stop();
    // A write by an older viewsync, which left the log behind.
    const db = openSQLite(file);
    const meta = JSON.parse((db.prepare("SELECT value FROM viewsync_kv WHERE key = 'm/g'").get() as { value: string }).value) as { version: number };
    db.prepare("UPDATE viewsync_kv SET value = ? WHERE key = 'm/g'").run(JSON.stringify({ ...meta, version: meta.version + 1 }));
    db.close();
    run = server(file);
    await transact(run, 'g', (tx) => tx.set('b', 2));
    expect(await deliverWebhooks(run)).toMatchObject({ disabled: 1 });
    expect(run.errors).toEqual([expect.stringMatching(/Webhook "hook" is disabled in space "g": the change log no longer holds the changes to deliver/)]);
    run.stop();
    expect(sh(`viewsync inspect g --sqlite ${file}`).stdout).toMatch(/\nhook\s+1\s+\d+\s+1\s+0\s+disabled \d{4}-[\d: -]+: the change log no longer holds/);
    const refused = sh(`viewsync webhook enable hook g --sqlite ${file}`);
    expect([refused.status, refused.stderr]).toEqual([
      1,
      expect.stringMatching(
        /^viewsync: Webhook "hook" cannot go on in space "g" from its cursor 1: .* --after-gap\.\nviewsync: 1 space left disabled: see above\n$/,
      ),
    ]);
    expect(sh(`viewsync webhook enable hook --all --sqlite ${file}`).status).toBe(1);
    const enabled = sh(`viewsync webhook enable hook g --after-gap --sqlite ${file}`);
    expect([enabled.status, enabled.stdout]).toEqual([0, 'enabled webhook "hook" in "g" (after the gap, where there was one)\n']);
    expect(sh(`viewsync webhook enable hook --all --sqlite ${file}`).stdout).toBe('Webhook "hook" was not disabled in any space: nothing to enable.\n');
    run = server(file);
    expect(await deliverWebhooks(run)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    // A SQLite file opened again is another incarnation: its next write skips versions ahead.
    expect(receiver.delivered().at(-1)!.delivery).toMatchObject({
      space: 'g',
      gap: { from: '1', to: expect.stringMatching(/^\d+$/) },
      changes: [{ key: 'b' }],
    });
    run.stop();
  });

  it("feed off turns the store's feed off: the CLI's writes then leave the log", async () => {
    const file = join(work, 'off.db');
    const run = server(file);
    await transact(run, 'o', (tx) => tx.set('a', 1));
    run.stop();
    const off = sh(`viewsync feed off --sqlite ${file}`);
    expect([off.status, off.stdout]).toEqual([
      0,
      expect.stringMatching(/^The change feed is off: writes leave the spaces' change logs from now \(1 space kept one until now;/),
    ]);
    expect(sh(`viewsync feed --sqlite ${file}`).stdout).toMatch(/^This store had the change feed turned off at /);
    expect(JSON.parse(sh(`viewsync feed --json --sqlite ${file}`).stdout)).toEqual([{ on: false, since: expect.any(Number) }]);
    expect(
      sh(
        `echo '{"viewsync":"space","format":3}\n{"key":"b","value":2}\n{"viewsync":"end","entries":1,"groups":0}' | viewsync import o --merge --sqlite ${file} --quiet`,
      ).status,
    ).toBe(0);
    const changes = sh(`viewsync changes o --after 1 --sqlite ${file}`);
    expect([changes.status, changes.stderr]).toEqual([1, expect.stringMatching(/were written without the change feed \(it was turned off/)]);
  });

  it('wrong usage exits 2 and says why; a webhook no space knows exits 1', () => {
    const file = join(work, 'feed.db');
    for (const [line, message] of [
      [`viewsync feed on --sqlite ${file}`, /feed takes status or off, got "on"/],
      [`viewsync webhook --sqlite ${file}`, /webhook takes enable: viewsync webhook enable NAME SPACE\|--all/],
      [`viewsync webhook enable --sqlite ${file}`, /webhook enable needs the webhook's NAME/],
      [`viewsync webhook enable hook --sqlite ${file}`, /webhook enable takes one SPACE or --all/],
      [`viewsync webhook enable hook s --all --sqlite ${file}`, /webhook enable takes one SPACE or --all/],
      [`viewsync feed --after-gap --sqlite ${file}`, /feed takes no --after-gap/],
    ] as const) {
      const run = sh(line);
      expect([line, run.status, run.stderr]).toEqual([line, 2, expect.stringMatching(message)]);
    }
    const unknown = sh(`viewsync webhook enable nope s --sqlite ${file}`);
    expect([unknown.status, unknown.stderr]).toEqual([1, expect.stringMatching(/No webhook named "nope" has delivered in "s"/)]);
  });
});
