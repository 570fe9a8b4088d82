/**
 * The app's mutators, one source for both sides: the browser runs them at once on its own copy,
 * the server runs them again on the real data and sends the result to every client.
 */
import type { ReadTransaction, WriteTransaction } from 'replicache';
import * as v from 'valibot';

// Anyone can push any args: each mutator checks its own with these schemas first, so a malformed
// item is refused (the server skips the mutation) and never reaches the list every visitor reads.
const ID = v.pipe(v.string(), v.regex(/^[\w-]{1,64}$/, 'An id is 1 to 64 letters, digits, _ or -'));
const Item = v.object({
  id: ID,
  text: v.pipe(v.string(), v.trim(), v.minLength(1), v.maxLength(1000)),
  createdAt: v.pipe(v.number(), v.safeInteger(), v.minValue(0)),
});

/** An item of the list, stored at `item/<id>`. */
export type Item = v.InferOutput<typeof Item>;

export const mutators = {
  addItem: async (tx: WriteTransaction, args: Item) => {
    const item = v.parse(Item, args);
    await tx.set(`item/${item.id}`, item);
  },
  deleteItem: async (tx: WriteTransaction, args: { id: string }) => {
    const { id } = v.parse(v.object({ id: ID }), args);
    await tx.del(`item/${id}`);
  },
};

/** Every item, oldest first. */
export async function listItems(tx: ReadTransaction): Promise<Item[]> {
  const items = await tx.scan<Item>({ prefix: 'item/' }).toArray();
  return items.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}
