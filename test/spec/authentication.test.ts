import { describe, expect, it } from 'vitest';
import { handlePull, handlePush, handleRequest, HTTPError, type SyncContext, createContext } from '../../src/index.js';
import { mutation, post, pull, pullBody, pullBodyV0, push, pushBody, serverView, testContext } from '../support/helpers.js';

/** Tokens are `Bearer <user>`; anything else is refused. */
const authenticate = (request: Request) => request.headers.get('authorization')?.match(/^Bearer (\w+)$/)?.[1] ?? null;
const as = (user: string) => ({ authorization: `Bearer ${user}` });

describe('authentication rules 1 to 4: authenticate, and client groups that belong to their user', () => {
  it('authenticate gets the Authorization header as sent; null means 401 on both endpoints', async () => {
    const seen: Array<string | null> = [];
    const ctx = testContext({ authenticate: (r) => (seen.push(r.headers.get('authorization')), authenticate(r)) });
    for (const [handler, body] of [
      [handlePull, pullBody('g', null)],
      [handlePush, pushBody('g', [])],
    ] as const) {
      const response = await handler(post('/x', body, { authorization: 'Basic nope' }), ctx);
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ error: 'Unauthorized' });
    }
    expect(seen).toEqual(['Basic nope', 'Basic nope']);
  });

  it('an authenticate that returns anything but a string or null is the app’s bug: a 500 on every endpoint, and onError says what to fix', async () => {
    for (const wrong of [42, { id: 'alice' }, true]) {
      const ctx = testContext({ authenticate: () => wrong as never });
      for (const request of [
        post('/pull', pullBody('g', null)),
        post('/push', pushBody('g', [mutation('c', 1, 'put', { key: 'a', value: 1 })])),
        new Request('http://localhost/poke'),
      ]) {
        const response = await handleRequest(request, ctx);
        expect(response.status).toBe(500);
        expect(await response.json()).toEqual({ error: 'InternalServerError', message: 'The server failed to handle the request; nothing was changed' });
      }
      expect(ctx.errors).toHaveLength(3);
      for (const error of ctx.errors)
        expect(String(error)).toMatch(
          /^TypeError: authenticate returned an? (number|object|boolean); it must return the user's ID as a string \(String\(id\)\), or null to answer 401$/,
        );
      expect(await serverView(createContext({ ...ctx.options, authenticate: undefined }))).toEqual(new Map());
    }
  });

  it('an async authenticate works', async () => {
    const ctx = testContext({ authenticate: async (r) => authenticate(r) });
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })], as('alice'));
    expect((await pull(ctx, 'g', null, as('alice'))).lastMutationIDChanges).toEqual({ c: 1 });
  });

  it("client groups and clients are per user: another user's answers for the same IDs are those of IDs never used", async () => {
    // Alice pushes from group `group` and client `client`; mallory then probes g and c.
    const world = async (group: string, client: string) => {
      const ctx = testContext({ authenticate });
      await push(ctx, group, [mutation(client, 1, 'put', { key: 'secret', value: 'alice only' })], as('alice'));
      return ctx;
    };
    const probe = async (ctx: SyncContext) => {
      const answers = [
        await handlePull(post('/pull', pullBody('g', null), as('mallory')), ctx),
        await handlePull(post('/pull', pullBodyV0('c', null, 0), as('mallory')), ctx),
        await handlePull(post('/pull', pullBodyV0('c', null, 1), as('mallory')), ctx),
        await handlePush(post('/push', pushBody('g', [mutation('c', 2, 'put', { key: 'x', value: 'pwned' })]), as('mallory')), ctx),
      ];
      // Cookies differ between two stores (each space draws its own epoch); nothing else may.
      return Promise.all(answers.map(async (response) => `${response.status} ${(await response.text()).replace(/"cookie":\{[^}]*\}/, '"cookie":…')}`));
    };
    const ctx = await world('g', 'c');
    const used = await probe(ctx);
    expect(used).toEqual(await probe(await world('other-group', 'other-client')));
    expect(used[0]).toMatch(/^200 .*"lastMutationIDChanges":\{\}/);
    expect(used[3]).toBe('200 {"error":"ClientStateNotFound"}');
    // Nothing of alice's changed, and she goes on.
    await push(ctx, 'g', [mutation('c', 2, 'put', { key: 'secret', value: 'still alice' })], as('alice'));
    expect((await pull(ctx, 'g', null, as('alice'))).lastMutationIDChanges).toEqual({ c: 2 });
    expect(await serverView(ctx, as('alice'))).toEqual(new Map([['secret', 'still alice']]));
  });

  it("a user who learns another's future client ID cannot block it", async () => {
    const ctx = testContext({ authenticate });
    // Mallory registers "next" in a group of hers before alice's tab of that ID ever pushes.
    await push(ctx, 'mallory-group', [mutation('next', 1, 'put', { key: 'm', value: 1 })], as('mallory'));
    await push(ctx, 'g', [mutation('next', 1, 'put', { key: 'a', value: 1 })], as('alice'));
    expect((await pull(ctx, 'g', null, as('alice'))).lastMutationIDChanges).toEqual({ next: 1 });
    expect((await pull(ctx, 'mallory-group', null, as('mallory'))).lastMutationIDChanges).toEqual({ next: 1 });
    // A push of another user into the same group ID is a group of hers, apart from alice's.
    await push(ctx, 'g', [mutation('tab', 1, 'put', { key: 'b', value: 1 }), mutation('tab', 2, 'put', { key: 'b', value: 2 })], as('mallory'));
    expect((await pull(ctx, 'g', null, as('alice'))).lastMutationIDChanges).toEqual({ next: 1 });
    expect((await pull(ctx, 'g', null, as('mallory'))).lastMutationIDChanges).toEqual({ tab: 2 });
  });

  it('without authenticate, requests are anonymous and groups have no owner', async () => {
    const ctx = testContext();
    await push(ctx, 'g', [mutation('c', 1, 'put', { key: 'a', value: 1 })], { authorization: 'anything' });
    await push(ctx, 'g', [mutation('c', 2, 'put', { key: 'a', value: 2 })], { authorization: 'something else' });
    expect(await serverView(ctx)).toEqual(new Map([['a', 2]]));
  });

  it('mutators see the user', async () => {
    const ctx = testContext({ authenticate, mutators: { whoami: (tx) => tx.set(`by/${tx.clientID}/${tx.mutationID}`, tx.userID ?? null) } });
    await push(ctx, 'g', [mutation('c', 1, 'whoami')], as('alice'));
    expect(await serverView(ctx, as('alice'))).toEqual(new Map([['by/c/1', 'alice']]));
  });

  it('space() decides which data a user syncs, and may refuse with an HTTPError', async () => {
    const ctx = testContext({
      authenticate,
      space: (request, userID) => {
        const space = new URL(request.url).searchParams.get('ws') ?? '';
        if (space === 'admins' && userID !== 'root') throw new HTTPError(403, 'Only admins may sync this workspace');
        return space;
      },
    });
    const response = await handlePull(post('/pull?ws=admins', pullBody('g', null), as('alice')), ctx);
    expect(response.status).toBe(403);
    expect(await response.json()).toEqual({ error: 'Forbidden', message: 'Only admins may sync this workspace' });
    expect((await handlePull(post('/pull?ws=admins', pullBody('g', null), as('root')), ctx)).status).toBe(200);
  });

  it('a throwing authenticate is a 500 that reveals nothing and is reported', async () => {
    const ctx = testContext({
      authenticate: () => {
        throw new Error('db password is hunter2');
      },
    });
    const response = await handlePull(post('/pull', pullBody('g', null)), ctx);
    expect(response.status).toBe(500);
    expect(await response.text()).not.toMatch(/hunter2/);
    expect(ctx.errors).toHaveLength(1);
  });
});
