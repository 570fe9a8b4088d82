/**
 * Model-based property test of housekeeping: random pushes, pulls, forks, the passing of time
 * and collections, with a retention of seconds. Whatever the sequence, a client that pulls either
 * ends with exactly the server's view or is told ClientStateNotFound (and starts a new group,
 * forking its old view and cookie, as the real client does): never a view with an entry the
 * server deleted, whose tombstone may be gone. And no mutation is ever applied twice, however
 * long after its group expired its client sends it again.
 */
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  handlePull,
  handlePush,
  type JSONValue,
  memoryStorage,
  type Mutators,
  type Storage,
  type SyncContext,
  type WriteTransaction,
  createContext,
} from '../../src/index.js';
import { collectGarbage } from '../../src/ops.js';
import { sqliteStorage } from '../../src/storage/sqlite.js';
import { openSQLite } from '../support/sqlite-driver.js';
import { applyPatch, mutation, post, pullBody, pushBody, testMutators } from '../support/helpers.js';

const RUNS = Number(process.env.FC_RUNS ?? 1500);
const KEYS = ['a', 'b', 'c', 'd'];
const CLIENTS = 3;

type Step =
  | { kind: 'push'; client: number; ops: Array<{ del: boolean; key: string; value: number }> }
  | { kind: 'pull'; client: number }
  | { kind: 'fork'; client: number; from: number }
  | { kind: 'tick'; ms: number }
  | { kind: 'collect' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('push' as const),
      client: fc.nat({ max: CLIENTS - 1 }),
      ops: fc.array(fc.record({ del: fc.boolean(), key: fc.constantFrom(...KEYS), value: fc.nat({ max: 9 }) }), { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('pull' as const), client: fc.nat({ max: CLIENTS - 1 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fork' as const), client: fc.nat({ max: CLIENTS - 1 }), from: fc.nat({ max: CLIENTS - 1 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 15_000 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'collect' as const }) },
);

// size 'max': lengths spread up to maxLength; fast-check's default keeps most under ten steps.
const sequences = fc.array(stepArb, { minLength: 1, maxLength: 40, size: 'max' });

/** A client as the real one keeps it: its group, its view at its cookie, its next mutation id. */
interface Client {
  group: string;
  clientID: string;
  cookie: JSONValue;
  view: Map<string, JSONValue>;
  nextID: number;
  /** Mutations pushed and not yet confirmed by a pull (the client re-sends them). */
  pending: Array<ReturnType<typeof mutation>>;
}

async function run(steps: Step[], storage: Storage): Promise<void> {
  const clock = { now: 1_800_000_000_000 };
  const ctx: SyncContext = createContext({ storage, mutators: counted, retention: { clientGroupsMs: 10_000, tombstonesMs: 10_000 }, clock: () => clock.now });
  let groups = 0;
  const fresh = (from?: Client): Client => ({
    group: `g${groups}`,
    clientID: `c${groups++}`,
    cookie: from?.cookie ?? null,
    view: new Map(from?.view ?? []),
    nextID: 1,
    pending: [],
  });
  const clients = Array.from({ length: CLIENTS }, () => fresh());
  let observer = 0;
  const serverView = async () => {
    const body = await (await handlePull(post('/pull', pullBody(`observer${observer++}`, null)), ctx)).json();
    return applyPatch(new Map(), body.patch);
  };

  for (const step of steps) {
    if (step.kind === 'tick') clock.now += step.ms;
    else if (step.kind === 'collect') await collectGarbage(ctx);
    else if (step.kind === 'fork') clients[step.client] = fresh(clients[step.from]);
    else if (step.kind === 'push') {
      const client = clients[step.client]!;
      for (const op of step.ops) {
        client.pending.push(mutation(client.clientID, client.nextID++, op.del ? 'del' : 'put', op.del ? { key: op.key } : { key: op.key, value: op.value }));
      }
      const body = await (await handlePush(post('/push', pushBody(client.group, client.pending)), ctx)).json();
      for (const [key, times] of await serverView()) if (key.startsWith(APPLIED)) expect([key, times]).toEqual([key, 1]);
      // Told its state is gone: it starts a new group from what it had (its pending mutations
      // are lost with the old group, as the real client drops them).
      if ('error' in body) {
        expect(body).toEqual({ error: 'ClientStateNotFound' });
        clients[step.client] = fresh(client);
      }
    } else {
      const client = clients[step.client]!;
      const body = await (await handlePull(post('/pull', pullBody(client.group, client.cookie)), ctx)).json();
      if ('error' in body) {
        expect(body).toEqual({ error: 'ClientStateNotFound' });
        clients[step.client] = fresh(client);
        continue;
      }
      client.view = applyPatch(client.view, body.patch);
      client.cookie = body.cookie;
      const confirmed = body.lastMutationIDChanges[client.clientID] as number | undefined;
      if (confirmed !== undefined) client.pending = client.pending.filter((m) => m.id > confirmed);
      // Converged: exactly the server's view, nothing it deleted.
      expect(client.view).toEqual(await serverView());
    }
  }
}

/** Where the mutators count how often each mutation ran: `applied/<clientID>/<id>`. */
const APPLIED = 'applied/';
const counted: Mutators = Object.fromEntries(
  Object.entries(testMutators).map(([name, mutator]) => [
    name,
    async (tx: WriteTransaction, args: JSONValue) => {
      const key = `${APPLIED}${tx.clientID}/${tx.mutationID}`;
      await tx.set(key, (((await tx.get(key)) as number | undefined) ?? 0) + 1);
      return mutator(tx, args);
    },
  ]),
);

describe('model-based housekeeping: time passes, garbage is collected', () => {
  it('every pull either brings the client to exactly the server view or answers ClientStateNotFound', async () => {
    await fc.assert(
      fc.asyncProperty(sequences, (steps) => run(steps, memoryStorage())),
      { numRuns: RUNS },
    );
  });

  it('the same on SQLite', async () => {
    await fc.assert(
      fc.asyncProperty(sequences, (steps) => run(steps, sqliteStorage(openSQLite()))),
      { numRuns: Math.ceil(RUNS / 5) },
    );
  });

  it('the property can fail: a mutation re-sent long after its group expired is what it catches', async () => {
    // Pushed and never confirmed, then the group expires, time passes far beyond every retention
    // with collections, and the client sends it again: it must not run a second time.
    await run(
      [
        { kind: 'push', client: 0, ops: [{ del: false, key: 'a', value: 1 }] },
        { kind: 'tick', ms: 11_000 },
        { kind: 'collect' },
        { kind: 'tick', ms: 15_000 },
        { kind: 'collect' },
        { kind: 'tick', ms: 15_000 },
        { kind: 'collect' },
        { kind: 'push', client: 0, ops: [{ del: false, key: 'b', value: 2 }] },
      ],
      memoryStorage(),
    );
  });

  it('the property can fail: a stale cookie after its tombstone went is what it catches', async () => {
    // Deleted, collected, then pulled with a cookie from before the delete: only a reset converges.
    await run(
      [
        { kind: 'push', client: 0, ops: [{ del: false, key: 'a', value: 1 }] },
        { kind: 'pull', client: 1 },
        { kind: 'push', client: 0, ops: [{ del: true, key: 'a', value: 0 }] },
        { kind: 'tick', ms: 11_000 },
        { kind: 'collect' },
        { kind: 'pull', client: 1 },
      ],
      memoryStorage(),
    );
  });
});
