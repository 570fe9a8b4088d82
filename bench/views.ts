/**
 * Per-user views at scale: a space of ENTRIES entries (default 1M; `SCALE=0.1` for a tenth) in
 * documents of 100, and a user who reads 10 of them through membership entries. Measures, with the
 * view against the same pull with no view in the same run, interleaved round by round:
 * - an up-to-date pull;
 * - a pull after 10 changes in the user's documents;
 * - sharing a prefix of 10,000 entries with the user (the pull after the grant) against a full
 *   pull of a space of 10,000 entries;
 * - a push of 10 changes, which with a view also keeps the prefix index.
 * Every pull is timed from `handlePull` to its whole body. `STORES=memory,sqlite,postgres`
 * (PostgreSQL needs DATABASE_URL). `npm run bench:views`.
 */
import { cpus, loadavg } from 'node:os';
import { handlePull, handlePush, type JSONValue, type Mutators, type Storage, type SyncContext, type View, createContext } from '../src/index.js';
import { collectGarbage, median, progress, quantile, sample } from './measure.js';
import { renderTable, type Row } from './table.js';
import { eachStore } from './each-store.js';

const SCALE = Number(process.env.SCALE ?? 1);
const ENTRIES = Math.round(1_000_000 * SCALE);
const PER_DOC = 100;
const DOCS = ENTRIES / PER_DOC;
const MEMBER_OF = 10;
const GRANT = 10_000;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const STORES = (process.env.STORES ?? 'memory,sqlite,postgres').split(',');

const mutators: Mutators = {
  fill: async (tx, { prefix, from, count }: { prefix: string; from: number; count: number }) => {
    for (let i = from; i < from + count; i++) await tx.set(`${prefix}${Math.floor(i / PER_DOC)}/${i % PER_DOC}`, { n: i, title: `entry ${i}` });
  },
  set: async (tx, { entries }: { entries: Record<string, JSONValue | null> }) => {
    for (const [key, value] of Object.entries(entries)) await (value === null ? tx.del(key) : tx.set(key, value));
  },
};

const view: View = async (tx, { userID }) => {
  const prefixes = [`member/${userID}/`];
  for await (const doc of tx.scan({ prefix: `member/${userID}/` })) prefixes.push(doc as string);
  return prefixes;
};

const request = (path: string, body: unknown) =>
  new Request(`http://bench${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'u' }, body: JSON.stringify(body) });

/** The writer's last mutation id, per space (the contexts with and without the view share one). */
const pushes = new Map<string, number>();
async function push(ctx: SyncContext, name: string, args: JSONValue): Promise<void> {
  const space = ctx === small ? 'small' : '';
  const id = (pushes.get(space) ?? 0) + 1;
  pushes.set(space, id);
  const body = {
    pushVersion: 1,
    clientGroupID: 'writer',
    profileID: 'p',
    schemaVersion: '',
    mutations: [{ clientID: 'writer', id, name, args, timestamp: 0 }],
  };
  const response = await handlePush(request('/push', body), ctx);
  const text = await response.text();
  if (response.status !== 200 || text !== '{}') throw new Error(`push: ${response.status} ${text}`);
}

/** A pull from `cookie`; its cookie and patch length. */
async function pull(ctx: SyncContext, cookie: JSONValue, space = ''): Promise<{ cookie: JSONValue; ops: number }> {
  const body = { pullVersion: 1, clientGroupID: 'reader', cookie, profileID: 'p', schemaVersion: '' };
  const response = await handlePull(request(`/pull?space=${space}`, body), ctx);
  const text = await response.text();
  if (response.status !== 200) throw new Error(`pull: ${response.status} ${text}`);
  const parsed = JSON.parse(text) as { cookie: JSONValue; patch: unknown[] };
  return { cookie: parsed.cookie, ops: parsed.patch.length };
}

/** The context of the space of 10,000 entries, for the full pull. */
let small: SyncContext | undefined;

const PLAN = { warmup: 3, minIterations: 20, minMs: 300, maxIterations: 400 };

async function bench(name: string, storage: Storage): Promise<Row[]> {
  pushes.clear();
  const base: SyncContext = createContext({
    storage,
    mutators,
    authenticate: () => 'u',
    space: (r) => new URL(r.url).searchParams.get('space') ?? '',
    onError: (e) => console.error(e),
  });
  const viewed: SyncContext = createContext({ ...base.options, view });
  const started = performance.now();
  const chunk = 5_000;
  // Through the context with the view, as an app with views pushes: the prefix index is kept.
  for (let from = 0; from < ENTRIES; from += chunk) await push(viewed, 'fill', { prefix: 'doc/', from, count: Math.min(chunk, ENTRIES - from) });
  // The user's 10 documents, spread over the space.
  const docs = Array.from({ length: MEMBER_OF }, (_, i) => Math.floor((i * DOCS) / MEMBER_OF) + 7);
  await push(viewed, 'set', { entries: Object.fromEntries(docs.map((doc) => [`member/u/${doc}`, `doc/${doc}/`])) });
  // A document of 10,000 entries to share, and a space of 10,000 entries for the full pull.
  for (let from = 0; from < GRANT; from += chunk) await push(viewed, 'fill', { prefix: 'big/', from, count: chunk });
  small = createContext({ ...base.options, space: () => 'small' });
  for (let from = 0; from < GRANT; from += chunk) await push(small, 'fill', { prefix: 'doc/', from, count: chunk });
  progress(`${name}: seeded ${ENTRIES} entries in ${((performance.now() - started) / 1000).toFixed(0)} s`);

  let withView = await pull(viewed, null);
  let without = await pull(base, null);
  if (withView.ops !== 1 + MEMBER_OF * (PER_DOC + 1)) throw new Error(`the view's first pull had ${withView.ops} ops`);
  const times = { upView: [] as number[], up: [] as number[], tenView: [] as number[], ten: [] as number[], grant: [] as number[], full: [] as number[] };
  let changes = 0;
  const tenChanges = () => Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`doc/${docs[i]}/${changes++ % PER_DOC}`, { changed: changes }]));
  for (let round = 0; round < ROUNDS; round++) {
    collectGarbage();
    // Both clients up to date: the grants of the last round changed the space.
    withView = await pull(viewed, withView.cookie);
    without = await pull(base, without.cookie);
    times.upView.push(
      ...(await sample(
        PLAN,
        () => withView.cookie,
        async (cookie) => void (await pull(viewed, cookie)),
      )),
    );
    times.up.push(
      ...(await sample(
        PLAN,
        () => without.cookie,
        async (cookie) => void (await pull(base, cookie)),
      )),
    );
    // Ten changes in the user's documents, then the pull that brings them; both clients catch up.
    for (let i = 0; i < 20; i++) {
      await push(viewed, 'set', { entries: tenChanges() });
      let start = performance.now();
      const a = await pull(viewed, withView.cookie);
      times.tenView.push(performance.now() - start);
      start = performance.now();
      const b = await pull(base, without.cookie);
      times.ten.push(performance.now() - start);
      if (a.ops !== 10 || b.ops !== 10) throw new Error(`10 changes gave ${a.ops} and ${b.ops} ops`);
      withView = a;
      without = b;
    }
    // Share the prefix of 10,000 entries, pull, revoke, pull.
    for (let i = 0; i < 3; i++) {
      await push(viewed, 'set', { entries: { 'member/u/big': 'big/' } });
      let start = performance.now();
      const granted = await pull(viewed, withView.cookie);
      times.grant.push(performance.now() - start);
      if (granted.ops !== GRANT + 1) throw new Error(`the grant gave ${granted.ops} ops`);
      await push(viewed, 'set', { entries: { 'member/u/big': null } });
      withView = await pull(viewed, granted.cookie);
      start = performance.now();
      const full = await pull(small!, null, 'small');
      times.full.push(performance.now() - start);
      if (full.ops !== GRANT + 1) throw new Error(`the full pull gave ${full.ops} ops`);
    }
    progress(`${name}: round ${round + 1} of ${ROUNDS}`);
  }
  // Last, as it turns the prefix index off and on: what keeping it costs a push of 10 changes.
  const pushTimes = { view: [] as number[], none: [] as number[] };
  for (let i = 0; i < 200; i++) {
    for (const [ctx, times] of [
      [viewed, pushTimes.view],
      [base, pushTimes.none],
    ] as const) {
      const start = performance.now();
      await push(ctx, 'set', { entries: tenChanges() });
      times.push(performance.now() - start);
    }
  }
  const p = (xs: number[]) => `p50 ${median(xs).toFixed(3)} ms, p90 ${quantile(xs, 0.9).toFixed(3)} ms, n=${xs.length}`;
  const ratio = (a: number[], b: number[]) => median(a) / median(b);
  return [
    {
      benchmark: `${name}: up-to-date pull, view / none`,
      value: ratio(times.upView, times.up),
      unit: 'x',
      note: `view ${p(times.upView)}; none ${p(times.up)}`,
    },
    {
      benchmark: `${name}: pull after 10 changes, view / none`,
      value: ratio(times.tenView, times.ten),
      unit: 'x',
      note: `view ${p(times.tenView)}; none ${p(times.ten)}`,
    },
    {
      benchmark: `${name}: grant of 10k entries / full pull of 10k`,
      value: ratio(times.grant, times.full),
      unit: 'x',
      note: `grant ${p(times.grant)}; full ${p(times.full)}`,
    },
    {
      benchmark: `${name}: push of 10 changes, view / none`,
      value: ratio(pushTimes.view, pushTimes.none),
      unit: 'x',
      note: `view ${p(pushTimes.view)}; none ${p(pushTimes.none)}`,
    },
  ];
}

const rows: Row[] = [];
progress(
  `node ${process.version}, ${cpus().length} cores, load ${loadavg()
    .map((x) => x.toFixed(2))
    .join(' / ')}; ${ENTRIES} entries, ${MEMBER_OF} documents of ${PER_DOC} in view`,
);
rows.push(...(await eachStore(STORES, 'views', bench)));
console.log(renderTable(rows));
