/**
 * Per-user views with the real `replicache` client (in Node, over fake-indexeddb) and the Node
 * adapter: two users in one space see only their own documents; sharing a document makes it
 * appear in the other's subscription (what a screen shows), revoking removes it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ReadonlyJSONValue } from 'replicache';
import { serve } from '../../adapters/node.js';
import { memoryStorage, type SyncContext, createContext } from '../../src/index.js';
import { Clients, FetchRecorder, uniqueName, waitFor, type Rep } from '../interop/client.js';
import { runtimeMutators } from '../runtime/app.js';
import { membershipView } from './app.js';

/** Views from outside the space, by user: the test changes them with no write at all. */
const outside = new Map<string, string[]>();

describe('per-user views with the real client', () => {
  let server: Awaited<ReturnType<typeof serve>>;
  const clients = new Clients(() => server.url);
  let recorder: FetchRecorder;

  beforeAll(async () => {
    const ctx: SyncContext = createContext({
      storage: memoryStorage(),
      mutators: runtimeMutators,
      authenticate: (request) => request.headers.get('authorization') || null,
      view: async (tx, request) => [...(await membershipView(tx, request)), ...(outside.get(request.userID!) ?? [])],
      onError: (error) => console.error(error),
    });
    server = await serve(ctx, { port: 0 });
  });
  afterAll(() => server?.stop());
  afterEach(async () => {
    await clients.closeAll();
    recorder?.restore();
  });

  /** What a screen would show: the documents' titles, kept by a subscription. */
  function screen(rep: Rep) {
    const shown = { titles: {} as Record<string, ReadonlyJSONValue>, updates: 0 };
    rep.subscribe((tx) => tx.scan({ prefix: 'doc/' }).entries().toArray(), {
      onData: (entries) => {
        shown.titles = Object.fromEntries(entries.filter(([key]) => key.endsWith('/title')));
        shown.updates++;
      },
    });
    return shown;
  }

  const showing = (shown: { titles: Record<string, ReadonlyJSONValue> }, expected: Record<string, string>, who: string) =>
    waitFor(() => JSON.stringify(shown.titles) === JSON.stringify(expected), {
      message: () => `${who}'s screen to show ${JSON.stringify(expected)}; it shows ${JSON.stringify(shown.titles)}`,
    });

  it('each user sees only their documents; sharing makes one appear on the other’s screen, revoking removes it', async () => {
    recorder = new FetchRecorder();
    const alice = clients.open({ name: uniqueName('alice'), auth: 'alice' });
    const bob = clients.open({ name: uniqueName('bob'), auth: 'bob' });
    const aliceScreen = screen(alice);
    const bobScreen = screen(bob);

    // Each creates a document and makes themselves its member, through the shared mutators.
    await alice.mutate.put({ key: 'member/alice/a', value: 'a' });
    await alice.mutate.put({ key: 'doc/a/title', value: 'Alice’s plan' });
    await bob.mutate.put({ key: 'member/bob/b', value: 'b' });
    await bob.mutate.put({ key: 'doc/b/title', value: 'Bob’s notes' });
    await showing(aliceScreen, { 'doc/a/title': 'Alice’s plan' }, 'alice');
    await showing(bobScreen, { 'doc/b/title': 'Bob’s notes' }, 'bob');

    // Alice shares her document with bob.
    await alice.mutate.put({ key: 'member/bob/a', value: 'a' });
    await showing(bobScreen, { 'doc/a/title': 'Alice’s plan', 'doc/b/title': 'Bob’s notes' }, 'bob');
    // Bob edits it (a mutator could refuse: what a user may write is the app's to check).
    await bob.mutate.put({ key: 'doc/a/title', value: 'Our plan' });
    await showing(aliceScreen, { 'doc/a/title': 'Our plan' }, 'alice');
    await showing(bobScreen, { 'doc/a/title': 'Our plan', 'doc/b/title': 'Bob’s notes' }, 'bob');

    // Alice revokes it: it leaves bob's screen, and his writes stay on the server.
    await alice.mutate.del({ key: 'member/bob/a' });
    await showing(bobScreen, { 'doc/b/title': 'Bob’s notes' }, 'bob');
    await showing(aliceScreen, { 'doc/a/title': 'Our plan' }, 'alice');

    // No pull answer to alice ever named bob's document, nor bob's named alice's outside the share.
    const named = (auth: string) => recorder.requests.filter((r) => r.url.endsWith('/pull') && r.authorization === auth).map((r) => r.responseText);
    expect(named('alice').some((text) => text.includes('doc/b/'))).toBe(false);
    expect(named('bob').length).toBeGreaterThan(0);
    for (const rep of [alice, bob]) expect(rep.logs.filter((entry) => entry.level === 'error')).toEqual([]);
  });

  it('a view that changes with no write in the space reaches the client: the cookie differs at the same order, and the client takes it', async () => {
    const carol = clients.open({ name: uniqueName('carol'), auth: 'carol' });
    const carolScreen = screen(carol);
    await carol.mutate.put({ key: 'doc/public/title', value: 'Read me' });
    await waitFor(async () => (await carol.experimentalPendingMutations()).length === 0, { message: 'carol’s write to be confirmed' });
    // Not a member: her own write is not in her view, and leaves her screen once confirmed.
    await showing(carolScreen, {}, 'carol');
    outside.set('carol', ['doc/public/']);
    await showing(carolScreen, { 'doc/public/title': 'Read me' }, 'carol');
    outside.set('carol', []);
    await showing(carolScreen, {}, 'carol');
    expect(carol.logs.filter((entry) => entry.level === 'error')).toEqual([]);
  });
});
