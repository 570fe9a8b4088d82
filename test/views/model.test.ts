/**
 * Model-based property test of per-user views: random writes (data and memberships), changes of
 * the view from outside the space, lost view records, housekeeping and pulls of any user from any
 * cookie ever issued (their own, another group's, another user's), on every store. For each pull:
 * applying its patch to what the client held at its cookie gives exactly the live entries under
 * the caller's prefixes at the server, and no key outside the caller's view (now, or at its
 * cookie when the cookie is the caller's own) is named. More cases by hand:
 * `FC_RUNS=5000 npx vitest run test/views/model.test.ts`.
 */
import * as fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { PGlite } from '@electric-sql/pglite';
import pg from 'pg';
import postgres from 'postgres';
import { createContext, handlePull, type JSONValue, memoryStorage, type Storage, type View } from '../../src/index.js';
import { collectGarbage } from '../../src/ops.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite, sqliteDriver } from '../support/sqlite-driver.js';
import { withPostgres } from '../support/stores.js';
import { applyPatch, post, pullBody, pullBodyV0 } from '../support/helpers.js';
import { viewContext, write } from './app.js';

const RUNS = Number(process.env.FC_RUNS ?? 500);
const USERS = ['alice', 'bob', 'carol'] as const;
/** What a view may add from outside the space: nothing, a narrow prefix, a wide one, everything. */
const EXTRAS = [null, 'doc/1/a', 'doc/', '', 'doc/1', 'todo/a', 'todo'] as const;
const DAY = 24 * 60 * 60 * 1000;

const keyArb = fc.oneof(
  // Few keys, so that writes, deletes, grants and revokes meet the same ones often.
  { weight: 3, arbitrary: fc.constantFrom('doc/1/a', 'doc/1/b', 'doc/2/a', 'doc/1x', 'doc/1', 'doc/1-a/b') },
  // Flat keys, and keys a prefix without its `/` starts but does not cover.
  { weight: 2, arbitrary: fc.constantFrom('todo/a', 'todo/ab', 'todo/a/x', 'todo/a-b', 'todo') },
  { weight: 3, arbitrary: fc.constantFrom('member/alice/1', 'member/alice/2', 'member/bob/1', 'member/bob/2', 'member/carol/1') },
  { weight: 1, arbitrary: fc.constantFrom('other', 'doc/3/a') },
);

type Step =
  | { kind: 'write'; entries: Array<[string, number | null]>; viewless: boolean }
  | { kind: 'noise'; count: number }
  | { kind: 'pull'; user: number; group: number; v0: boolean; from: 'own' | 'any' | 'none' | 'forged'; pick: number }
  | { kind: 'extra'; user: number; extra: (typeof EXTRAS)[number] }
  | { kind: 'loseRecords' }
  | { kind: 'collect' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('write' as const),
      entries: fc.array(fc.tuple(keyArb, fc.option(fc.nat({ max: 9 }), { freq: 2 })), { minLength: 1, maxLength: 4 }),
      // Now and then pushed to a server with no view, which keeps no prefix index meanwhile.
      viewless: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    }),
  },
  // Many changes outside every document at once, so that pulls read the prefix index.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('noise' as const), count: fc.integer({ min: 30, max: 90 }) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('pull' as const),
      user: fc.nat({ max: USERS.length - 1 }),
      group: fc.nat({ max: 1 }),
      v0: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      // Mostly the client's own latest cookie, as a real client sends; sometimes any cookie ever
      // issued (a fork, another user's, an old one); sometimes none; sometimes one forged from
      // the view named in one of the user's own cookies and the order of any cookie.
      from: fc.constantFrom<Array<'own' | 'any' | 'none' | 'forged'>>('own', 'own', 'own', 'own', 'any', 'any', 'none', 'forged', 'forged'),
      pick: fc.nat(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('extra' as const), user: fc.nat({ max: USERS.length - 1 }), extra: fc.constantFrom(...EXTRAS) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'loseRecords' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'collect' as const }) },
);

/** Whether a prefix of `prefixes` covers `key`: it is `''`, the key, or the key's start up to a `/` (with or without it). */
const covers = (prefixes: readonly string[], key: string) =>
  prefixes.some((prefix) => prefix === '' || prefix === key || (key.startsWith(prefix) && (prefix.endsWith('/') || key[prefix.length] === '/')));

async function run(steps: Step[], storage: Storage, serverView?: View): Promise<void> {
  let now = Date.UTC(2026, 10, 23);
  const extras = new Map<string, string | null>();
  /** The model's view, from the model's data: memberships, the outside extra, the group. */
  const prefixesOf = (data: Map<string, JSONValue>, user: string, group: string): string[] => {
    const prefixes = [`member/${user}/`];
    // A document's entries under `doc/<id>/`, and a flat key of it: `todo/a` for document 1, `todo/ab` for 2.
    for (const [key, value] of data)
      if (key.startsWith(`member/${user}/`)) prefixes.push(`doc/${String(value)}/`, String(value) === '1' ? 'todo/a' : 'todo/ab');
    const extra = extras.get(user);
    if (extra != null) prefixes.push(extra);
    // The second group of each user never sees document 2: views may differ between groups.
    return group.endsWith('-1') ? prefixes.filter((prefix) => prefix !== 'doc/2/') : prefixes;
  };
  // The server's view is the same function, written against the transaction.
  const view: View = async (tx, { userID, clientGroupID }) => {
    const data = new Map<string, JSONValue>();
    for await (const [key, value] of tx.scan({ prefix: `member/${userID}/` }).entries()) data.set(key, value);
    return prefixesOf(data, userID!, clientGroupID);
  };
  const ctx = viewContext({ storage, view: serverView ?? view, clock: () => now, retention: { clientGroupsMs: DAY, tombstonesMs: DAY } });

  const model = new Map<string, JSONValue>();
  /** Every cookie issued: to whom, for which prefixes, and what its client then held. */
  const issued: Array<{ cookie: JSONValue; user: string; group: string; v0: boolean; prefixes: string[]; held: Map<string, JSONValue> }> = [];

  for (const step of steps) {
    if (step.kind === 'write' || step.kind === 'noise') {
      const entries =
        step.kind === 'noise'
          ? Object.fromEntries(Array.from({ length: step.count }, (_, i) => [i % 2 === 0 ? `noise/${i % 40}/${i}` : `noise/${i}`, step.count]))
          : Object.fromEntries(step.entries.map(([key, value]) => [key, value === null ? undefined : key.startsWith('member/') ? key.slice(-1) : value]));
      await write(step.kind === 'write' && step.viewless ? createContext({ ...ctx.options, view: undefined }) : ctx, 'admin', entries);
      for (const [key, value] of Object.entries(entries)) {
        if (value === undefined) model.delete(key);
        else model.set(key, value);
      }
    } else if (step.kind === 'extra') {
      extras.set(USERS[step.user]!, step.extra);
    } else if (step.kind === 'loseRecords') {
      await storage.transaction(
        async (tx) => {
          for (const [row] of await tx.scan({ prefix: 'w/' })) await tx.del(row);
        },
        { readOnly: false },
      );
    } else if (step.kind === 'collect') {
      now += 2 * DAY;
      await collectGarbage(ctx);
    } else {
      const user = USERS[step.user]!;
      const group = `${user}-${step.group}`;
      const own = issued.filter((cookie) => cookie.group === group && cookie.v0 === step.v0).at(-1);
      const from =
        step.from === 'own' ? own : step.from === 'none' || step.from === 'forged' || issued.length === 0 ? undefined : issued[step.pick % issued.length]!;
      const forged = step.from === 'forged' ? forge(issued, user, step.pick) : undefined;
      if (step.from === 'forged' && forged === undefined) continue;
      const cookie = forged ?? from?.cookie ?? null;
      const body = step.v0 ? pullBodyV0(group, cookie, 0) : pullBody(group, cookie);
      const response = await handlePull(post('/pull', body), createContext({ ...ctx.options, authenticate: () => user }));
      const text = await response.text();
      expect(response.status, text).toBe(200);
      const result = JSON.parse(text) as { cookie: JSONValue; patch: Array<{ op: string; key?: string }> };
      expect(result).not.toHaveProperty('error');
      const prefixes = prefixesOf(model, user, group);
      const expected = new Map([...model].filter(([key]) => covers(prefixes, key)));
      if (forged !== undefined) {
        // What the forger holds is anybody's guess: only what the answer names is checked, and
        // it may name nothing outside the view the caller has now.
        for (const op of result.patch) if (op.key !== undefined) expect(covers(prefixes, op.key), `forged cookie: ${op.op} ${op.key}`).toBe(true);
        continue;
      }
      const held = applyPatch(from?.held ?? new Map(), result.patch as never);
      expect(held).toEqual(expected);
      // No key the caller could not read: one under their view now, or (for their own cookie) one
      // their client held at the cookie. Not merely any key under the cookie's prefixes: a key
      // written there after the caller lost access must not be named, not even by a `del`.
      const readable = (key: string) => covers(prefixes, key) || (from?.user === user && from.held.has(key));
      for (const op of result.patch) if (op.key !== undefined) expect(readable(op.key), `${op.op} ${op.key}`).toBe(true);
      // Another user's cookie: a reset (unless it held nothing, as at an empty space's cookie).
      if (from !== undefined && from.user !== user && from.held.size > 0) expect(result.patch[0]).toEqual({ op: 'clear' });
      issued.push({ cookie: result.cookie, user, group, v0: step.v0, prefixes, held });
    }
  }
  expect(ctx.errors).toEqual([]);
}

/**
 * A cookie `user` was never issued: a view named in one of their own cookies, preferably not
 * their latest, with the order (and epoch) of one of the latest cookies issued, which `pick`
 * chooses; undefined when no such pair differs from every cookie issued.
 */
function forge(issued: ReadonlyArray<{ cookie: JSONValue; user: string }>, user: string, pick: number): JSONValue | undefined {
  const views = [...new Set(issued.filter((cookie) => cookie.user === user).map(({ cookie }) => (cookie as { view?: string }).view))].filter(
    (view) => view !== undefined,
  );
  if (views.length === 0) return undefined;
  const { order, epoch } = issued[Math.max(0, issued.length - 1 - (pick % 3))]!.cookie as { order: number; epoch?: string };
  const cookie = { order, ...(epoch !== undefined && { epoch }), view: views[Math.floor(pick / 3) % Math.max(1, views.length - 1)]! };
  const same = (other: JSONValue) => {
    const { order: o, epoch: e, view: w } = other as { order: number; epoch?: string; view?: string };
    return o === cookie.order && e === cookie.epoch && w === cookie.view;
  };
  return issued.some(({ cookie: other }) => same(other)) ? undefined : cookie;
}

// size 'max': lengths spread up to maxLength; the default keeps most sequences under ten steps.
const steps = fc.array(stepArb, { minLength: 1, maxLength: 40, size: 'max' });

describe('model-based: per-user views', () => {
  it('on the memory store: every patch brings its client exactly to its view, and names nothing outside it', async () => {
    await fc.assert(
      fc.asyncProperty(steps, (s) => run(s, memoryStorage())),
      { numRuns: RUNS },
    );
  });

  it('the property can fail: a server whose view is the whole space is caught', async () => {
    const sequence: Step[] = [
      { kind: 'write', entries: [['doc/1/a', 1]], viewless: false },
      { kind: 'pull', user: 0, group: 0, v0: false, from: 'none', pick: 0 },
    ];
    await run(sequence, memoryStorage());
    await expect(run(sequence, memoryStorage(), () => [''])).rejects.toThrow();
  });

  it(`sqliteStorage (${sqliteDriver})`, async () => {
    await fc.assert(
      fc.asyncProperty(steps, (s) => run(s, sqliteStorage(openSQLite()))),
      { numRuns: Math.ceil(RUNS / 5) },
    );
  });

  const url = process.env.DATABASE_URL;
  const server = url === undefined ? undefined : postgres(url, { onnotice: () => {}, max: 4 });
  let lite: PGlite | undefined;
  const schemas: string[] = [];
  afterAll(async () => {
    if (server) {
      for (const schema of schemas) await server.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await server.end();
    }
    await lite?.close();
  }, 60_000);

  it.skipIf(!withPostgres)(`postgresStorage (${server ? 'a real server' : 'PGlite'})`, async () => {
    const store = () => {
      const schema = `views_model_${process.pid}_${schemas.length}`;
      schemas.push(schema);
      return postgresStorage(server ?? (lite ??= new PGlite()), { schema });
    };
    await fc.assert(
      fc.asyncProperty(steps, (s) => run(s, store())),
      { numRuns: Math.ceil(RUNS / 10) },
    );
  });

  it.runIf(url !== undefined)('postgresStorage (a pg Pool, a real server)', async () => {
    const pool = new pg.Pool({ connectionString: url, max: 4 });
    try {
      const store = () => {
        const schema = `views_model_${process.pid}_${schemas.length}`;
        schemas.push(schema);
        return postgresStorage(pool, { schema });
      };
      await fc.assert(
        fc.asyncProperty(steps, (s) => run(s, store())),
        { numRuns: Math.ceil(RUNS / 10) },
      );
    } finally {
      await pool.end();
    }
  });
});
