// The page's script: Replicache keeps the list in the browser and syncs it with the server;
// this file draws it and turns the form and the buttons into mutations.
import { Replicache } from 'replicache';
import { connectPokes } from 'viewsync/client';
import { listItems, mutators } from './mutators.js';

// Each action is one mutation, so the default 10 ms wait to batch pushes would only delay it.
const rep = new Replicache({ name: 'my-viewsync-app', pullURL: '/api/pull', pushURL: '/api/push', pushDelay: 0, mutators });
// The server says when anything changed, so other browsers' edits show at once.
connectPokes(rep, '/api/poke');

const form = document.querySelector('form')!;
const input = form.querySelector('input')!;
const list = document.querySelector('ul')!;

form.addEventListener('submit', (event) => {
  event.preventDefault();
  const text = input.value.trim();
  if (text !== '') void rep.mutate.addItem({ id: newID(), text, createdAt: Date.now() });
  input.value = '';
});
list.addEventListener('click', (event) => {
  const button = (event.target as HTMLElement).closest('button');
  if (button) void rep.mutate.deleteItem({ id: button.closest('li')!.dataset.id! });
});

// Every change, made here or in another browser, comes back through this one subscription.
rep.subscribe(listItems, (items) => {
  list.replaceChildren(
    ...items.map((item) => {
      const li = document.createElement('li');
      li.dataset.id = item.id;
      const remove = Object.assign(document.createElement('button'), { textContent: '×', title: 'Delete' });
      li.append(Object.assign(document.createElement('span'), { textContent: item.text }), ' ', remove);
      return li;
    }),
  );
});

/** Random enough for one list; `crypto.randomUUID` needs a secure context, which a LAN address is not. */
function newID(): string {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
}
