/**
 * Webhooks and the change log's gaps: a writer without `changes` (the CLI) no longer makes one; a
 * webhook stopped by one (an older viewsync wrote, or the log was trimmed past it) is told to
 * `onError` when it happens, and goes on only by an operator's explicit step that tells the
 * receiver what it will never get.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createContext, memoryStorage, type Storage, type SyncContext } from '../../src/index.js';
import { ChangesGoneError, deliverWebhooks, enableWebhook, replayWebhook, transact } from '../../src/backend.js';
import { collectGarbage, exportSpace, importSpace, inspect } from '../../src/ops.js';
import { SpaceKeys } from '../../src/sync/version/keys.js';
import type { Meta } from '../../src/sync/version/records.js';
import { testMutators } from '../support/helpers.js';
import { type Receiver, startReceiver } from './receiver.js';

const SECRET = 'webhook-secret-of-thirty-two-characters';
const DAY = 24 * 60 * 60 * 1000;
const closing: Receiver[] = [];
afterEach(async () => {
  for (const receiver of closing.splice(0)) await receiver.close();
});

async function receiver(): Promise<Receiver> {
  const started = await startReceiver();
  closing.push(started);
  return started;
}

/** A server with the feed and one webhook `hook`, its failures kept in `errors`, its clock in `time`. */
function server(storage: Storage, url: string, retention?: { changesMs: number }): SyncContext & { errors: string[]; time: { now: number } } {
  const errors: string[] = [];
  const time = { now: Date.UTC(2026, 10, 1) };
  const ctx = createContext({
    storage,
    mutators: testMutators,
    clock: () => time.now,
    retention,
    onError: (error) => errors.push(String(error)),
    changes: { webhooks: { hook: { url, secret: SECRET, allowPrivateAddresses: true } } },
  });
  return Object.assign(ctx, { errors, time });
}

/** The CLI's context: no feed of its own, no webhooks. */
const cli = (storage: Storage) => createContext({ storage, mutators: {}, pokes: false, onError: () => {} });

/** What a write by viewsync before the feed was the store's left: the version on, the log behind. */
const olderWrite = (storage: Storage, space: string) =>
  storage.transaction(
    async (tx) => {
      const key = new SpaceKeys(space).meta;
      const meta = (await tx.get(key)) as Meta;
      await tx.put(key, { ...meta, version: meta.version + 1 });
    },
    { readOnly: false, space },
  );

const keysOf = (at: Receiver) => at.delivered().flatMap(({ delivery }) => delivery.changes.map((change) => ('key' in change ? change.key : change.topic)));

describe('webhooks across the change log', () => {
  it('go on delivering after the CLI exports and imports the space (merge, replace, a seed from another space)', async () => {
    const at = await receiver();
    const storage = memoryStorage();
    const ctx = server(storage, at.url);
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    const dump = await new Response(exportSpace(cli(storage), 's')).text();
    await importSpace(cli(storage), 's', dump.replace('"value":1', '"value":2'), { mode: 'merge' });
    await importSpace(cli(storage), 'seeded', dump, { mode: 'replace', from: 's' });
    await transact(ctx, 's', (tx) => tx.set('b', 3));
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 2, failed: 0, disabled: 0 });
    expect(keysOf(at)).toEqual(['a', 'a', 'b', 'a']);
    expect(ctx.errors).toEqual([]);
  });

  it('a webhook stopped by a gap is told to onError when it happens; enableWebhook refuses to skip it unasked, and with afterGap goes on, telling the receiver', async () => {
    const at = await receiver();
    const storage = memoryStorage();
    const ctx = server(storage, at.url);
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    await deliverWebhooks(ctx);
    await olderWrite(storage, 's');
    await transact(ctx, 's', (tx) => tx.set('b', 2));
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 0, failed: 0, disabled: 1 });
    expect(ctx.errors).toEqual([
      expect.stringMatching(
        /Webhook "hook" is disabled in space "s": the change log no longer holds the changes to deliver: .* viewsync webhook enable NAME SPACE --after-gap/,
      ),
    ]);
    // Said once, not at every round.
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 0, failed: 0, disabled: 0 });
    expect(ctx.errors).toHaveLength(1);
    const refused = enableWebhook(ctx, 'hook', 's');
    await expect(refused).rejects.toBeInstanceOf(ChangesGoneError);
    await expect(enableWebhook(ctx, 'hook', 's')).rejects.toThrow(/cannot go on in space "s" from its cursor 1: .*afterGap: true/);
    expect((await inspect(ctx, 's')).webhooks?.hook?.disabled).toBeDefined();
    expect(await enableWebhook(ctx, 'hook', 's', { afterGap: true })).toBe(true);
    await transact(ctx, 's', (tx) => tx.set('c', 3));
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    // The log restarted at version 2 (before b): b and c are delivered, the gap (1, 2] is told.
    expect(at.delivered().at(-1)!.delivery).toMatchObject({ from: '2', gap: { from: '1', to: '2' }, changes: [{ key: 'b' }, { key: 'c' }] });
    await transact(ctx, 's', (tx) => tx.set('d', 4));
    await deliverWebhooks(ctx);
    expect(at.delivered().at(-1)!.delivery).not.toHaveProperty('gap');
    expect(await enableWebhook(ctx, 'hook', 's', { afterGap: true })).toBe(false);
  });

  it('a webhook trimmed past goes on after the gap from where the log is whole', async () => {
    const at = await receiver();
    const storage = memoryStorage();
    const ctx = server(storage, at.url, { changesMs: DAY });
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    at.answer = 'fail';
    await deliverWebhooks(ctx);
    ctx.time.now += 2 * DAY;
    await transact(ctx, 's', (tx) => tx.set('b', 2));
    await collectGarbage(ctx);
    at.answer = 'ok';
    expect(await deliverWebhooks(ctx)).toMatchObject({ disabled: 1 });
    expect(await enableWebhook(ctx, 'hook', 's', { afterGap: true })).toBe(true);
    await deliverWebhooks(ctx);
    expect(at.delivered().map(({ delivery }) => [delivery.gap, delivery.changes.map((change) => change.id)])).toEqual([[{ from: '0', to: '1' }, ['s:2:0']]]);
  });

  it('a webhook new to a space whose log has not started waits for it, then delivers from its start', async () => {
    const at = await receiver();
    const storage = memoryStorage();
    // Written before the feed was on anywhere.
    await transact(cli(storage), 'old', (tx) => tx.set('a', 1));
    const ctx = server(storage, at.url);
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 0, failed: 0, disabled: 0 });
    expect((await inspect(ctx, 'old')).webhooks).toBeUndefined();
    await transact(ctx, 'old', (tx) => tx.set('b', 2));
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    expect(keysOf(at)).toEqual(['b']);
  });

  it('a delivery asked again whose changes were trimmed is dropped and told, and the webhook goes on', async () => {
    const at = await receiver();
    const storage = memoryStorage();
    const ctx = server(storage, at.url, { changesMs: DAY });
    await transact(ctx, 's', (tx) => tx.set('a', 1));
    await deliverWebhooks(ctx);
    // Asked again a day and more later, just before the log's rows of it go (its record lasts as long).
    ctx.time.now += DAY - 1;
    expect(await replayWebhook(ctx, 'hook', 's', { delivery: 's:0..1' })).toBe(1);
    ctx.time.now += 2;
    await transact(ctx, 's', (tx) => tx.set('b', 2));
    await collectGarbage(ctx);
    expect(await deliverWebhooks(ctx)).toEqual({ delivered: 1, failed: 0, disabled: 0 });
    expect(keysOf(at)).toEqual(['a', 'b']);
    expect(ctx.errors).toEqual([expect.stringMatching(/delivery s:0\.\.1, asked again, was dropped/)]);
  });
});
