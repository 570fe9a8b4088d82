/**
 * Versioned mutators and reads on every store: an older version's mutations upgraded or kept as
 * rejected, its pulls in its own shape (first and incremental, a joined read among them), as on
 * the memory store (versions.test.ts holds the cases; this runs the core of them everywhere).
 */
import { describe, expect, it } from 'vitest';
import { createContext, handlePull, handlePush, type JSONValue, type Mutators, type SchemaOptions } from '../../src/index.js';
import { inspect } from '../../src/ops.js';
import { applyPatch, mutation, post, pullBody, pushBody, type PullOK } from '../support/helpers.js';
import { onEveryStore } from '../support/stores.js';
import { mutatorsV2, schemaV2 } from './app.js';

const schema: SchemaOptions = { ...schemaV2, older: [{ ...schemaV2.older![0]!, mutators: { ...schemaV2.older![0]!.mutators, removeTodo: null } }] };

onEveryStore('schema', (store, create) => {
  describe(store, () => {
    it('upgrades, rejects and reads in the old shape', async () => {
      const ctx = createContext({ storage: create(), mutators: mutatorsV2 as unknown as Mutators, schema, onError: () => {} });
      const pushAs = async (schemaVersion: string, group: string, mutations: ReturnType<typeof mutation>[]) =>
        expect((await handlePush(post('/push', pushBody(group, mutations, { schemaVersion })), ctx)).status).toBe(200);
      const pullAs = async (schemaVersion: string, group: string, cookie: JSONValue) =>
        (await (await handlePull(post('/pull', pullBody(group, cookie, { schemaVersion })), ctx)).json()) as PullOK;
      await pushAs('1', 'old', [mutation('c1', 1, 'addTodo', { id: 'a', text: 'Milk' }), mutation('c1', 2, 'removeTodo', { id: 'a' })]);
      await pushAs('2', 'new', [mutation('c2', 1, 'addTodo', { id: 'b', title: 'Eggs' })]);
      const first = await pullAs('1', 'old', null);
      expect(first.lastMutationIDChanges).toEqual({ c1: 2 });
      expect(Object.fromEntries(applyPatch(new Map(), first.patch))).toEqual({
        'todo/a': { text: 'Milk', done: false, count: 0 },
        'todo/b': { text: 'Eggs', done: false, count: 0 },
      });
      await pushAs('2', 'new', [mutation('c2', 2, 'setDone', { id: 'a', done: true }), mutation('c2', 3, 'removeTodo', { id: 'b' })]);
      expect((await pullAs('1', 'old', first.cookie)).patch).toEqual([
        { op: 'put', key: 'todo/a', value: { text: 'Milk', done: true, count: 0 } },
        { op: 'del', key: 'todo/b' },
      ]);
      expect((await inspect(ctx, '')).rejectedMutations.map(({ id, name }) => [id, name])).toEqual([[2, 'removeTodo']]);
    });
  });
});
