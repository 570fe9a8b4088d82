/**
 * The app's mutators, one source for both sides: the browser runs them at once on its own copy,
 * the server runs them again on the real data and sends the result to every client.
 */
import type { ReadTransaction, WriteTransaction } from 'replicache';

/** An item of the list, stored at `item/<id>`. */
export type Item = { id: string; text: string; createdAt: number };

export const mutators = {
  addItem: async (tx: WriteTransaction, item: Item) => {
    await tx.set(`item/${item.id}`, item);
  },
  deleteItem: async (tx: WriteTransaction, { id }: { id: string }) => {
    await tx.del(`item/${id}`);
  },
};

/** Every item, oldest first. */
export async function listItems(tx: ReadTransaction): Promise<Item[]> {
  const items = await tx.scan<Item>({ prefix: 'item/' }).toArray();
  return items.sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id));
}
