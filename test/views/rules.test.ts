/**
 * Per-user views (`SyncContext.view`), rule by rule, on the memory store; every store runs the
 * same through the model test (model.test.ts).
 */
import { describe, expect, it, vi } from 'vitest';
import { handlePull, HTTPError, type JSONValue, type View, createContext } from '../../src/index.js';
import type { StorageTransaction } from '../../src/store.js';
import { countingStorage, post, pull, pullBody, pullBodyV0 } from '../support/helpers.js';
import { as, membershipView, viewContext, ViewClient, write } from './app.js';

/** A workspace: alice reads documents 1 and 2, bob document 2; document 3 is nobody's. */
async function workspace(overrides: Parameters<typeof viewContext>[0] = {}) {
  const ctx = viewContext(overrides);
  await write(ctx, 'admin', {
    'member/alice/1': '1',
    'member/alice/2': '2',
    'member/bob/2': '2',
    'doc/1/title': 'one',
    'doc/1/body': 'text of one',
    'doc/2/title': 'two',
    'doc/3/title': 'three',
    'doc/10/title': 'ten',
  });
  return ctx;
}

const sorted = (data: Map<string, JSONValue>) => Object.fromEntries([...data].sort(([a], [b]) => (a < b ? -1 : 1)));

describe('a pull carries exactly the entries under the user’s prefixes', () => {
  it('a first pull: a clear, then every live entry under each prefix, and nothing else', async () => {
    const ctx = await workspace();
    const alice = new ViewClient(ctx, 'alice');
    const { patch } = await alice.pull();
    expect(patch[0]).toEqual({ op: 'clear' });
    expect(sorted(alice.data)).toEqual({
      'doc/1/body': 'text of one',
      'doc/1/title': 'one',
      'doc/2/title': 'two',
      'member/alice/1': '1',
      'member/alice/2': '2',
    });
    // `doc/1/` is not `doc/10/`: a prefix is a string prefix, so the view ends it with '/'.
    const bob = new ViewClient(ctx, 'bob');
    await bob.pull();
    expect(sorted(bob.data)).toEqual({ 'doc/2/title': 'two', 'member/bob/2': '2' });
  });

  it('changes in view reach the user; changes outside it do not, not even as a key name', async () => {
    const ctx = await workspace();
    const bob = new ViewClient(ctx, 'bob');
    await bob.pull();
    await write(ctx, 'alice', { 'doc/1/title': 'ONE', 'doc/2/title': 'TWO', 'doc/3/title': undefined, 'doc/4/x': 1 });
    const { patch } = await bob.pull();
    expect(patch).toEqual([{ op: 'put', key: 'doc/2/title', value: 'TWO' }]);
    await write(ctx, 'alice', { 'doc/2/title': undefined });
    expect((await bob.pull()).patch).toEqual([{ op: 'del', key: 'doc/2/title' }]);
  });

  it('without a view every user reads the whole space, with cookies as before', async () => {
    const ctx = await workspace({ view: undefined });
    const { cookie, patch } = await pull(ctx, 'g', null, as('bob'));
    expect(patch).toHaveLength(9);
    expect(Object.keys(cookie as object).sort()).toEqual(['epoch', 'order']);
  });

  it('a prefix of "" is the whole space; no prefixes, nothing', async () => {
    const whole = await workspace({ view: () => ['', 'doc/1/'] });
    expect((await pull(whole, 'g', null, as('bob'))).patch).toHaveLength(9);
    const none = await workspace({ view: () => [] });
    expect((await pull(none, 'g', null, as('bob'))).patch).toEqual([{ op: 'clear' }]);
  });
});

describe('when the prefixes change, the patch moves exactly what entered or left the view', () => {
  it('sharing a document puts its entries, with no clear and nothing the user already had', async () => {
    const ctx = await workspace();
    const bob = new ViewClient(ctx, 'bob');
    await bob.pull();
    await write(ctx, 'alice', { 'member/bob/1': '1', 'doc/2/title': 'TWO' });
    const { patch } = await bob.pull();
    expect(patch).toEqual(
      expect.arrayContaining([
        { op: 'put', key: 'member/bob/1', value: '1' },
        { op: 'put', key: 'doc/2/title', value: 'TWO' },
        { op: 'put', key: 'doc/1/title', value: 'one' },
        { op: 'put', key: 'doc/1/body', value: 'text of one' },
      ]),
    );
    expect(patch).toHaveLength(4);
  });

  it('revoking a document deletes every key of it the user holds, and nothing else', async () => {
    const ctx = await workspace();
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    await write(ctx, 'admin', { 'member/alice/1': undefined });
    const { patch } = await alice.pull();
    expect(patch).toEqual(
      expect.arrayContaining([
        { op: 'del', key: 'member/alice/1' },
        { op: 'del', key: 'doc/1/title' },
        { op: 'del', key: 'doc/1/body' },
      ]),
    );
    expect(patch).toHaveLength(3);
    expect(sorted(alice.data)).toEqual({ 'doc/2/title': 'two', 'member/alice/2': '2' });
  });

  it('a key written under a revoked document after the user’s cookie is never named: the answer is a reset', async () => {
    const ctx = await workspace();
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    // Alice goes offline; her access to document 1 is revoked; then the document gets a key she
    // never could read, and one she held is deleted.
    await write(ctx, 'admin', { 'member/alice/1': undefined });
    await write(ctx, 'admin', { 'doc/1/after-revocation/bob-salary': 1, 'doc/1/body': undefined });
    const { patch } = await alice.pull();
    expect(patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'doc/2/title', value: 'two' }, { op: 'put', key: 'member/alice/2', value: '2' }]);
    expect(sorted(alice.data)).toEqual({ 'doc/2/title': 'two', 'member/alice/2': '2' });
  });

  it('a tombstone older than the cookie is not deleted again when its prefix leaves the view', async () => {
    const ctx = await workspace();
    await write(ctx, 'admin', { 'doc/1/body': undefined });
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    await write(ctx, 'admin', { 'member/alice/1': undefined });
    expect((await alice.pull()).patch).toEqual(expect.not.arrayContaining([{ op: 'del', key: 'doc/1/body' }]));
  });

  it('a prefix widened or narrowed moves only the keys between the two', async () => {
    let prefixes = ['doc/1/title'];
    const ctx = await workspace({ view: () => prefixes });
    const client = new ViewClient(ctx, 'alice');
    expect((await client.pull()).patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'doc/1/title', value: 'one' }]);
    prefixes = ['doc/'];
    const widened = await client.pull();
    expect(widened.patch.map((op) => op.op === 'put' && op.key).sort()).toEqual(['doc/1/body', 'doc/10/title', 'doc/2/title', 'doc/3/title']);
    prefixes = ['doc/1/title', 'doc/3/'];
    const narrowed = await client.pull();
    expect(narrowed.patch).toEqual(
      expect.arrayContaining([
        { op: 'del', key: 'doc/1/body' },
        { op: 'del', key: 'doc/10/title' },
        { op: 'del', key: 'doc/2/title' },
      ]),
    );
    expect(narrowed.patch).toHaveLength(3);
  });

  it('a view that changes with no write in the space gets a new cookie, which the client takes: it differs, at the same order', async () => {
    let prefixes = ['doc/1/'];
    const ctx = await workspace({ view: () => prefixes });
    const client = new ViewClient(ctx, 'alice');
    const first = await client.pull();
    prefixes = ['doc/2/'];
    const second = await client.pull();
    expect((second.cookie as { order: number }).order).toBe((first.cookie as { order: number }).order);
    expect(second.cookie).not.toEqual(first.cookie);
    expect(sorted(client.data)).toEqual({ 'doc/2/title': 'two' });
  });

  it('equal prefixes in any order, repeated or covered by another, are one view with one cookie', async () => {
    let prefixes = ['doc/1/', 'doc/2/'];
    const ctx = await workspace({ view: () => prefixes });
    const { cookie } = await pull(ctx, 'g', null, as('alice'));
    for (prefixes of [
      ['doc/2/', 'doc/1/'],
      ['doc/1/', 'doc/2/', 'doc/1/'],
      ['doc/1/x', 'doc/2/', 'doc/1/'],
    ]) {
      expect(await pull(ctx, 'g', cookie, as('alice'))).toEqual({ cookie, lastMutationIDChanges: {}, patch: [] });
    }
  });
});

describe('a prefix covers whole segments', () => {
  /** Lists whose IDs start one another, as IDs clients choose can. */
  const lists = { 'list/a': 'a', 'list/a/todo/1': 'a1', 'list/ab': 'ab', 'list/ab/todo/1': 'ab1', 'list/a-b': 'a-b', 'list/a-b/todo/1': 'a-b1' };

  it('`list/a` covers `list/a` and the keys under `list/a/`, never `list/ab` nor `list/a-b`: in a first pull, in changes, when it leaves', async () => {
    let prefixes = ['list/a'];
    const ctx = viewContext({ view: () => prefixes });
    await write(ctx, 'admin', lists);
    const client = new ViewClient(ctx, 'alice');
    await client.pull();
    expect(sorted(client.data)).toEqual({ 'list/a': 'a', 'list/a/todo/1': 'a1' });
    // Enough changes elsewhere that the pull reads the prefix index, and one of each list.
    await write(ctx, 'admin', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`other/${i}`, i])));
    await write(ctx, 'admin', { 'list/a/todo/2': 'a2', 'list/ab/todo/2': 'ab2', 'list/a-b/todo/2': 'a-b2', 'list/ab': 'ab!' });
    const { patch } = await client.pull();
    expect(patch).toEqual([{ op: 'put', key: 'list/a/todo/2', value: 'a2' }]);
    prefixes = ['list/'];
    await client.pull();
    prefixes = ['list/a', 'list/a-b/'];
    const narrowed = await client.pull();
    expect(narrowed.patch.map((op) => `${op.op} ${op.op === 'clear' ? '' : op.key}`).sort()).toEqual([
      'del list/a-b',
      'del list/ab',
      'del list/ab/todo/1',
      'del list/ab/todo/2',
    ]);
    expect(sorted(client.data)).toEqual({ 'list/a': 'a', 'list/a-b/todo/1': 'a-b1', 'list/a-b/todo/2': 'a-b2', 'list/a/todo/1': 'a1', 'list/a/todo/2': 'a2' });
  });

  it('a flat key named exactly is one of the view: `todo/1` covers it and `todo/1/...`, not `todo/10`', async () => {
    const ctx = viewContext({ view: () => ['todo/1', 'todo/3'] });
    await write(ctx, 'admin', { 'todo/1': 'one', 'todo/10': 'ten', 'todo/1/note': 'n', 'todo/2': 'two', 'todo/3': 'three' });
    const client = new ViewClient(ctx, 'alice');
    await client.pull();
    expect(sorted(client.data)).toEqual({ 'todo/1': 'one', 'todo/1/note': 'n', 'todo/3': 'three' });
    await write(ctx, 'admin', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`todo/${i + 10}`, i])));
    await write(ctx, 'admin', { 'todo/3': undefined, 'todo/1': 'uno' });
    expect((await client.pull()).patch).toEqual([
      { op: 'put', key: 'todo/1', value: 'uno' },
      { op: 'del', key: 'todo/3' },
    ]);
  });

  it('prefixes one covers are one view with the other: `a/b` makes `a/b/` and `a/b/c` say nothing more, but not `a/bc`', async () => {
    const seen: string[] = [];
    const names = async (prefixes: string[]) => {
      const ctx = viewContext({ view: () => prefixes });
      const { cookie } = await pull(ctx, 'g', null, as('alice'));
      seen.push((cookie as { view: string }).view);
    };
    await names(['a/b']);
    await names(['a/b/', 'a/b', 'a/b/c']);
    await names(['a/b', 'a/bc']);
    expect(seen[0]).toBe(seen[1]);
    expect(seen[2]).not.toBe(seen[0]);
  });

  it('a view record from before the rule (a prefix then covered any key it started) is not believed: its cookie gets a reset', async () => {
    const ctx = await workspace();
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    await ctx.options.storage.transaction(
      async (tx) => {
        for (const [row, record] of await tx.scan({ prefix: 'w/' })) {
          const { rule: _, ...before } = record as { rule?: string };
          await tx.put(row, before);
        }
      },
      { readOnly: false },
    );
    await write(ctx, 'admin', { 'member/alice/3': '3' });
    expect((await alice.pull()).patch[0]).toEqual({ op: 'clear' });
  });

  it('the prefix index is not believed after a write by a viewsync that kept it otherwise (a downgrade): a flat key it left out still reaches the client', async () => {
    const ctx = viewContext({ view: () => ['todo/1'] });
    await write(ctx, 'admin', { 'todo/1': 'one' });
    const first = new ViewClient(ctx, 'alice', 'first');
    await first.pull();
    const second = new ViewClient(ctx, 'alice', 'second');
    await second.pull();
    // A push as viewsync 0.1 wrote it: entries and version-index rows, no prefix-index row for a
    // key of one `/`, and the meta record's version moved on past `indexedAt`.
    await ctx.options.storage.transaction(
      async (tx) => {
        const meta = (await tx.get('m/')) as { version: number };
        const version = meta.version + 1;
        const field = version.toString(16).padStart(14, '0');
        for (const [row] of await tx.scan({ prefix: 'v//' })) await tx.del(row);
        const written: Record<string, string> = { 'todo/1': 'from 0.1' };
        for (let i = 0; i < 300; i++) written[`other/${i}`] = 'noise';
        for (const [key, val] of Object.entries(written)) {
          await tx.put(`v//${field}/${key}`, null);
          await tx.put(`e//${key}`, { ver: version, val });
        }
        await tx.put('m/', { ...meta, version, prefixIndexFrom: 1 });
      },
      { readOnly: false },
    );
    expect((await first.pull()).patch).toEqual([{ op: 'put', key: 'todo/1', value: 'from 0.1' }]);
    // The next write that keeps the index starts it again from its own version.
    await write(ctx, 'admin', Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`todo/${i + 10}`, i])));
    expect((await second.pull()).patch).toEqual([{ op: 'put', key: 'todo/1', value: 'from 0.1' }]);
  });
});

describe('forks, other users’ cookies and lost records', () => {
  it('a new client group of the same user starting from another group’s cookie gets an incremental patch', async () => {
    let byGroup: Record<string, string[]> = { a: ['doc/1/'], b: ['doc/1/', 'doc/2/'] };
    const ctx = await workspace({ view: (_, { clientGroupID }) => byGroup[clientGroupID]! });
    const first = new ViewClient(ctx, 'alice', 'a');
    await first.pull();
    await write(ctx, 'admin', { 'doc/1/title': 'ONE' });
    const fork = new ViewClient(ctx, 'alice', 'b');
    fork.cookie = first.cookie;
    fork.data = new Map(first.data);
    const { patch } = await fork.pull();
    expect(patch).toEqual(
      expect.arrayContaining([
        { op: 'put', key: 'doc/1/title', value: 'ONE' },
        { op: 'put', key: 'doc/2/title', value: 'two' },
      ]),
    );
    expect(patch).toHaveLength(2);
    byGroup = { b: ['doc/2/'] };
    await fork.pull();
    expect(sorted(fork.data)).toEqual({ 'doc/2/title': 'two' });
  });

  it('a cookie issued to another user gets a reset with the caller’s own view, naming none of the other’s keys', async () => {
    const ctx = await workspace();
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    const bob = new ViewClient(ctx, 'bob');
    bob.cookie = alice.cookie;
    const { patch } = await bob.pull();
    expect(patch[0]).toEqual({ op: 'clear' });
    expect(
      patch
        .slice(1)
        .map((op) => op.op === 'put' && op.key)
        .sort(),
    ).toEqual(['doc/2/title', 'member/bob/2']);
  });

  it('a forged cookie (the user’s old view, a later order) names no key written after the user lost that view', async () => {
    const ctx = await workspace();
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    const { view } = alice.cookie as { view: string };
    await write(ctx, 'admin', { 'member/alice/1': undefined });
    await alice.pull();
    await write(ctx, 'admin', { 'doc/1/after-revocation/bob-salary': 1 });
    // Any cookie issued after that write carries its order; bob's will do.
    const bob = new ViewClient(ctx, 'bob');
    await bob.pull();
    const { order, epoch } = bob.cookie as { order: number; epoch: string };
    const forged = await pull(ctx, 'alice-group', { order, epoch, view }, as('alice'));
    expect(forged.patch.map((op) => ('key' in op ? op.key : op.op))).not.toContain('doc/1/after-revocation/bob-salary');
    expect(forged.patch[0]).toEqual({ op: 'clear' });
    // The genuine cookies still get incremental patches.
    await write(ctx, 'admin', { 'doc/2/title': 'TWO' });
    expect((await alice.pull()).patch).toEqual([{ op: 'put', key: 'doc/2/title', value: 'TWO' }]);
  });

  it('a cookie whose view record was lost gets a reset when the view changed, an incremental patch when it did not; never ClientStateNotFound', async () => {
    const ctx = await workspace();
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    await wipeViewRecords(ctx.storage);
    await write(ctx, 'admin', { 'doc/2/title': 'TWO' });
    expect((await alice.pull()).patch).toEqual([{ op: 'put', key: 'doc/2/title', value: 'TWO' }]);
    await wipeViewRecords(ctx.storage);
    await write(ctx, 'admin', { 'member/alice/3': '3' });
    const { patch } = await alice.pull();
    expect(patch[0]).toEqual({ op: 'clear' });
    expect(alice.data.get('doc/3/title')).toBe('three');
  });

  it('a record of the view is written once per view and user, not per pull or per client', async () => {
    const ctx = await workspace();
    for (const group of ['a', 'b', 'c']) {
      const client = new ViewClient(ctx, 'alice', group);
      await client.pull();
      await client.pull();
    }
    await new ViewClient(ctx, 'bob').pull();
    expect(await viewRecords(ctx.storage)).toHaveLength(2);
  });

  it('a cookie from before the view existed gets a reset to the view; a view’s cookie once the view is gone, the whole space', async () => {
    const ctx = await workspace({ view: undefined });
    const { cookie } = await pull(ctx, 'g', null, as('bob'));
    const viewed = createContext({ ...ctx.options, view: membershipView });
    const narrowed = await pull(viewed, 'g', cookie, as('bob'));
    expect(narrowed.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'doc/2/title', value: 'two' }, { op: 'put', key: 'member/bob/2', value: '2' }]);
    const whole = await pull(ctx, 'g', narrowed.cookie, as('bob'));
    expect(whole.patch[0]).toEqual({ op: 'clear' });
    expect(whole.patch).toHaveLength(9);
  });
});

describe('what a view gets and may return', () => {
  it('tx has the client’s read methods over the pull’s snapshot, and closes when the view returns', async () => {
    let kept: Parameters<View>[0] | undefined;
    const ctx = await workspace({
      view: async (tx, { userID, clientGroupID }) => {
        kept = tx;
        expect([userID, clientGroupID]).toEqual(['alice', 'g']);
        expect(await tx.get('member/alice/1')).toBe('1');
        expect(await tx.has('member/alice/9')).toBe(false);
        expect(await tx.isEmpty()).toBe(false);
        expect(await tx.scan({ prefix: 'member/alice/' }).keys().toArray()).toEqual(['member/alice/1', 'member/alice/2']);
        expect(
          await tx
            .scan({ prefix: 'doc/', start: { key: 'doc/2', exclusive: false }, limit: 1 })
            .entries()
            .toArray(),
        ).toEqual([['doc/2/title', 'two']]);
        return (async function* () {
          yield 'doc/1/';
        })();
      },
    });
    expect((await pull(ctx, 'g', null, as('alice'))).patch).toHaveLength(3);
    await expect(kept!.get('doc/1/title')).rejects.toThrow(/closed/);
  });

  it('a version 0 pull is narrowed the same way; its client ID stands for the group', async () => {
    const seen: string[] = [];
    const ctx = await workspace({ view: (tx, request) => (seen.push(request.clientGroupID), membershipView(tx, request)) });
    const response = await handlePull(post('/pull', pullBodyV0('client-0', null, 0), as('bob')), ctx);
    const body = await response.json();
    expect(body.patch).toEqual([{ op: 'clear' }, { op: 'put', key: 'doc/2/title', value: 'two' }, { op: 'put', key: 'member/bob/2', value: '2' }]);
    expect(seen).toEqual(['client-0']);
    await write(ctx, 'admin', { 'member/bob/2': undefined });
    const next = await handlePull(post('/pull', pullBodyV0('client-0', body.cookie, 0), as('bob')), ctx).then((r) => r.json());
    expect(next.patch).toEqual(
      expect.arrayContaining([
        { op: 'del', key: 'doc/2/title' },
        { op: 'del', key: 'member/bob/2' },
      ]),
    );
    expect(next.patch).toHaveLength(2);
  });

  it('a view that runs past limits.appCodeMs fails the pull with 503 and Retry-After, and its later reads throw', async () => {
    let late: string | undefined;
    const ctx = await workspace({
      limits: { appCodeMs: 50 },
      view: async (tx) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        late = await tx.get('doc/1/title').then(
          () => 'read',
          (error: unknown) => String(error),
        );
        return ['doc/'];
      },
    });
    // On fake timers: the pull is answered at the deadline, while the view still sleeps.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      let answered: Response | undefined;
      void handlePull(post('/pull', pullBody('g', null), as('alice')), ctx).then((response) => (answered = response));
      await vi.advanceTimersByTimeAsync(49);
      expect(answered).toBeUndefined();
      await vi.advanceTimersByTimeAsync(1);
      expect([answered?.status, answered?.headers.get('retry-after')]).toEqual([503, '1']);
      expect(late).toBeUndefined();
      await vi.advanceTimersByTimeAsync(150);
      expect(late).toMatch(/closed/);
    } finally {
      vi.useRealTimers();
    }
  });

  it('an HTTPError from the view refuses the pull with its status', async () => {
    const ctx = await workspace({
      view: () => {
        throw new HTTPError(403, 'not a member of this workspace');
      },
    });
    const response = await handlePull(post('/pull', pullBody('g', null), as('alice')), ctx);
    expect([response.status, await response.text()]).toEqual([403, expect.stringContaining('not a member')]);
  });

  it.each([
    ['not an iterable', () => 42 as never, /iterable of key prefixes/],
    ['a prefix that is not a string', () => ['doc/', 7] as never, /not a string/],
    ['a lone surrogate', () => ['doc/\ud800'], /lone surrogate/],
    ['a prefix longer than a key may be', () => ['x'.repeat(2000)], /limits.keyBytes/],
    ['more prefixes than limits.viewPrefixes', () => Array.from({ length: 11 }, (_, i) => `doc/${i}/`), /limits.viewPrefixes/],
  ])('a view returning %s is an error of the app: 500, reported, nothing sent', async (_, view, message) => {
    const ctx = await workspace({ view: view as View, limits: { viewPrefixes: 10 } });
    const response = await handlePull(post('/pull', pullBody('g', null), as('alice')), ctx);
    expect(response.status).toBe(500);
    expect(String(ctx.errors.at(-1))).toMatch(message);
  });
});

describe('what a pull costs', () => {
  it('in proportion to the changes in view and the entries that enter or leave it, not to the space, the view or the changes elsewhere', async () => {
    const reads = { count: 0 };
    const ctx = viewContext({ storage: countingStorage(reads) });
    // 20,000 entries in 200 documents; alice reads 10 of them (1,000 entries).
    for (let doc = 0; doc < 200; doc++) {
      const entries: Record<string, JSONValue> = {};
      for (let i = 0; i < 100; i++) entries[`doc/${doc}/${String(i).padStart(3, '0')}`] = i;
      if (doc % 20 === 0) entries[`member/alice/${doc}`] = String(doc);
      await write(ctx, 'admin', entries);
    }
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    expect(alice.data.size).toBe(1010);
    const cost = () => pullCost(alice, reads);
    const idle = await cost();
    expect(idle.ops).toBe(0);
    expect(idle.reads).toBeLessThan(40);
    await write(ctx, 'admin', { 'doc/0/000': 'x', 'doc/20/000': 'y' });
    const two = await cost();
    expect(two.ops).toBe(2);
    expect(two.reads).toBeLessThan(idle.reads + 20);
    await write(ctx, 'admin', { 'member/alice/1': '1' });
    const granted = await cost();
    expect(granted.ops).toBe(101);
    expect(granted.reads).toBeLessThan(idle.reads + 101 + 40);
    await write(ctx, 'admin', { 'member/alice/1': undefined });
    const revoked = await cost();
    expect(revoked.ops).toBe(101);
    expect(revoked.reads).toBeLessThan(idle.reads + 101 + 40);
    // 5,000 changes elsewhere in the space and 2 in view: the prefix index reads the 2, not the 5,000.
    for (let doc = 1; doc < 53; doc++)
      if (doc % 20 !== 0)
        await write(ctx, 'admin', Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`doc/${doc}/${String(i).padStart(3, '0')}`, -i])));
    await write(ctx, 'admin', { 'doc/0/001': 'x', 'doc/20/001': 'y' });
    const elsewhere = await cost();
    expect(elsewhere.ops).toBe(2);
    expect(elsewhere.reads).toBeLessThan(idle.reads + 150);
  });
});

describe('what a pull of flat keys costs', () => {
  it('a view of exact keys (`todo/<id>`) reads the changes to its keys, not the changes elsewhere', async () => {
    const reads = { count: 0 };
    // One list's todos among 20,000: the view names each.
    const mine = Array.from({ length: 50 }, (_, i) => `todo/${i * 400}`);
    const ctx = viewContext({ storage: countingStorage(reads), view: () => mine });
    for (let batch = 0; batch < 20; batch++)
      await write(ctx, 'admin', Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`todo/${batch * 1_000 + i}`, i])));
    const alice = new ViewClient(ctx, 'alice');
    await alice.pull();
    expect(alice.data.size).toBe(50);
    const cost = () => pullCost(alice, reads);
    const idle = await cost();
    expect(idle.ops).toBe(0);
    // 5,000 changes to others' todos and 2 to alice's: a page of the version index tells they
    // are many, then the prefix index reads the 2. Before flat keys were indexed: all 5,002.
    for (let batch = 0; batch < 5; batch++)
      await write(ctx, 'admin', Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`todo/${batch * 1_000 + i}-other`, -i])));
    await write(ctx, 'admin', { 'todo/0': 'x', 'todo/400': 'y' });
    const elsewhere = await cost();
    expect(elsewhere.ops).toBe(2);
    expect(elsewhere.reads).toBeLessThan(idle.reads + 400);
  });
});

/** What `client`'s next pull reads from a counting store, and the operations its patch holds. */
async function pullCost(client: ViewClient, reads: { count: number }): Promise<{ reads: number; ops: number }> {
  reads.count = 0;
  const { patch } = await client.pull();
  return { reads: reads.count, ops: patch.length };
}

/** The view records in a store, as `[row, record]`. */
async function viewRecords(storage: { transaction: <T>(fn: (tx: StorageTransaction) => Promise<T>, options: { readOnly: boolean }) => Promise<T> }) {
  return storage.transaction((tx) => tx.scan({ prefix: 'w/' }), { readOnly: true });
}

async function wipeViewRecords(storage: Parameters<typeof viewRecords>[0]) {
  await storage.transaction(
    async (tx) => {
      for (const [row] of await tx.scan({ prefix: 'w/' })) await tx.del(row);
    },
    { readOnly: false },
  );
}
