import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handlePull, HTTPError, type JSONValue, memoryStorage, type Storage, type SyncContext, createContext } from '../../src/index.js';
import { countingPool } from '../support/counting-pool.js';
import { mutation, post, pull, pullBody, push, testContext } from '../support/helpers.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { withReadMany } from '../support/read-many.js';
import { onEveryStore, withPostgres } from '../support/stores.js';
import { as, membershipView, viewContext, write } from '../views/app.js';

/** `storage` counting its read-only transactions. */
function countingReads(storage: Storage): { storage: Storage; reads: () => number } {
  let reads = 0;
  return { storage: { ...storage, transaction: (fn, options) => (options.readOnly && reads++, storage.transaction(fn, options)) }, reads: () => reads };
}

/** Sends `pulls` at once; resolves with each answer's status and text. */
async function pullAll(
  ctx: SyncContext,
  pulls: ReadonlyArray<{ group: string; cookie: JSONValue; user?: string }>,
): Promise<Array<{ status: number; text: string }>> {
  return Promise.all(
    pulls.map(async ({ group, cookie, user }) => {
      const response = await handlePull(post('/pull', pullBody(group, cookie), user === undefined ? {} : as(user)), ctx);
      return { status: response.status, text: await response.text() };
    }),
  );
}

onEveryStore('shared', (store, create) => {
  describe(`shared reads, ${store}: pulls of a space that arrive together share one read`, () => {
    it('200 subscribers pulling after one push cost a few read transactions, and each gets what it would get alone', async () => {
      const { storage, reads } = countingReads(create());
      const ctx = testContext({ storage });
      const groups = Array.from({ length: 200 }, (_, i) => `g${i}`);
      for (const [i, group] of groups.entries()) await push(ctx, group, [mutation(`c${i}`, 1, 'put', { key: `k${i}`, value: i })]);
      const before = (await pull(ctx, 'g0', null)).cookie;
      await push(ctx, 'g7', [mutation('c7', 2, 'put', { key: 'news', value: { big: 'x'.repeat(100) } })]);

      const start = reads();
      const shared = await pullAll(
        ctx,
        groups.map((group) => ({ group, cookie: before })),
      );
      // The first pull starts at once; the others arrive while it reads and share the next read.
      expect(reads() - start).toBeLessThanOrEqual(3);
      const alone = [];
      for (const group of groups) alone.push((await pullAll(createContext({ ...ctx.options, shareReads: false }), [{ group, cookie: before }]))[0]!);
      expect(shared).toEqual(alone);
      const answer = JSON.parse(shared[7]!.text) as { lastMutationIDChanges: unknown; patch: unknown };
      expect(answer.patch).toEqual([{ op: 'put', key: 'news', value: { big: 'x'.repeat(100) } }]);
      expect(answer.lastMutationIDChanges).toEqual({ c7: 2 });
      expect(JSON.parse(shared[8]!.text).lastMutationIDChanges).toEqual({});
    });

    it('full pulls arriving together share the space read once, and match a full pull alone', async () => {
      const { storage, reads } = countingReads(create());
      const ctx = testContext({ storage });
      const entries = Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`item/${String(i).padStart(4, '0')}`, { n: i, s: 'é\u2028\u0000"' }]));
      await push(
        ctx,
        'writer',
        Object.entries(entries).map(([key, value], i) => mutation('w', i + 1, 'put', { key, value })),
      );
      const start = reads();
      const shared = await pullAll(
        ctx,
        Array.from({ length: 20 }, (_, i) => ({ group: `reader${i}`, cookie: null })),
      );
      expect(reads() - start).toBeLessThanOrEqual(2);
      const [alone] = await pullAll(createContext({ ...ctx.options, shareReads: false }), [{ group: 'reader0', cookie: null }]);
      for (const answer of shared) expect(answer).toEqual(alone);
      const body = JSON.parse(alone!.text) as { patch: Array<{ op: string; key?: string; value?: JSONValue }> };
      expect(body.patch.slice(1)).toEqual(Object.entries(entries).map(([key, value]) => ({ op: 'put', key, value })));
    });
  });
});

describe('planned reads: a pull that can tell what it will read reads it in one go', () => {
  it('a pull that needs more than its plan read (a second page of changes, a cookie of another incarnation) is answered in full', async () => {
    const ctx = testContext({ storage: withReadMany(memoryStorage()) });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'start', value: 0 })]);
    const { cookie } = await pull(ctx, 'g', null);
    // 300 changes: past the plan's first page of the version index.
    await push(
      ctx,
      'g',
      Array.from({ length: 300 }, (_, i) => mutation('c', i + 2, 'put', { key: `k${String(i).padStart(3, '0')}`, value: i })),
    );
    const behind = await pull(ctx, 'g', cookie);
    expect(behind.patch).toHaveLength(300);
    expect(behind.lastMutationIDChanges).toEqual({ c: 301 });

    // The same space wiped and written again: a new epoch, whose base this process knows too.
    const wiped = testContext({ storage: withReadMany(memoryStorage()) });
    await push(wiped, 'g', [mutation('c', 1, 'put', { key: 'other', value: 1 })]);
    await pull(wiped, 'g', null);
    const reset = await pull(wiped, 'g', cookie);
    expect(reset.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'other', value: 1 }]);
  });

  it('on PostgreSQL through a pg Pool, an up-to-date pull and one a few changes behind are one statement each: no BEGIN, no COMMIT', async () => {
    if (!withPostgres || process.env.DATABASE_URL === undefined) return;
    const { pool, counted, statements } = countingPool(process.env.DATABASE_URL);
    const schema = `planned_${process.pid}`;
    try {
      const ctx = testContext({ storage: postgresStorage(counted, { schema }) });
      await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })]);
      const { cookie } = await pull(ctx, 'g', null);
      statements.length = 0;
      expect((await pull(ctx, 'g', cookie)).patch).toEqual([]);
      expect(statements).toEqual(['SELECT *']);
      await push(ctx, 'other', [mutation('d', 1, 'put', { key: 'b', value: 2 }), mutation('d', 2, 'del', { key: 'a' })]);
      statements.length = 0;
      const behind = await pull(ctx, 'g', cookie);
      expect(behind.patch).toEqual([
        { op: 'del', key: 'a' },
        { op: 'put', key: 'b', value: 2 },
      ]);
      expect(statements).toEqual(['SELECT *']);
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await pool.end();
    }
  });
});

describe("shared reads never cross users' views", () => {
  it('two users whose full pulls share a read each get their own view, and nothing of the other', async () => {
    const ctx = viewContext();
    await write(ctx, 'ann', { 'member/ann/a': 'a', 'doc/a/title': 'Ann only' });
    await write(ctx, 'bob', { 'member/bob/b': 'b', 'doc/b/title': 'Bob only' });
    // Several pulls of each user, interleaved, all sharing one read.
    const answers = await pullAll(
      ctx,
      Array.from({ length: 8 }, (_, i) => ({ group: `group${i}`, cookie: null, user: i % 2 === 0 ? 'ann' : 'bob' })),
    );
    for (const [i, { status, text }] of answers.entries()) {
      expect(status).toBe(200);
      const keys = (JSON.parse(text) as { patch: Array<{ key?: string }> }).patch.map((op) => op.key).filter(Boolean);
      expect(keys).toEqual(i % 2 === 0 ? ['doc/a/title', 'member/ann/a'] : ['doc/b/title', 'member/bob/b']);
    }
  });

  it('users whose cookies name the same prefixes at the same version still get patches of their own views', async () => {
    // Everyone sees `shared/`; an admin sees `secret/` too. The role is read from the space.
    const ctx = viewContext({ view: async (tx, { userID }) => ((await tx.get(`role/${userID}`)) === 'admin' ? ['shared/', 'secret/'] : ['shared/']) });
    await write(ctx, 'ann', { 'shared/x': 1, 'secret/y': 'for admins' });
    const [ann, bob] = [await pull(ctx, 'ann', null, as('ann')), await pull(ctx, 'bob', null, as('bob'))];
    await write(ctx, 'ann', { 'role/ann': 'admin', 'shared/z': 2 });
    // The first pull reads alone; Ann's and Bob's, from cookies of the same version and the same
    // prefixes, then share a read. Their patches differ: Ann's view grew, Bob's did not.
    const [, annNow, bobNow] = await pullAll(ctx, [
      { group: 'first', cookie: null, user: 'carl' },
      { group: 'ann', cookie: ann.cookie, user: 'ann' },
      { group: 'bob', cookie: bob.cookie, user: 'bob' },
    ]);
    expect(JSON.parse(annNow!.text).patch).toEqual([
      { op: 'put', key: 'shared/z', value: 2 },
      { op: 'put', key: 'secret/y', value: 'for admins' },
    ]);
    expect(JSON.parse(bobNow!.text).patch).toEqual([{ op: 'put', key: 'shared/z', value: 2 }]);
  });

  it("one pull's refusal in a shared read is its own: the others are answered", async () => {
    const ctx = viewContext({
      view: async (tx, request) => {
        if (request.userID === 'mallory') throw new HTTPError(403, 'not yours');
        return membershipView(tx, request);
      },
    });
    await write(ctx, 'ann', { 'member/ann/a': 'a', 'doc/a/title': 'hi' });
    const answers = await pullAll(ctx, [
      { group: 'first', cookie: null, user: 'ann' },
      { group: 'g1', cookie: null, user: 'ann' },
      { group: 'm', cookie: null, user: 'mallory' },
      { group: 'g2', cookie: null, user: 'ann' },
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 403, 200]);
    expect(answers[3]!.text).toBe(answers[1]!.text.replace('"g1"', '"g2"'));
  });

  it('a store that fails the shared read fails each pull in it cleanly (503), and the next read works', async () => {
    const inner = memoryStorage();
    let failing = false;
    const ctx = testContext({
      storage: {
        transaction: (fn, o) =>
          inner.transaction(async (tx) => {
            if (failing && o.readOnly) throw Object.assign(new Error('connection reset'), { code: 'ECONNRESET' });
            return fn(tx);
          }, o),
      },
    });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'k', value: 1 })]);
    failing = true;
    const failed = await pullAll(
      ctx,
      Array.from({ length: 5 }, (_, i) => ({ group: `g${i}`, cookie: null })),
    );
    expect(failed.every((a) => a.status >= 500)).toBe(true);
    failing = false;
    const answered = await pullAll(
      ctx,
      Array.from({ length: 5 }, (_, i) => ({ group: `g${i}`, cookie: null })),
    );
    expect(answered.map((a) => a.status)).toEqual(Array(5).fill(200));
  });
});

/** `storage` without `readMany`: every pull then reads in a transaction, as before plans. */
function withoutPlans(storage: Storage): Storage {
  return { transaction: (fn, options) => storage.transaction(fn, options) };
}

onEveryStore('sharedprop', (store, create) => {
  describe(`shared reads and planned reads, ${store}: a property`, () => {
    it('concurrent pulls, shared or not, planned or not, get exactly the answers they would get alone in a transaction (with and without a view)', async () => {
      const key = fc.constantFrom('member/ann/a', 'member/bob/a', 'doc/a/x', 'doc/a/y', 'doc/b/x', 'other');
      const step = fc.oneof(
        fc.record({ kind: fc.constant('put' as const), key, value: fc.integer() }),
        fc.record({ kind: fc.constant('del' as const), key }),
        fc.record({
          kind: fc.constant('pulls' as const),
          pulls: fc.array(fc.record({ user: fc.constantFrom('ann', 'bob'), group: fc.integer({ min: 0, max: 3 }), cookie: fc.nat() }), {
            minLength: 1,
            maxLength: 12,
          }),
        }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(step, { maxLength: 12 }), fc.boolean(), async (steps, viewed) => {
          const storage = withReadMany(create());
          const ctx = viewed ? viewContext({ storage }) : testContext({ storage, authenticate: (request) => request.headers.get('authorization') || null });
          const alone = createContext({ ...ctx.options, shareReads: false });
          const unplanned = createContext({ ...ctx.options, storage: withoutPlans(storage), shareReads: false });
          const cookies: JSONValue[] = [null];
          let id = 0;
          for (const s of steps) {
            if (s.kind !== 'pulls') {
              await push(ctx, 'writer', [mutation('w', ++id, s.kind, s.kind === 'put' ? { key: s.key, value: s.value } : { key: s.key })], as('ann'));
              continue;
            }
            const pulls = s.pulls.map((p) => ({ group: `${p.user}${p.group}`, user: p.user, cookie: cookies[p.cookie % cookies.length]! }));
            const shared = await pullAll(ctx, pulls);
            for (const [i, p] of pulls.entries()) {
              const reference = (await pullAll(unplanned, [p]))[0];
              expect(shared[i]).toEqual(reference);
              expect((await pullAll(alone, [p]))[0]).toEqual(reference);
            }
            for (const answer of shared) if (answer.status === 200) cookies.push((JSON.parse(answer.text) as { cookie: JSONValue }).cookie);
          }
        }),
        { numRuns: store === 'memoryStorage' ? Number(process.env.FC_RUNS ?? 100) : 10 },
      );
    });
  });
});
