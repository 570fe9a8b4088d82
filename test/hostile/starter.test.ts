/**
 * The starter's list (create-viewsync/template) is shared by every visitor, all anonymous: one
 * push of a malformed item must not stop the list drawing for everyone. Its mutators, served as
 * `npm run dev` serves them, refuse what they cannot take, and the page's read path (`listItems`,
 * then each item's `id` and `text`) keeps working on what a pull hands a client.
 */
import type { ReadTransaction } from 'replicache';
import { describe, expect, it } from 'vitest';
import { listItems, mutators } from '../../create-viewsync/template/mutators.js';
import { createContext, type JSONValue, memoryStorage } from '../../src/index.js';
import { applyPatch, mutation, pull, push } from '../support/helpers.js';

describe("the starter's mutators", () => {
  it('skip a malformed item, whatever an anonymous push sends, and the list still draws for every visitor', async () => {
    const errors: unknown[] = [];
    const ctx = createContext({ storage: memoryStorage(), mutators, onError: (error) => errors.push(error) });
    const malformed: JSONValue[] = [
      { id: 42, text: 'a numeric id' },
      { id: 43, text: 'a numeric id', createdAt: 1 },
      { id: 'no-text' },
      { id: 'no-time', text: 'when?' },
      { id: 'object', text: { html: '<b>' }, createdAt: 2 },
      { id: 'huge', text: 'x'.repeat(100_000), createdAt: 3 },
      { id: 'blank', text: '   ', createdAt: 4 },
      { id: 'a/b', text: 'a slash in its key', createdAt: 5 },
      { id: 'late', text: 'a time that is no time', createdAt: 'now' },
      null,
      'an item',
    ];
    const mutations = [
      mutation('visitor', 1, 'addItem', { id: 'milk', text: 'Milk', createdAt: 10 }),
      ...malformed.map((args, index) => mutation('visitor', index + 2, 'addItem', args)),
      mutation('visitor', malformed.length + 2, 'deleteItem', { id: { not: 'an id' } }),
      mutation('visitor', malformed.length + 3, 'addItem', { id: 'bread', text: '  Bread ', createdAt: 11 }),
    ];
    await push(ctx, 'anonymous', mutations);

    // A visitor's first pull, and what their page does with it.
    const { patch, lastMutationIDChanges } = await pull(ctx, 'another-visitor', null);
    expect(lastMutationIDChanges).toEqual({});
    const held = applyPatch(new Map(), patch);
    const items = await listItems(clientRead(held));
    expect(items.map((item) => [typeof item.id, item.text])).toEqual([
      ['string', 'Milk'],
      ['string', 'Bread'],
    ]);
    expect([...held.keys()]).toEqual(['item/bread', 'item/milk']);
    // Each malformed one was skipped (its mutator threw), the pusher's client moved past it.
    expect(errors).toHaveLength(malformed.length + 1);
    expect((await pull(ctx, 'anonymous', null)).lastMutationIDChanges).toEqual({ visitor: mutations.length });
  });
});

/** A client's read transaction over what it holds: `scan({prefix}).toArray()`, in key order. */
function clientRead(held: ReadonlyMap<string, JSONValue>): ReadTransaction {
  const scan = ({ prefix }: { prefix: string }) => ({
    toArray: async () =>
      [...held]
        .filter(([key]) => key.startsWith(prefix))
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([, value]) => value),
  });
  return { scan } as unknown as ReadTransaction;
}
