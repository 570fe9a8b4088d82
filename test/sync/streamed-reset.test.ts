/**
 * A full pull of a space larger than one read: sent as it is read, a page at a time, each page in
 * a short read of its own, then what changed meanwhile (src/sync/version/reset-pages.ts). On
 * every store: the answer, however the space changes while it is sent, is the space as of its
 * cookie, with the lastMutationIDs of then; a client that goes stops the reads; an answer that
 * cannot be made whole breaks off instead of lying.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, test } from 'vitest';
import { createContext, handlePull, type JSONValue, type Storage, type SyncContext } from '../../src/index.js';
import type { StorageTransaction, TransactionOptions } from '../../src/store.js';
import { FIRST_ROWS } from '../../src/sync/version/reset-pages.js';
import { applyPatch, mutation, post, pull, pullBody, pullBodyV0, push, type PullOK } from '../support/helpers.js';
import { bigSpace } from '../support/big-space.js';
import { onEveryStore } from '../support/stores.js';

/** Entries in the big space: several pages past what a pull's own transaction reads. */
const ENTRIES = 25_000;
const { keyOf, valueFor, mutators, writer } = bigSpace(80);

/** A context whose store counts the read-only transactions begun, on `inner`. */
function bigContext(inner: Storage, view?: SyncContext['options']['view']) {
  const counts = { readOnly: 0 };
  const storage: Storage = {
    ...inner,
    transaction<T>(fn: (tx: StorageTransaction) => Promise<T>, options: TransactionOptions) {
      if (options.readOnly) counts.readOnly++;
      return inner.transaction(fn, options);
    },
  };
  // Keep the store's other methods (readMany, parts) working on the store itself.
  for (const name of ['readMany'] as const) if (inner[name]) (storage as { [K in typeof name]?: unknown })[name] = inner[name].bind(inner);
  const errors: unknown[] = [];
  const ctx = createContext({ storage, mutators, onError: (error) => errors.push(error), ...(view && { view }) });
  return { ctx, counts, errors };
}

async function fill(ctx: SyncContext, entries = ENTRIES): Promise<void> {
  const mutations = [];
  for (let from = 0, id = 1; from < entries; from += 5_000, id++)
    mutations.push(mutation('filler', id, 'fill', { from, count: Math.min(5_000, entries - from) }));
  await push(ctx, 'filler-group', mutations);
}

/** A streamed pull answer read a chunk at a time, with `between(chunk)` awaited after each. */
async function readSlowly(response: Response, between: (chunk: number) => Promise<void>, got = { text: '' }): Promise<PullOK> {
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  for (let chunk = 0; ; chunk++) {
    const { done, value } = await reader.read();
    if (done) break;
    got.text += decoder.decode(value, { stream: true });
    await between(chunk);
  }
  return JSON.parse(got.text + decoder.decode()) as PullOK;
}

const model = () => new Map(Array.from({ length: ENTRIES }, (_, i) => [keyOf(i), valueFor(i)] as const));

onEveryStore('streamed_reset', (store, create) => {
  describe(`a full pull of a big space, sent as it is read (${store})`, () => {
    // One space for every test (filling it is most of their time): those that write come last.
    const storage = create();
    const { ctx, counts } = bigContext(storage);
    const expected = model();
    let runs = 0;

    beforeAll(() => fill(ctx), 120_000);

    test('answers every entry once, as the space is, with a cookie an up-to-date pull keeps', async () => {
      const before = counts.readOnly;
      const response = await handlePull(post('/pull', pullBody('reader', null)), ctx);
      expect(response.body).toBeInstanceOf(ReadableStream);
      const answer = await readSlowly(response, async () => {});
      expect(answer.patch[0]).toEqual({ op: 'clear' });
      const keys = answer.patch.slice(1).map((op) => (op as { key: string }).key);
      expect(new Set(keys).size).toBe(keys.length);
      expect(applyPatch(new Map(), answer.patch)).toEqual(expected);
      expect(answer.lastMutationIDChanges).toEqual({});
      // Pages past the pull's own transaction, each in a read of its own.
      expect(counts.readOnly - before).toBeGreaterThan(2);
      expect(ENTRIES).toBeGreaterThan(FIRST_ROWS * 2);
      const again = await pull(ctx, 'reader', answer.cookie);
      expect(again).toEqual({ cookie: answer.cookie, lastMutationIDChanges: {}, patch: [] });
    }, 60_000);

    test('a pull of version 0 is sent the same way, with its client’s lastMutationID of the end', async () => {
      const response = await handlePull(post('/pull', pullBodyV0('filler', null, 0)), ctx);
      const text = await response.text();
      const answer = JSON.parse(text) as { cookie: JSONValue; lastMutationID: number; patch: PullOK['patch'] };
      expect(answer.lastMutationID).toBe(5);
      expect(applyPatch(new Map(), answer.patch)).toEqual(expected);
    }, 60_000);

    test('property: writes while the answer is sent end in the answer, with their lastMutationIDs, and nothing else', async () => {
      const drawn = fc.record({
        at: fc.nat({ max: 60 }),
        entry: fc.nat({ max: ENTRIES + 100 }),
        op: fc.constantFrom<'put' | 'del'>('put', 'put', 'del'),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(drawn, { minLength: 1, maxLength: 12 }), async (writes) => {
          const run = ++runs;
          const group = `writer-group-${run}`;
          const client = `writer-${run}`;
          const write = writer(ctx, group, client, expected, run);
          let made = 0;
          const response = await handlePull(post('/pull', pullBody(group, null)), ctx);
          const answer = await readSlowly(response, async (chunk) => {
            made = await write(writes, chunk);
          });
          expect(applyPatch(new Map(), answer.patch)).toEqual(expected);
          expect(answer.lastMutationIDChanges).toEqual(made === 0 ? {} : { [client]: made });
          const again = await pull(ctx, group, answer.cookie);
          expect(again).toEqual({ cookie: answer.cookie, lastMutationIDChanges: {}, patch: [] });
        }),
        { numRuns: 8 },
      );
    }, 240_000);

    test('cancelling the body after its first chunk reads no further page', async () => {
      const before = counts.readOnly;
      const response = await handlePull(post('/pull', pullBody('leaver', null)), ctx);
      const reader = response.body!.getReader();
      await reader.read();
      await reader.cancel();
      const after = counts.readOnly;
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(counts.readOnly).toBe(after);
      // The pull's own read and at most the first page (the whole space needs several).
      expect(after - before).toBeLessThanOrEqual(2);
    }, 60_000);

    test('a store that fails while the answer is sent breaks it off, and onError is told', async () => {
      let reads = 0;
      const failing = bigContext({
        ...storage,
        transaction<T>(fn: (tx: StorageTransaction) => Promise<T>, options: TransactionOptions) {
          if (options.readOnly && ++reads >= 3) return Promise.reject(new Error('the disk is on fire'));
          return storage.transaction(fn, options);
        },
      });
      const response = await handlePull(post('/pull', pullBody('reader', null)), failing.ctx);
      expect(response.status).toBe(200);
      await expect(response.text()).rejects.toThrow();
      expect(failing.errors).toEqual([expect.objectContaining({ message: 'the disk is on fire' })]);
    }, 60_000);

    test('the view lost a prefix written to meanwhile: the answer breaks off before anything of it is sent', async () => {
      // Everything under `item/` while `access` is not false, then only one item.
      const viewed = bigContext(storage, async (tx) => ((await tx.get('access')) === false ? [keyOf(1)] : ['item/']));
      const response = await handlePull(post('/pull', pullBody('viewer', null)), viewed.ctx);
      const secret = { title: 'written after access was lost' };
      const got = { text: '' };
      const read = readSlowly(
        response,
        async (chunk) => {
          if (chunk !== 0) return;
          await push(viewed.ctx, 'admin', [
            mutation('admin', 1, 'put', { key: 'access', value: false }),
            mutation('admin', 2, 'put', { key: keyOf(20_000), value: secret }),
          ]);
        },
        got,
      );
      await expect(read).rejects.toThrow();
      // Every page was sent, but nothing of the write.
      expect(got.text.length).toBeGreaterThan(ENTRIES * 50);
      expect(got.text).not.toContain(secret.title);
      // Pulled again, the client gets what its view now holds.
      const again = await pull(viewed.ctx, 'viewer', null);
      // (as the writes above left it).
      expect(applyPatch(new Map(), again.patch)).toEqual(new Map([...expected].filter(([key]) => key === keyOf(1))));
    }, 60_000);
  });
});
