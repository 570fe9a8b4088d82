/**
 * A to-do app in two schema versions, for the tests of versioned mutators and reads:
 *
 * - version 1 keeps `todo/<id>` = `{text, done, count}` and sends `addTodo({id, text})`;
 * - version 2 keeps `task/<id>` = `{title, done, count}` (a key layout changed) and sends
 *   `addTodo({id, title})` (a mutator's arguments changed).
 *
 * `bump` adds to a to-do's `count`, so a mutation applied twice shows. Both versions' mutators run
 * on the client as they are; the server runs version 2's, and `schemaV2` says how version 1's
 * mutations and reads map onto them.
 */
import type { JSONValue, SchemaOptions, WriteTransaction } from '../../src/index.js';

export interface TodoV1 {
  text: string;
  done: boolean;
  count: number;
}
export interface TaskV2 {
  title: string;
  done: boolean;
  count: number;
}

type Tx = Pick<WriteTransaction, 'get' | 'set' | 'del'>;

export const mutatorsV1 = {
  addTodo: async (tx: Tx, { id, text }: { id: string; text: string }) => {
    await tx.set(`todo/${id}`, { text, done: false, count: 0 } satisfies TodoV1);
  },
  setDone: async (tx: Tx, { id, done }: { id: string; done: boolean }) => {
    const todo = (await tx.get(`todo/${id}`)) as TodoV1 | undefined;
    if (todo !== undefined) await tx.set(`todo/${id}`, { ...todo, done });
  },
  bump: async (tx: Tx, { id }: { id: string }) => {
    const todo = (await tx.get(`todo/${id}`)) as TodoV1 | undefined;
    if (todo !== undefined) await tx.set(`todo/${id}`, { ...todo, count: todo.count + 1 });
  },
  removeTodo: async (tx: Tx, { id }: { id: string }) => {
    await tx.del(`todo/${id}`);
  },
};

export const mutatorsV2 = {
  addTodo: async (tx: Tx, { id, title }: { id: string; title: string }) => {
    if (typeof title !== 'string') throw new TypeError('addTodo: title must be a string');
    await tx.set(`task/${id}`, { title, done: false, count: 0 } satisfies TaskV2);
  },
  setDone: async (tx: Tx, { id, done }: { id: string; done: boolean }) => {
    const task = (await tx.get(`task/${id}`)) as TaskV2 | undefined;
    if (task !== undefined) await tx.set(`task/${id}`, { ...task, done });
  },
  bump: async (tx: Tx, { id, by }: { id: string; by: number }) => {
    const task = (await tx.get(`task/${id}`)) as TaskV2 | undefined;
    if (task !== undefined) await tx.set(`task/${id}`, { ...task, count: task.count + by });
  },
  removeTodo: async (tx: Tx, { id }: { id: string }) => {
    await tx.del(`task/${id}`);
  },
};

/** Version 2's server, still serving version 1: its mutations upgraded, its reads in its shape. */
export const schemaV2: SchemaOptions = {
  current: '2',
  older: [
    {
      version: '1',
      mutators: {
        addTodo: { args: (args) => ({ id: (args as { id: string }).id, title: (args as { text: string }).text }) },
        bump: { args: (args) => ({ id: (args as { id: string }).id, by: 1 }) },
      },
      read: {
        keys: (key) => (key.startsWith('task/') ? [`todo/${key.slice('task/'.length)}`] : []),
        value: async (oldKey, get) => {
          const task = (await get(`task/${oldKey.slice('todo/'.length)}`)) as TaskV2 | undefined;
          return task && ({ text: task.title, done: task.done, count: task.count } satisfies TodoV1);
        },
      },
    },
  ],
};

/** Version 1's entries moved to version 2's layout: what an online migration does (here in one go). */
export async function migrateV1Entries(tx: WriteTransaction): Promise<void> {
  for (const [key, value] of await tx.scan({ prefix: 'todo/' }).entries().toArray()) {
    const todo = value as unknown as TodoV1;
    await tx.set(`task/${key.slice('todo/'.length)}`, { title: todo.text, done: todo.done, count: todo.count } satisfies TaskV2 as unknown as JSONValue);
    await tx.del(key);
  }
}
