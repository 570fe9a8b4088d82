/**
 * The TodoMVC mutators, one source for both sides: the browser runs them optimistically, the
 * server runs them again for real (wrapped in schemas by `server-mutators.ts`).
 */
import type { ReadTransaction, WriteTransaction } from 'replicache';

/** A todo, stored at `todo/<id>`. */
export type Todo = { id: string; text: string; completed: boolean; sort: number };

/** Every todo key starts with this. */
export const TODO_PREFIX = 'todo/';

export const mutators = {
  createTodo: async (tx: WriteTransaction, { id, text, sort }: { id: string; text: string; sort: number }) => {
    await tx.set(TODO_PREFIX + id, { id, text, completed: false, sort });
  },
  updateTodo: async (tx: WriteTransaction, { id, text, completed }: { id: string; text?: string; completed?: boolean }) => {
    const todo = await tx.get<Todo>(TODO_PREFIX + id);
    // Another client may have deleted it before this mutation reached the server.
    if (todo === undefined) return;
    await tx.set(TODO_PREFIX + id, { ...todo, text: text ?? todo.text, completed: completed ?? todo.completed });
  },
  deleteTodos: async (tx: WriteTransaction, { ids }: { ids: string[] }) => {
    for (const id of ids) await tx.del(TODO_PREFIX + id);
  },
  setAllCompleted: async (tx: WriteTransaction, { completed }: { completed: boolean }) => {
    for (const todo of await listTodos(tx)) {
      if (todo.completed !== completed) await tx.set(TODO_PREFIX + todo.id, { ...todo, completed });
    }
  },
};

/** All todos, oldest first (ties, from clocks that agree to the millisecond, by id). */
export async function listTodos(tx: ReadTransaction): Promise<Todo[]> {
  const todos: Todo[] = await tx.scan<Todo>({ prefix: TODO_PREFIX }).toArray();
  return todos.sort((a, b) => a.sort - b.sort || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
