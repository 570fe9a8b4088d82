/**
 * The TodoMVC page: Replicache holds the todos, this file turns them into the standard TodoMVC
 * markup (index.html) and turns clicks and keys into mutations. Every change, local or from
 * another client, comes back through the one subscription and one `render`.
 */
import { Replicache, TEST_LICENSE_KEY } from 'replicache';
import { connectPokes } from 'viewsync/client';
import { listTodos, mutators, type Todo } from './mutators.js';

// Each user action is one mutation, so the default 10 ms wait to batch pushes would only delay.
const rep = new Replicache({ name: 'todomvc', licenseKey: TEST_LICENSE_KEY, pushURL: '/api/push', pullURL: '/api/pull', pushDelay: 0, mutators });
// The server says when anything changed, so other clients' edits show at once, not at the next
// pull interval.
connectPokes(rep, '/api/poke');

const $ = <T extends HTMLElement>(selector: string) => document.querySelector<T>(selector)!;
const newTodo = $<HTMLInputElement>('.new-todo');
const main = $('.main');
const toggleAll = $<HTMLInputElement>('.toggle-all');
const list = $<HTMLUListElement>('.todo-list');
const footer = $('.footer');
const count = $('.todo-count');
const clearCompleted = $('.clear-completed');

let todos: Todo[] = [];
rep.subscribe(listTodos, (result) => ((todos = result), render()));
window.addEventListener('hashchange', render);

newTodo.addEventListener('keydown', (event) => {
  const text = newTodo.value.trim();
  if (event.key !== 'Enter' || event.isComposing || text === '') return;
  void rep.mutate.createTodo({ id: newID(), text, sort: Date.now() });
  newTodo.value = '';
});
toggleAll.addEventListener('change', () => void rep.mutate.setAllCompleted({ completed: toggleAll.checked }));
clearCompleted.addEventListener('click', () => void rep.mutate.deleteTodos({ ids: todos.filter((todo) => todo.completed).map((todo) => todo.id) }));
list.addEventListener('change', (event) => {
  const toggle = event.target as HTMLInputElement;
  if (toggle.matches('.toggle')) void rep.mutate.updateTodo({ id: idOf(toggle), completed: toggle.checked });
});
list.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  if (target.matches('.destroy')) void rep.mutate.deleteTodos({ ids: [idOf(target)] });
});
list.addEventListener('dblclick', (event) => {
  const target = event.target as HTMLElement;
  if (target.matches('.view label')) edit(target.closest('li')!);
});

function render(): void {
  const filter = location.hash.replace(/^#\/?/, '');
  const shown = todos.filter((todo) => (filter === 'active' ? !todo.completed : filter === 'completed' ? todo.completed : true));
  // Items are kept by id, not rebuilt, so an item being edited keeps its input and focus.
  const stale = new Map([...list.children].map((li) => [(li as HTMLLIElement).dataset.id, li as HTMLLIElement]));
  shown.forEach((todo, index) => {
    const li = stale.get(todo.id) ?? newItem(todo.id);
    stale.delete(todo.id);
    li.classList.toggle('completed', todo.completed);
    li.querySelector<HTMLInputElement>('.toggle')!.checked = todo.completed;
    const label = li.querySelector('label')!;
    if (label.textContent !== todo.text) label.textContent = todo.text;
    if (list.children[index] !== li) list.insertBefore(li, list.children[index] ?? null);
  });
  for (const li of stale.values()) li.remove();

  const left = todos.filter((todo) => !todo.completed).length;
  main.hidden = footer.hidden = todos.length === 0;
  toggleAll.checked = todos.length > 0 && left === 0;
  const strong = document.createElement('strong');
  strong.textContent = String(left);
  count.replaceChildren(strong, left === 1 ? ' item left' : ' items left');
  clearCompleted.hidden = left === todos.length;
  for (const link of document.querySelectorAll('.filters a')) link.classList.toggle('selected', link.getAttribute('href') === `#/${filter}`);
}

function newItem(id: string): HTMLLIElement {
  const li = document.createElement('li');
  li.dataset.id = id;
  li.innerHTML = '<div class="view"><input class="toggle" type="checkbox"><label></label><button class="destroy"></button></div>';
  return li;
}

/** Edits an item in place: Enter or leaving the field saves (empty text deletes), Escape cancels. */
function edit(li: HTMLLIElement): void {
  const id = li.dataset.id!;
  const before = li.querySelector('label')!.textContent ?? '';
  const input = Object.assign(document.createElement('input'), { className: 'edit', value: before, maxLength: 1000 });
  let finished = false;
  const finish = (save: boolean) => {
    // Whichever comes first wins: removing the input blurs it, which must not save again.
    if (finished) return;
    finished = true;
    input.remove();
    li.classList.remove('editing');
    const text = input.value.trim();
    if (!save || text === before) return;
    void (text === '' ? rep.mutate.deleteTodos({ ids: [id] }) : rep.mutate.updateTodo({ id, text }));
  };
  input.addEventListener('blur', () => finish(true));
  input.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && !event.isComposing) finish(true);
    else if (event.key === 'Escape') finish(false);
  });
  li.classList.add('editing');
  li.append(input);
  input.focus();
}

function idOf(element: Element): string {
  return element.closest('li')!.dataset.id!;
}

/** Random enough for one user's todos; `crypto.randomUUID` needs a secure context (not a LAN address). */
function newID(): string {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
}
