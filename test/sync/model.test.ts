/**
 * Model-based property test: random sequences of pushes and pulls run against the server and
 * against a small reference model of the protocol written from the spec, independently of
 * src/. More cases by hand: `FC_RUNS=20000 npx vitest run test/model.test.ts`.
 */
import * as fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PGlite } from '@electric-sql/pglite';
import postgres from 'postgres';
import { handlePull, handlePush, type JSONValue, memoryStorage, type Mutators, type Storage, TemporaryError } from '../../src/index.js';
import { postgresStorage } from '../../src/storage/postgres.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite, sqliteDriver } from '../support/sqlite-driver.js';
import { withPostgres } from '../support/stores.js';
import { applyPatch, post, pullBody, pullBodyV0, pushBody, testContext, testMutators } from '../support/helpers.js';

const RUNS = Number(process.env.FC_RUNS ?? 1500);
const CLOCK = Date.UTC(2026, 10, 21);

const GROUPS = [['c0', 'c1'], ['c2', 'c3'], ['c4']] as const;
const KEYS = ['a', 'b', 'a/b', 'ü', '🙂', '\uffff', 'n'];
const NAMES = ['put', 'del', 'increment', 'putThenFail', 'temporary', 'unknown', 'mark'] as const;

const mutators: Mutators = {
  ...testMutators,
  temporary: async (tx) => {
    await tx.set('temporary', 'must never be written');
    throw new TemporaryError('later');
  },
  /** Writes a marker naming its own mutation, to check "effects present iff processed". */
  mark: async (tx) => {
    await tx.set(`m/${tx.clientID}/${tx.mutationID}`, true);
  },
};

type Step =
  | {
      kind: 'push';
      group: number;
      mutations: Array<{ slot: number; foreign: boolean; offset: number; name: (typeof NAMES)[number]; key: string; value: JSONValue; delta: number }>;
    }
  | { kind: 'pull'; group: number; cookiePick: number | null }
  | { kind: 'pullV0'; group: number; slot: number; cookiePick: number | null };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('push' as const),
      group: fc.nat({ max: GROUPS.length - 1 }),
      mutations: fc.array(
        fc.record({
          slot: fc.nat({ max: 1 }),
          // Rarely a client of the next group: a push must be refused whole when it names one.
          foreign: fc.integer({ min: 0, max: 15 }).map((n) => n === 0),
          // Mostly the next id; sometimes a duplicate (the client re-sends) or a gap.
          offset: fc.constantFrom<number>(0, 0, 0, 0, 0, -1, -3, 1, 2),
          name: fc.constantFrom(...NAMES, 'put', 'put', 'increment'),
          key: fc.constantFrom(...KEYS),
          value: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JSONValue>,
          delta: fc.integer({ min: -5, max: 5 }),
        }),
        { maxLength: 6 },
      ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('pull' as const), group: fc.nat({ max: GROUPS.length - 1 }), cookiePick: fc.option(fc.nat(), { freq: 4 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('pullV0' as const),
      group: fc.nat({ max: GROUPS.length - 1 }),
      slot: fc.nat({ max: 1 }),
      cookiePick: fc.option(fc.nat(), { freq: 4 }),
    }),
  },
);

// size 'max': lengths spread up to maxLength; fast-check's default keeps most under ten steps.
const sequences = fc.array(stepArb, { minLength: 1, maxLength: 25, size: 'max' });

/** The reference model: the protocol's state as the spec describes it, with its history. */
class Model {
  data = new Map<string, JSONValue>();
  clients = new Map<string, { group: number; lmid: number }>();
  version = 0;
  /** Client records and data as of each version. */
  history: Array<{ data: Map<string, JSONValue>; clients: Map<string, { group: number; lmid: number }> }> = [this.#snapshot()];

  /**
   * Applies a push; returns the status the server must answer with, or its 200 error. In one
   * transaction a refused push changes nothing; `perMutation`, each mutation commits on its own.
   */
  push(
    group: number,
    mutations: Array<{ clientID: string; id: number; name: string; args: { key: string; value: JSONValue; delta: number } }>,
    perMutation: boolean,
  ): number | 'ClientStateNotFound' {
    let data = new Map(this.data);
    let clients = new Map([...this.clients].map(([id, c]) => [id, { ...c }]));
    let changed = false;
    const commit = () => {
      this.data = data;
      this.clients = clients;
      if (changed) {
        this.version++;
        this.history.push(this.#snapshot());
      }
      data = new Map(data);
      clients = new Map([...clients].map(([id, c]) => [id, { ...c }]));
      changed = false;
    };
    let status = 200;
    for (const m of mutations) {
      let client = clients.get(m.clientID);
      if (client === undefined) {
        client = { group, lmid: 0 };
        clients.set(m.clientID, client);
        changed = true;
      } else if (client.group !== group) {
        return 400; // refused, with what is uncommitted
      }
      // A gap: the client saw acknowledged what the store does not have (an unknown client past 1
      // too). Refused, with what is uncommitted.
      if (m.id > client.lmid + 1) return 'ClientStateNotFound';
      if (m.id === client.lmid + 1) {
        const { key, value, delta } = m.args;
        if (m.name === 'temporary') {
          status = 503;
          break;
        }
        if (m.name === 'put') data.set(key, value);
        if (m.name === 'del') data.delete(key);
        if (m.name === 'increment') {
          try {
            data.set(key, ((data.get(key) ?? 0) as number) + delta);
          } catch {
            // As in the mutator: some values cannot be added to ({"toString": ""} throws), and the
            // mutation then fails, a permanent error that writes nothing but still counts.
          }
        }
        if (m.name === 'mark') data.set(`m/${m.clientID}/${m.id}`, true);
        client.lmid = m.id;
        changed = true;
      }
      if (perMutation) commit();
    }
    commit();
    return status;
  }

  #snapshot() {
    return { data: new Map(this.data), clients: new Map([...this.clients].map(([id, c]) => [id, { ...c }])) };
  }
}

async function run(steps: Step[], perMutation = false, storage: Storage = memoryStorage()): Promise<void> {
  const ctx = testContext({ storage, mutators, transactionPerMutation: perMutation });
  const model = new Model();
  /** Cookies the server has issued, with the model version each stands for. */
  const cookies: Array<{ cookie: JSONValue; version: number }> = [];
  const pickCookie = (pick: number | null) => (pick === null || cookies.length === 0 ? { cookie: null, version: -1 } : cookies[pick % cookies.length]!);
  const next = new Map<string, number>(); // what each client would send next, as its pending queue
  // Orders are versions plus a base, creation time x 1000; a frozen clock makes the base known.
  vi.setSystemTime(CLOCK);
  const versionOf = (cookie: { order: number }) => (cookie.order === 0 ? 0 : cookie.order - CLOCK * 1000);

  for (const step of steps) {
    if (step.kind === 'push') {
      const batch = step.mutations.map((m) => {
        const clientID =
          GROUPS[(step.group + (m.foreign ? 1 : 0)) % GROUPS.length]![m.slot % GROUPS[(step.group + (m.foreign ? 1 : 0)) % GROUPS.length]!.length]!;
        const base = next.get(clientID) ?? (model.clients.get(clientID)?.lmid ?? 0) + 1;
        const id = Math.max(0, base + m.offset);
        next.set(clientID, id + 1);
        const name = m.name === 'unknown' ? 'noSuchMutator' : m.name;
        // The model sees what the wire carries: JSON has no -0, for one.
        const value = JSON.parse(JSON.stringify(m.value)) as JSONValue;
        return { clientID, id, name, args: { key: m.key, value, delta: m.delta }, timestamp: 1 };
      });
      next.clear();
      const expected = model.push(step.group, batch, perMutation);
      const response = await handlePush(post('/push', pushBody(`g${step.group}`, batch)), ctx);
      const text = await response.text();
      if (expected === 'ClientStateNotFound') expect([response.status, JSON.parse(text)]).toEqual([200, { error: expected }]);
      else expect(response.status, text).toBe(expected);

      // The cookie grows exactly when something changed (the model bumps only then).
      const latest = await handlePull(post('/pull', pullBody('observer', null)), ctx).then((r) => r.json());
      expect(versionOf(latest.cookie)).toBe(model.version);
      cookies.push({ cookie: latest.cookie, version: model.version });
      continue;
    }

    const { cookie, version: since } = pickCookie(step.cookiePick);
    const viewAtCookie = since < 0 ? new Map<string, JSONValue>() : model.history[since]!.data;
    if (step.kind === 'pull') {
      const body = await handlePull(post('/pull', pullBody(`g${step.group}`, cookie)), ctx).then((r) => r.json());
      // Applying the patch to the view the client had at its cookie gives the server's view.
      expect(applyPatch(viewAtCookie, body.patch)).toEqual(model.data);
      expect(versionOf(body.cookie)).toBe(model.version);
      // lastMutationIDChanges: this group's clients whose record changed since the cookie.
      const before = since < 0 ? new Map() : model.history[since]!.clients;
      const expectedChanges: Record<string, number> = {};
      for (const [clientID, { group, lmid }] of model.clients) {
        if (group === step.group && before.get(clientID)?.lmid !== lmid) expectedChanges[clientID] = lmid;
        // lastMutationID never decreases.
        expect(lmid).toBeGreaterThanOrEqual(before.get(clientID)?.lmid ?? 0);
      }
      expect(body.lastMutationIDChanges).toEqual(expectedChanges);
      cookies.push({ cookie: body.cookie, version: model.version });
    } else {
      const clientID = GROUPS[step.group]![step.slot % GROUPS[step.group]!.length]!;
      const known = model.clients.get(clientID);
      const body = await handlePull(post('/pull', pullBodyV0(clientID, cookie, known?.lmid ?? 0)), ctx).then((r) => r.json());
      expect(applyPatch(viewAtCookie, body.patch)).toEqual(model.data);
      expect(body.lastMutationID).toBe(known?.lmid ?? 0);
    }

    // Mutation N's effects are present exactly when its client's lastMutationID >= N.
    for (const key of model.data.keys()) {
      const marker = /^m\/(c\d)\/(\d+)$/.exec(key);
      if (marker) expect(model.clients.get(marker[1]!)!.lmid).toBeGreaterThanOrEqual(Number(marker[2]));
    }
  }
  // No mutator error other than the intended ones reached onError (and increment's own, of a
  // value that cannot be added to).
  for (const error of ctx.errors) expect((error as Error).message).toMatch(/permanent failure|No mutator|later|Cannot convert object to primitive value/);
}

describe('model-based: random pushes and pulls agree with the reference model', () => {
  beforeAll(() => vi.useFakeTimers({ toFake: ['Date'] }));
  afterAll(() => vi.useRealTimers());

  it('applying any pull patch to the view at its cookie yields the server view; lastMutationIDs never decrease; the cookie grows iff something changed', async () => {
    await fc.assert(
      fc.asyncProperty(sequences, (steps) => run(steps)),
      { numRuns: RUNS },
    );
  });

  it('the same holds with a storage transaction per mutation, one version per mutation that changed something', async () => {
    await fc.assert(
      fc.asyncProperty(sequences, (steps) => run(steps, true)),
      { numRuns: Math.ceil(RUNS / 3) },
    );
  });

  it('the model check can fail: a server that skipped the temporary-error rule would be caught', async () => {
    // Guards against a vacuous property: one hand-written sequence that exercises push rule 7 (a temporary error).
    await run([
      {
        kind: 'push',
        group: 0,
        mutations: [
          { slot: 0, foreign: false, offset: 0, name: 'put', key: 'a', value: 1, delta: 0 },
          { slot: 0, foreign: false, offset: 0, name: 'temporary', key: 'a', value: 2, delta: 0 },
        ],
      },
      { kind: 'pull', group: 0, cookiePick: null },
    ]);
  });
});

describe('model-based, on the durable stores: the same properties, fewer cases', () => {
  const url = process.env.DATABASE_URL;
  const server = url === undefined ? undefined : postgres(url, { onnotice: () => {}, max: 4 });
  let lite: PGlite | undefined;
  const schemas: string[] = [];
  const postgresStore = () => {
    const schema = `model_${process.pid}_${schemas.length}`;
    schemas.push(schema);
    return postgresStorage(server ?? (lite ??= new PGlite()), { schema });
  };
  beforeAll(() => vi.useFakeTimers({ toFake: ['Date'] }));
  afterAll(async () => {
    vi.useRealTimers();
    if (server) {
      for (const schema of schemas) await server.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await server.end();
    }
    await lite?.close();
  }, 60_000);

  it(`sqliteStorage (${sqliteDriver})`, async () => {
    await fc.assert(
      fc.asyncProperty(sequences, fc.boolean(), (steps, perMutation) => run(steps, perMutation, sqliteStorage(openSQLite()))),
      { numRuns: Math.ceil(RUNS / 5) },
    );
  });

  it.skipIf(!withPostgres)(`postgresStorage (${server ? 'a real server' : 'PGlite'})`, async () => {
    await fc.assert(
      fc.asyncProperty(sequences, fc.boolean(), (steps, perMutation) => run(steps, perMutation, postgresStore())),
      { numRuns: Math.ceil(RUNS / 5) },
    );
  });
});
