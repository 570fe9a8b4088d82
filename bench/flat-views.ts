/**
 * Views of flat keys against the prefix form, same data, same run: TODOS todos (default 100k) in
 * lists of 100, a user who reads 10 lists (1,000 todos).
 * - prefix form: a todo is `list/<list>/todo/<id>`; the view returns `list/<list>` per list;
 * - flat form: a todo is `todo/<id>` (the list in its value); the view returns each of the
 *   user's todos by its key (from a list it was given: the view's own lookup is not timed here,
 *   it is the app's; see "flat + lookup").
 * - flat + lookup: the same, the view finding the todos through hand-kept entries
 *   `idx/<list>/<id>` (what an app does without them in the key);
 * - flat + index: the same, the view finding them through an index the server keeps (`indexes`).
 * Each pull is timed from `handlePull` to its whole body: up to date; after 10 changes to the
 * user's todos; after those 10 and 5,000 changes to others' todos. Rounds alternate the forms.
 * `STORES=memory,sqlite,postgres` (PostgreSQL needs DATABASE_URL). `npm run bench:flat-views`.
 */
import { cpus, loadavg } from 'node:os';
import { createContext, handlePull, handlePush, type JSONValue, type Mutators, type Storage, type SyncContext, type View } from '../src/index.js';
import { collectGarbage, median, progress, quantile } from './measure.js';
import { renderTable, type Row } from './table.js';
import { eachStore } from './each-store.js';

const TODOS = Number(process.env.TODOS ?? 100_000);
const PER_LIST = 100;
const LISTS = TODOS / PER_LIST;
const MINE = 10;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const STORES = (process.env.STORES ?? 'memory,sqlite,postgres').split(',');

const mutators: Mutators = {
  set: async (tx, { entries }: { entries: Record<string, JSONValue> }) => {
    for (const [key, value] of Object.entries(entries)) await tx.set(key, value);
  },
};

const lists = Array.from({ length: MINE }, (_, i) => Math.floor((i * LISTS) / MINE) + 3);
const todosOf = (list: number) => Array.from({ length: PER_LIST }, (_, i) => list * PER_LIST + i);
const mine = lists.flatMap(todosOf);

const FORMS = {
  prefix: { key: (id: number) => `list/${Math.floor(id / PER_LIST)}/todo/${id}`, view: (() => lists.map((list) => `list/${list}`)) satisfies View },
  flat: { key: (id: number) => `todo/${id}`, view: (() => mine.map((id) => `todo/${id}`)) satisfies View },
  'flat + lookup': {
    key: (id: number) => `todo/${id}`,
    view: (async (tx) => {
      const keys: string[] = [];
      for (const list of lists) for await (const id of tx.scan({ prefix: `idx/${list}/` }).keys()) keys.push(`todo/${id.slice(id.lastIndexOf('/') + 1)}`);
      return keys;
    }) satisfies View,
  },
  'flat + index': {
    key: (id: number) => `todo/${id}`,
    view: (async (tx) => {
      const keys: string[] = [];
      for (const list of lists) {
        for await (const [secondary, key] of tx.scan({ indexName: 'byList', start: { key: [String(list)] } }).keys()) {
          if (secondary !== String(list)) break;
          keys.push(key);
        }
      }
      return keys;
    }) satisfies View,
  },
} as const;
type Form = keyof typeof FORMS;
const indexes = { byList: { prefix: 'todo/', jsonPointer: '/list' } };
/** A todo's value: its list, and a change counter. */
const todo = (id: number, change: number) => ({ list: String(Math.floor(id / PER_LIST)), title: `todo ${id}`, change });

const request = (path: string, space: string, body: unknown) =>
  new Request(`http://bench${path}?space=${space}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'u' },
    body: JSON.stringify(body),
  });

const ids = new Map<string, number>();
async function push(ctx: SyncContext, space: string, entries: Record<string, JSONValue>): Promise<void> {
  const id = (ids.get(space) ?? 0) + 1;
  ids.set(space, id);
  const body = {
    pushVersion: 1,
    clientGroupID: 'writer',
    profileID: 'p',
    schemaVersion: '',
    mutations: [{ clientID: 'writer', id, name: 'set', args: { entries }, timestamp: 0 }],
  };
  const response = await handlePush(request('/push', space, body), ctx);
  if (response.status !== 200) throw new Error(`push: ${response.status} ${await response.text()}`);
}

async function pull(ctx: SyncContext, space: string, cookie: JSONValue): Promise<{ cookie: JSONValue; ops: number; ms: number }> {
  const start = performance.now();
  const response = await handlePull(request('/pull', space, { pullVersion: 1, clientGroupID: 'reader', cookie, profileID: 'p', schemaVersion: '' }), ctx);
  const text = await response.text();
  const ms = performance.now() - start;
  if (response.status !== 200) throw new Error(`pull: ${response.status} ${text}`);
  const parsed = JSON.parse(text) as { cookie: JSONValue; patch: unknown[] };
  return { cookie: parsed.cookie, ops: parsed.patch.length, ms };
}

async function bench(name: string, storage: Storage): Promise<Row[]> {
  ids.clear();
  const contexts = new Map<Form, SyncContext>();
  const cookies = new Map<Form, JSONValue>();
  const times = new Map<string, number[]>();
  const time = (what: string, ms: number) => times.set(what, [...(times.get(what) ?? []), ms]);
  for (const form of Object.keys(FORMS) as Form[]) {
    const { key, view } = FORMS[form];
    const ctx = createContext({
      storage,
      mutators,
      view,
      ...(form === 'flat + index' && { indexes }),
      authenticate: () => 'u',
      space: (r) => new URL(r.url).searchParams.get('space') ?? '',
    });
    contexts.set(form, ctx);
    for (let from = 0; from < TODOS; from += 5_000) {
      const entries: Record<string, JSONValue> = {};
      for (let id = from; id < from + 5_000; id++) {
        entries[key(id)] = todo(id, 0);
        if (form === 'flat + lookup') entries[`idx/${Math.floor(id / PER_LIST)}/${id}`] = id;
      }
      await push(ctx, form, entries);
    }
    const first = await pull(ctx, form, null);
    if (first.ops !== 1 + MINE * PER_LIST) throw new Error(`${form}: the first pull had ${first.ops} ops`);
    cookies.set(form, first.cookie);
    progress(`${name}: ${form} seeded`);
  }
  let changes = 0;
  for (let round = 0; round < ROUNDS; round++) {
    collectGarbage();
    for (const form of Object.keys(FORMS) as Form[]) {
      const ctx = contexts.get(form)!;
      const { key } = FORMS[form];
      const inView = new Set(mine.map(key));
      for (let i = 0; i < 20; i++) {
        const up = await pull(ctx, form, cookies.get(form)!);
        time(`${form}: up to date`, up.ms);
        await push(
          ctx,
          form,
          Object.fromEntries(
            Array.from({ length: 10 }, (_, j) => [key(mine[(changes + j * 97) % mine.length]!), todo(mine[(changes + j * 97) % mine.length]!, changes++)]),
          ),
        );
        const ten = await pull(ctx, form, up.cookie);
        if (ten.ops !== 10) throw new Error(`${form}: 10 changes gave ${ten.ops} ops`);
        time(`${form}: 10 changes in view`, ten.ms);
        cookies.set(form, ten.cookie);
      }
      // 5,000 changes to others' todos, then 10 to the user's.
      const before = cookies.get(form)!;
      for (let batch = 0; batch < 5; batch++) {
        await push(
          ctx,
          form,
          Object.fromEntries(
            Array.from({ length: 1_000 }, (_, j) => [
              key(((round * 5 + batch) * 1_000 + j * 7 + 1) % TODOS),
              todo(((round * 5 + batch) * 1_000 + j * 7 + 1) % TODOS, changes++),
            ]).filter(([k]) => !inView.has(k as string)),
          ),
        );
      }
      await push(
        ctx,
        form,
        Object.fromEntries(
          Array.from({ length: 10 }, (_, j) => [key(mine[(changes + j * 89) % mine.length]!), todo(mine[(changes + j * 89) % mine.length]!, changes++)]),
        ),
      );
      const far = await pull(ctx, form, before);
      time(`${form}: 10 in view among 5,000 elsewhere`, far.ms);
      cookies.set(form, far.cookie);
    }
    progress(`${name}: round ${round + 1} of ${ROUNDS}`);
  }
  const p = (xs: number[]) => `p50 ${median(xs).toFixed(3)} ms, p90 ${quantile(xs, 0.9).toFixed(3)} ms, n=${xs.length}`;
  const rows: Row[] = [];
  for (const what of ['up to date', '10 changes in view', '10 in view among 5,000 elsewhere']) {
    const base = times.get(`prefix: ${what}`)!;
    for (const form of ['flat', 'flat + lookup', 'flat + index'] as const) {
      const theirs = times.get(`${form}: ${what}`)!;
      rows.push({
        benchmark: `${name}: ${what}, ${form} / prefix`,
        value: median(theirs) / median(base),
        unit: 'x',
        note: `${form} ${p(theirs)}; prefix ${p(base)}`,
      });
    }
  }
  return rows;
}

const rows: Row[] = [];
progress(
  `node ${process.version}, ${cpus().length} cores, load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ')}; ${TODOS} todos, ${MINE} lists of ${PER_LIST} in view`,
);
rows.push(...(await eachStore(STORES, 'flat-views', bench)));
console.log(renderTable(rows));
